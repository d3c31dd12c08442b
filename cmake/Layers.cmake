# One static library per source folder, linked only downward.
#
# The folders form a chain (bottom first):
#
#   support < ir < codegen < grammar < frontend < passes < runtime < include < tools
#
# and a folder may include headers only of itself and of the folders below it.
# The build enforces this twice:
#
#  * link: folder `f` becomes library `dt_f`, which links only the library of
#    the folder just below it (so, transitively, all below and none above);
#  * compile: the sources of `dt_f` do not see the source tree. Their one
#    include folder is build/layers/f/, which holds a link to every header of
#    `f` and the folders below it and nothing else, so `#include "passes/X.h"`
#    in ir/ is "No such file" at compile time.
#
# Edges that still run up the chain are listed, one a line with a reason, in
# cmake/back-edges.txt. Each one opens exactly that header to that folder (and
# links the two libraries both ways). The list only shrinks: the ctest
# `layering` (tests/layering/) fails on an upward include that is not listed,
# and on a listed edge that no longer exists.
#
# Everything above the chain (tools, tests, benchmarks) links `dtensor`, which
# sees the whole tree.

set(DT_LAYERS support ir codegen grammar frontend passes runtime)
# The folders the `layering` check scans, bottom first (include = include/dtensor,
# the public embedding headers).
set(DT_LAYER_ORDER ${DT_LAYERS})
if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/dtensor)
  list(APPEND DT_LAYER_ORDER include)
endif()
list(APPEND DT_LAYER_ORDER tools)
set(DT_BACK_EDGES_FILE ${CMAKE_CURRENT_SOURCE_DIR}/cmake/back-edges.txt)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${DT_BACK_EDGES_FILE})

# Reads cmake/back-edges.txt: `<including file> <included header> -- <reason>`.
# Sets DT_BACK_EDGE_FROM / DT_BACK_EDGE_TO (parallel lists).
function(dt_read_back_edges)
  set(from)
  set(to)
  file(STRINGS ${DT_BACK_EDGES_FILE} lines)
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line STREQUAL "" OR line MATCHES "^#")
      continue()
    endif()
    if(NOT line MATCHES "^([^ ]+) +([^ ]+) +-- +.+$")
      message(FATAL_ERROR "cmake/back-edges.txt: `${line}` is not `<file> <header> -- <reason>`")
    endif()
    list(APPEND from ${CMAKE_MATCH_1})
    list(APPEND to ${CMAKE_MATCH_2})
  endforeach()
  set(DT_BACK_EDGE_FROM ${from} PARENT_SCOPE)
  set(DT_BACK_EDGE_TO ${to} PARENT_SCOPE)
endfunction()

# dt_add_layers(<extra sources of grammar>): defines dt_<folder> for every folder.
function(dt_add_layers grammar_srcs)
  dt_read_back_edges()
  set(root ${CMAKE_CURRENT_SOURCE_DIR})
  set(linkroot ${CMAKE_BINARY_DIR}/layers)
  # Only real folders and links to files live here, so removing it never
  # reaches into the source tree.
  file(REMOVE_RECURSE ${linkroot})
  set(visible) # headers (relative paths) that the current folder may include
  set(below)
  foreach(layer IN LISTS DT_LAYERS)
    file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE ${root}
         ${layer}/*.h ${layer}/*.hpp ${layer}/*.def ${layer}/*.inc)
    list(APPEND visible ${headers})
    set(open ${visible})
    list(LENGTH DT_BACK_EDGE_FROM nedges)
    set(up)
    if(nedges GREATER 0)
      math(EXPR last "${nedges} - 1")
      foreach(i RANGE ${last})
        list(GET DT_BACK_EDGE_FROM ${i} f)
        list(GET DT_BACK_EDGE_TO ${i} t)
        if(f MATCHES "^${layer}/")
          list(APPEND open ${t})
          string(REGEX REPLACE "/.*" "" tl ${t})
          list(APPEND up ${tl})
        endif()
      endforeach()
    endif()
    list(REMOVE_DUPLICATES open)
    foreach(h IN LISTS open)
      get_filename_component(dir ${linkroot}/${layer}/${h} DIRECTORY)
      file(MAKE_DIRECTORY ${dir})
      file(CREATE_LINK ${root}/${h} ${linkroot}/${layer}/${h} SYMBOLIC)
    endforeach()
    file(MAKE_DIRECTORY ${linkroot}/${layer})

    file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${layer}/*.cpp)
    if(layer STREQUAL "grammar")
      list(APPEND srcs ${grammar_srcs})
    endif()
    add_library(dt_${layer} STATIC ${srcs})
    target_include_directories(dt_${layer} PRIVATE ${linkroot}/${layer})
    if(below)
      target_link_libraries(dt_${layer} PUBLIC dt_${below})
    endif()
    set_property(GLOBAL APPEND PROPERTY DT_LAYER_UP_${layer} ${up})
    set(below ${layer})
  endforeach()
  # A listed back edge also needs the upper library at link time; CMake
  # repeats the cycle of static libraries on the link line.
  foreach(layer IN LISTS DT_LAYERS)
    get_property(up GLOBAL PROPERTY DT_LAYER_UP_${layer})
    if(up)
      list(REMOVE_DUPLICATES up)
      foreach(u IN LISTS up)
        target_link_libraries(dt_${layer} PUBLIC dt_${u})
      endforeach()
    endif()
  endforeach()
endfunction()
