# CTest script: install graft from BUILD_DIR into a scratch prefix, build the
# example consumer (examples/consumer) against the installed package with
# find_package(graft), and run it on SAMPLE. Proves the installed package is
# complete: headers, static libraries, exported targets and their
# dependencies.
#
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DSAMPLE=... -P ConsumerBuild.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR SAMPLE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "ConsumerBuild.cmake: ${var} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/consumer -B ${WORK_DIR}/build -G Ninja
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/graft_consumer ${SAMPLE})
