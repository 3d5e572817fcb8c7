# HIP builds are compile-only (no AMD GPU anywhere): the same .cu kernel sources,
# through kernels/gpu_compat.h, compiled by hipcc for gfx90a into objects that
# nothing links. A HIP-incompatible change then fails the default build.
#
# samplecheck_add_hip_objects(<target> SOURCES <a.cu> [<b.cu> ...])
#   Adds custom target <target> (part of ALL) that builds one object per source
#   under ${CMAKE_CURRENT_BINARY_DIR}/hip/. Does nothing unless SAMPLECHECK_HIP is
#   ON and SAMPLECHECK_HIPCC was found. rocPRIM comes from librocprim-dev.

set(SAMPLECHECK_HIP_ARCH "gfx90a" CACHE STRING "Offload architecture for the compile-only HIP build")

if(SAMPLECHECK_HIP AND NOT SAMPLECHECK_HIPCC)
  message(WARNING "SAMPLECHECK_HIP is ON but hipcc was not found: HIP objects are not built")
endif()

function(samplecheck_add_hip_objects target)
  cmake_parse_arguments(H "" "" "SOURCES" ${ARGN})
  if(NOT SAMPLECHECK_HIP OR NOT SAMPLECHECK_HIPCC)
    return()
  endif()
  if(NOT H_SOURCES)
    message(FATAL_ERROR "samplecheck_add_hip_objects(${target}): no SOURCES")
  endif()
  set(objects)
  foreach(source ${H_SOURCES})
    get_filename_component(source_abs ${source} ABSOLUTE)
    get_filename_component(stem ${source} NAME_WE)
    set(object ${CMAKE_CURRENT_BINARY_DIR}/hip/${stem}.o)
    add_custom_command(
      OUTPUT ${object}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/hip
      COMMAND ${SAMPLECHECK_HIPCC} --offload-arch=${SAMPLECHECK_HIP_ARCH} -x hip -std=c++20 -O2
              -Wno-unused-parameter -I${PROJECT_SOURCE_DIR} -MD -MF ${object}.d
              -c ${source_abs} -o ${object}
      DEPENDS ${source_abs}
      DEPFILE ${object}.d
      COMMENT "hipcc ${SAMPLECHECK_HIP_ARCH}: ${stem}.cu"
      VERBATIM)
    list(APPEND objects ${object})
  endforeach()
  add_custom_target(${target} ALL DEPENDS ${objects})
endfunction()
