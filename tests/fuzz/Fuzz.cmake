# libFuzzer targets, built with -DDT_FUZZ=ON and clang (CC=clang-19
# CXX=clang++-19). The parser target compiles just the front-end sources it
# needs with -fsanitize=fuzzer,address, so the rest of the library does not
# have to be rebuilt with sanitizers.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "DT_FUZZ needs clang: CC=clang-19 CXX=clang++-19 cmake -DDT_FUZZ=ON ...")
endif()
add_executable(parse_fuzz tests/fuzz/parse_fuzz.cpp
  grammar/Parser.cpp grammar/ASTPrinter.cpp support/Diagnostics.cpp
  grammar/Builder.cpp grammar/TokenBridge.cpp ${GRAMMAR_SRCS})
target_include_directories(parse_fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${GEN})
target_compile_options(parse_fuzz PRIVATE -fsanitize=fuzzer,address -fno-omit-frame-pointer)
target_link_options(parse_fuzz PRIVATE -fsanitize=fuzzer,address)
# Bison's lalr1.cc skeleton counts errors in a variable clang finds unused.
set_source_files_properties(${GEN}/grammar/parser.cpp PROPERTIES
  COMPILE_OPTIONS -Wno-unused-but-set-variable)
