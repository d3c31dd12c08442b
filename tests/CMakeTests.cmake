# Language-level tests, included by tests/CMakeLists.txt.
#   lang/<name>     one ctest per tests/lang/*.dt       (LABELS lang)
#   example/<name>  one ctest per examples/*.dt         (LABELS example)
#   fuzz/hostile    truncated and random programs never crash `dtensorc check`
#                   (LABELS fuzz)
# Each .dt file carries its expectations in comments; see tests/LangExpect.h.
# The runners start the real `dtensorc` as a child process with a timeout.

add_executable(dt_lang_runner lang_runner.cpp)
add_dependencies(dt_lang_runner dtensorc)
add_executable(dt_hostile hostile_test.cpp)
add_dependencies(dt_hostile dtensorc)

set(DT_LANG_DIR ${CMAKE_CURRENT_SOURCE_DIR}/lang)
set(DT_EXAMPLES_DIR ${CMAKE_SOURCE_DIR}/examples)

file(GLOB DT_LANG_TESTS CONFIGURE_DEPENDS ${DT_LANG_DIR}/*.dt)
foreach(f ${DT_LANG_TESTS})
  get_filename_component(name ${f} NAME_WE)
  add_test(NAME lang/${name}
           COMMAND dt_lang_runner --dtensorc $<TARGET_FILE:dtensorc> --timeout 30 ${f})
  set_tests_properties(lang/${name} PROPERTIES LABELS lang TIMEOUT 60)
endforeach()

file(GLOB DT_EXAMPLES CONFIGURE_DEPENDS ${DT_EXAMPLES_DIR}/*.dt)
foreach(f ${DT_EXAMPLES})
  get_filename_component(name ${f} NAME_WE)
  add_test(NAME example/${name}
           COMMAND dt_lang_runner --dtensorc $<TARGET_FILE:dtensorc> --timeout 30 ${f})
  set_tests_properties(example/${name} PROPERTIES LABELS example TIMEOUT 60)
endforeach()

# Deterministic (fixed seed); prints the seed of every random program it feeds.
add_test(NAME fuzz/hostile
         COMMAND dt_hostile --dtensorc $<TARGET_FILE:dtensorc> --seed 20240601 --random 300 --inner-cuts 6
                 --jobs 2 ${DT_LANG_DIR} ${DT_EXAMPLES_DIR})
# ~20 s on an idle 2-core machine; the limit leaves room for a loaded one.
set_tests_properties(fuzz/hostile PROPERTIES LABELS fuzz TIMEOUT 400)

# IR-in/IR-out pass tests (tests/passes/*.ir, LABELS pass): one step of
# dtensorc on IR text (`emit STEP -x ir FILE`), output checked by CHECK lines.
add_executable(dt_pass_runner pass_runner.cpp)
add_dependencies(dt_pass_runner dtensorc)
file(GLOB DT_PASS_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/passes/*.ir)
foreach(f ${DT_PASS_TESTS})
  get_filename_component(name ${f} NAME_WE)
  add_test(NAME pass/${name}
           COMMAND dt_pass_runner --dtensorc $<TARGET_FILE:dtensorc> --timeout 30 ${f})
  set_tests_properties(pass/${name} PROPERTIES LABELS pass TIMEOUT 60)
endforeach()

# Hostile program files: a directory, /dev/zero, an over-limit file, a missing
# one (tests/hostile/input_files.sh).
add_test(NAME hostile/input_files
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hostile/input_files.sh $<TARGET_FILE:dtensorc>)
set_tests_properties(hostile/input_files PROPERTIES LABELS fuzz TIMEOUT 120)
