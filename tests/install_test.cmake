# `cmake --install` into a fresh prefix puts every command in PREFIX/bin, and each runs
# (`--help`). Run by CTest: cmake -DBUILD=<build dir> -DPREFIX=<scratch dir> -P this file.
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}): ${out} ${err}")
endif()
foreach(tool mpcache-party mpcache-dealer mpcache-client mpcache-model mpcache-bench mpcache-tune)
  if(NOT EXISTS "${PREFIX}/bin/${tool}")
    message(FATAL_ERROR "cmake --install did not put ${tool} in ${PREFIX}/bin")
  endif()
  execute_process(COMMAND "${PREFIX}/bin/${tool}" --help RESULT_VARIABLE rc OUTPUT_QUIET
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PREFIX}/bin/${tool} --help failed (${rc}): ${err}")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
message(STATUS "cmake --install: the commands run from ${PREFIX}/bin")
