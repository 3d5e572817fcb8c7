# Golden fingerprints in CI: a ctest that takes a subject's fingerprint and compares it
# with a checked-in manifest (samplecheck fingerprint --compare; docs/bisect.md).
#
#   include(samplecheck_golden.cmake)
#   samplecheck_add_golden_test(NAME my_matmul_golden
#     PLUGIN $<TARGET_FILE:my_plugin> SUBJECT vendor.gemm     # or SUBJECT cpu.segmented alone
#     MANIFEST ${CMAKE_CURRENT_SOURCE_DIR}/golden/vendor.gemm.json
#     ARGS --shape 4096x4096 --m 1,2,3,64,65,1024            # the plan the manifest was taken on
#     [SAMPLECHECK /path/to/samplecheck] [LABELS cpu] [TIMEOUT 300])
#
# The test fails when any entry's hash differs (the output names the first diverging
# shape, M, row and column, or batch size and slot), fails when the plans differ (the
# ARGS must be the ones the manifest was taken with), and is skipped (exit 77) when
# the subject's device is absent. A manifest is the bits of one platform class (CPU
# build flags, GPU model and toolkit): take one per class you run CI on.
#
# Self-contained: this one file defines the function and, run as a script
# (cmake -P, which the test does), performs the comparison.

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED SAMPLECHECK_GOLDEN_MANIFEST)
  # The test itself: take the fingerprint, then compare it with the golden.
  separate_arguments(subject_args UNIX_COMMAND "${SAMPLECHECK_GOLDEN_SUBJECT_ARGS}")
  separate_arguments(plan_args UNIX_COMMAND "${SAMPLECHECK_GOLDEN_ARGS}")
  execute_process(
    COMMAND ${SAMPLECHECK_GOLDEN_EXE} fingerprint ${subject_args} ${plan_args}
            -o ${SAMPLECHECK_GOLDEN_OUTPUT}
    RESULT_VARIABLE taken OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(taken EQUAL 77)
    message("SAMPLECHECK_GOLDEN_SKIPPED: the subject's device is absent")
    return()
  elseif(NOT taken EQUAL 0)
    message(FATAL_ERROR "samplecheck fingerprint exited ${taken}")
  endif()
  execute_process(
    COMMAND ${SAMPLECHECK_GOLDEN_EXE} fingerprint --compare ${SAMPLECHECK_GOLDEN_MANIFEST}
            ${SAMPLECHECK_GOLDEN_OUTPUT}
    RESULT_VARIABLE same OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT same EQUAL 0)
    message(FATAL_ERROR "the fingerprint differs from the golden ${SAMPLECHECK_GOLDEN_MANIFEST} "
      "(exit ${same}); if the change is intended, replace the golden with ${SAMPLECHECK_GOLDEN_OUTPUT}")
  endif()
  return()
endif()

set(_samplecheck_golden_script "${CMAKE_CURRENT_LIST_FILE}")

function(samplecheck_add_golden_test)
  cmake_parse_arguments(G "" "NAME;SUBJECT;PLUGIN;MANIFEST;SAMPLECHECK;TIMEOUT" "ARGS;LABELS" ${ARGN})
  if(NOT G_NAME OR NOT G_MANIFEST OR (NOT G_SUBJECT AND NOT G_PLUGIN))
    message(FATAL_ERROR "samplecheck_add_golden_test: NAME, MANIFEST and SUBJECT or PLUGIN are required")
  endif()
  if(NOT G_SAMPLECHECK)
    if(TARGET samplecheck)
      set(G_SAMPLECHECK $<TARGET_FILE:samplecheck>)
    else()
      find_program(G_SAMPLECHECK samplecheck REQUIRED)
    endif()
  endif()
  set(subject_args "")
  if(G_PLUGIN)
    string(APPEND subject_args "--plugin ${G_PLUGIN} ")
  endif()
  if(G_SUBJECT)
    string(APPEND subject_args "--subject ${G_SUBJECT}")
  endif()
  list(JOIN G_ARGS " " plan_args)
  add_test(NAME ${G_NAME}
    COMMAND ${CMAKE_COMMAND}
      -DSAMPLECHECK_GOLDEN_EXE=${G_SAMPLECHECK}
      "-DSAMPLECHECK_GOLDEN_SUBJECT_ARGS=${subject_args}"
      "-DSAMPLECHECK_GOLDEN_ARGS=${plan_args}"
      -DSAMPLECHECK_GOLDEN_MANIFEST=${G_MANIFEST}
      -DSAMPLECHECK_GOLDEN_OUTPUT=${CMAKE_CURRENT_BINARY_DIR}/${G_NAME}.json
      -P ${_samplecheck_golden_script})
  if(NOT G_LABELS)
    set(G_LABELS cpu)
  endif()
  if(NOT G_TIMEOUT)
    set(G_TIMEOUT 300)
  endif()
  set_tests_properties(${G_NAME} PROPERTIES LABELS "${G_LABELS}" TIMEOUT ${G_TIMEOUT}
    SKIP_REGULAR_EXPRESSION "SAMPLECHECK_GOLDEN_SKIPPED")
endfunction()
