# Shared build rules: warnings, the test helper, and GPU test skipping.

# Every target in the project gets the repository root on its include path:
# headers are named by layer ("reference/philox.h", "kernels/samplecheck_plugin.h").
add_library(samplecheck_options INTERFACE)
target_include_directories(samplecheck_options INTERFACE ${PROJECT_SOURCE_DIR})
target_compile_options(samplecheck_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
target_compile_definitions(samplecheck_options INTERFACE
  SAMPLECHECK_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/fixtures")
if(SAMPLECHECK_CUDA)
  target_compile_definitions(samplecheck_options INTERFACE SAMPLECHECK_HAVE_CUDA=1)
  # Binaries are carried to GPU machines with other system libraries.
  target_link_options(samplecheck_options INTERFACE -static-libstdc++ -static-libgcc)
endif()

# GPU tests take their devices through ctest's resource allocation, with the spec file
# that the package's function writes (one mechanism for this tree and for vendors).
include(${CMAKE_CURRENT_LIST_DIR}/samplecheck_qualification.cmake)

# Catch2 2.13 has no skip: GPU executables exit 77 when no device is present and
# ctest reports them as skipped (SKIP_RETURN_CODE), never as passed.
set(SAMPLECHECK_SKIP_CODE 77)

# samplecheck_add_test(NAME <exe> SOURCES ... LIBS ... LABELS ... [GPU] [TIMEOUT s] [ARGS ...])
function(samplecheck_add_test)
  cmake_parse_arguments(T "GPU" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  if(SAMPLECHECK_TESTS)
    add_executable(${T_NAME} ${T_SOURCES})
  else()
    add_executable(${T_NAME} EXCLUDE_FROM_ALL ${T_SOURCES})
  endif()
  if(T_GPU)
    target_link_libraries(${T_NAME} PRIVATE samplecheck_gpu_catch_main)
  else()
    target_link_libraries(${T_NAME} PRIVATE samplecheck_catch_main)
  endif()
  target_link_libraries(${T_NAME} PRIVATE samplecheck_options ${T_LIBS})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --fixtures ${PROJECT_SOURCE_DIR}/fixtures ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  if(T_GPU)
    set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE ${SAMPLECHECK_SKIP_CODE})
    samplecheck_test_gpus(${T_NAME} 1)
  endif()
endfunction()

# samplecheck_add_bench(NAME <exe> SOURCES ... LIBS ... TIMEOUT s [GPU] [ARGS ...])
# A bench program and its test of the same name, labelled bench so that the default test
# run leaves it out. GPU: it exits 77 without a device (skipped) and takes one GPU.
function(samplecheck_add_bench)
  cmake_parse_arguments(B "GPU" "NAME;TIMEOUT" "SOURCES;LIBS;ARGS" ${ARGN})
  add_executable(${B_NAME} ${B_SOURCES})
  target_link_libraries(${B_NAME} PRIVATE samplecheck_options ${B_LIBS})
  add_test(NAME ${B_NAME} COMMAND ${B_NAME} ${B_ARGS})
  set_tests_properties(${B_NAME} PROPERTIES LABELS bench TIMEOUT ${B_TIMEOUT})
  if(B_GPU)
    set_tests_properties(${B_NAME} PROPERTIES SKIP_RETURN_CODE ${SAMPLECHECK_SKIP_CODE})
    samplecheck_test_gpus(${B_NAME} 1)
  endif()
endfunction()

# Adds the listed sub-folders that exist; a layer lists its parts in one place.
macro(samplecheck_add_parts)
  foreach(part ${ARGN})
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${part}/CMakeLists.txt)
      add_subdirectory(${part})
    endif()
  endforeach()
endmacro()
