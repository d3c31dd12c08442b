# libFuzzer targets, built with -DDT_FUZZ=ON and clang (CC=clang-19
# CXX=clang++-19, or `cmake --preset fuzz`; scripts/fuzz.sh). The ctests
# fuzz/parse and fuzz/compile (tests/CMakeLists.txt) run them for a bounded
# time; without DT_FUZZ the same targets link the stand-in driver
# tests/fuzz/FuzzMain.cpp instead.
#  - parse_fuzz compiles just the front-end sources it needs with
#    -fsanitize=fuzzer,address, so it builds in a minute;
#  - compile_fuzz links the whole library, which then gets libFuzzer's
#    coverage instrumentation (-fsanitize=fuzzer-no-link); build it on demand.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "DT_FUZZ needs clang: CC=clang-19 CXX=clang++-19 cmake -DDT_FUZZ=ON ...")
endif()
add_executable(parse_fuzz tests/fuzz/parse_fuzz.cpp
  grammar/Parser.cpp grammar/ASTPrinter.cpp support/Diagnostics.cpp
  grammar/Builder.cpp grammar/TokenBridge.cpp ${GRAMMAR_SRCS})
target_include_directories(parse_fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${GEN})
target_compile_options(parse_fuzz PRIVATE -fsanitize=fuzzer,address -fno-omit-frame-pointer)
target_link_options(parse_fuzz PRIVATE -fsanitize=fuzzer,address)

add_executable(tensor_file_fuzz tests/fuzz/tensor_file_fuzz.cpp support/TensorFile.cpp
  support/Checkpoint.cpp support/CheckpointIndex.cpp support/Crc32c.cpp)
target_include_directories(tensor_file_fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(tensor_file_fuzz PRIVATE -fsanitize=fuzzer,address -fno-omit-frame-pointer)
target_link_options(tensor_file_fuzz PRIVATE -fsanitize=fuzzer,address)

foreach(layer IN LISTS DT_LAYERS)
  target_compile_options(dt_${layer} PRIVATE -fsanitize=fuzzer-no-link)
endforeach()
add_executable(compile_fuzz EXCLUDE_FROM_ALL tests/fuzz/compile_fuzz.cpp)
target_include_directories(compile_fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/tests)
target_link_libraries(compile_fuzz PRIVATE dtensor)
target_compile_options(compile_fuzz PRIVATE -fsanitize=fuzzer)
target_link_options(compile_fuzz PRIVATE -fsanitize=fuzzer)
# Bison's lalr1.cc skeleton counts errors in a variable clang finds unused.
set_source_files_properties(${GEN}/grammar/parser.cpp PROPERTIES
  COMPILE_OPTIONS -Wno-unused-but-set-variable)
