# cmake -P: configure and build examples/plugin out of tree, as a vendor would:
# its own project, the ABI header's folder as its one input. Run by ctest
# (examples_plugin_build) with SOURCE_DIR, BINARY_DIR, INCLUDE_DIR, the outer
# build's compilers and make program.
foreach(var SOURCE_DIR BINARY_DIR INCLUDE_DIR C_COMPILER CXX_COMPILER MAKE_PROGRAM)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build_plugin.cmake: -D${var}=... is required")
  endif()
endforeach()

set(make_program "")
if(MAKE_PROGRAM MATCHES "ninja")
  set(make_program -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR} -G Ninja
    -DSAMPLECHECK_INCLUDE_DIR=${INCLUDE_DIR}
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} ${make_program}
  COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR} COMMAND_ERROR_IS_FATAL ANY)
