# cmake -P: what CI does for vendors, run by ctest (examples_consumer): install this
# build to a fresh prefix, configure examples/consumer against it (find_package), build
# it and run its ctest; its qualification tests leave their reports. Needs BUILD_DIR,
# SOURCE_DIR, WORK_DIR, C_COMPILER, CXX_COMPILER, MAKE_PROGRAM; MATMUL_CHECKS optional.
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR C_COMPILER CXX_COMPILER MAKE_PROGRAM)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "consumer_test.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} -G Ninja -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} "-DVENDOR_MATMUL_CHECKS=${MATMUL_CHECKS}"
  COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${build} --output-on-failure
  COMMAND_ERROR_IS_FATAL ANY)
foreach(test vendor_sampler_qualification vendor_matmul_qualification)
  foreach(file report.json junit.xml report.html)
    if(NOT EXISTS ${build}/samplecheck/${test}/${file})
      message(FATAL_ERROR "${test} left no ${file} in ${build}/samplecheck/${test}")
    endif()
  endforeach()
endforeach()
message(STATUS "examples/consumer: installed, found, built and qualified")
