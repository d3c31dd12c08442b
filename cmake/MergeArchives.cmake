# Merges static libraries into one archive (run at install time):
#   cmake -DAR=ar -DLIST=<file with one archive a line> -DOUT=<archive> -P MergeArchives.cmake
# One archive holds every object, so the link order of the parts never
# matters to a host program.
file(STRINGS ${LIST} archives)
get_filename_component(dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
file(REMOVE ${OUT})
set(script "create ${OUT}\n")
foreach(a IN LISTS archives)
  if(NOT a STREQUAL "")
    string(APPEND script "addlib ${a}\n")
  endif()
endforeach()
string(APPEND script "save\nend\n")
file(WRITE ${OUT}.mri "${script}")
execute_process(COMMAND ${AR} -M INPUT_FILE ${OUT}.mri RESULT_VARIABLE rc)
file(REMOVE ${OUT}.mri)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${AR} -M failed for ${OUT}")
endif()
message(STATUS "Installing: ${OUT}")
