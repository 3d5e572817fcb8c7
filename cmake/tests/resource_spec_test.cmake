# cmake -P: GPU tests' resource groups have a spec file that holds them (ctest would
# otherwise ignore RESOURCE_GROUPS, or fail the tests as "Not Run" for want of slots).
#   1. The tree's build (BUILD_DIR): its top CTestTestfile.cmake names the spec file;
#      every test with RESOURCE_GROUPS (ctest --show-only=json-v1) fits in the spec's
#      GPUs, and every test labelled gpu has them.
#   2. A scratch project (WORK_DIR) that asks for a GPU through samplecheck_test_gpus
#      exactly as the tree does: plain ctest allots it a slot (CTEST_RESOURCE_GROUP_0_GPUS
#      set) and its exit 77 shows as skipped, with or without a GPU on the machine.
# Needs BUILD_DIR, SOURCE_DIR, WORK_DIR, CTEST, MAKE_PROGRAM.
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR CTEST MAKE_PROGRAM)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "resource_spec_test.cmake: -D${var}=... is required")
  endif()
endforeach()

# The spec file a build's top CTestTestfile.cmake names, and how many GPUs it lists.
function(spec_of build out_path out_gpus)
  file(STRINGS ${build}/CTestTestfile.cmake line REGEX "^set\\(CTEST_RESOURCE_SPEC_FILE ")
  if(NOT line MATCHES "\"([^\"]+)\"")
    message(FATAL_ERROR "${build}/CTestTestfile.cmake sets no CTEST_RESOURCE_SPEC_FILE")
  endif()
  set(path ${CMAKE_MATCH_1})
  if(NOT EXISTS ${path})
    message(FATAL_ERROR "the resource spec ${path} does not exist")
  endif()
  file(READ ${path} spec)
  string(JSON gpus LENGTH "${spec}" local 0 gpus)
  set(${out_path} ${path} PARENT_SCOPE)
  set(${out_gpus} ${gpus} PARENT_SCOPE)
endfunction()

# 1. The tree.
spec_of(${BUILD_DIR} spec gpus)
execute_process(COMMAND ${CTEST} --test-dir ${BUILD_DIR} --show-only=json-v1
  OUTPUT_VARIABLE listing COMMAND_ERROR_IS_FATAL ANY)
string(JSON tests LENGTH "${listing}" tests)
set(with_groups 0)
set(gpu_labelled 0)
math(EXPR last "${tests} - 1")
foreach(t RANGE ${last})
  string(JSON name GET "${listing}" tests ${t} name)
  string(JSON props ERROR_VARIABLE none GET "${listing}" tests ${t} properties)
  if(none)
    continue()
  endif()
  set(groups 0)
  set(labels "")
  string(JSON nprops LENGTH "${props}")
  math(EXPR plast "${nprops} - 1")
  foreach(p RANGE ${plast})
    string(JSON pname GET "${props}" ${p} name)
    if(pname STREQUAL "RESOURCE_GROUPS")
      string(JSON groups LENGTH "${props}" ${p} value)
    elseif(pname STREQUAL "LABELS")
      string(JSON labels GET "${props}" ${p} value)
    endif()
  endforeach()
  if(labels MATCHES "\"gpu\"")
    math(EXPR gpu_labelled "${gpu_labelled} + 1")
    if(groups EQUAL 0)
      message(FATAL_ERROR "test ${name} is labelled gpu but has no RESOURCE_GROUPS")
    endif()
  endif()
  if(groups GREATER 0)
    math(EXPR with_groups "${with_groups} + 1")
    if(groups GREATER gpus)
      message(FATAL_ERROR "test ${name} takes ${groups} GPUs; ${spec} lists ${gpus}")
    endif()
  endif()
endforeach()
message(STATUS "tree: ${tests} tests, ${with_groups} with GPU resource groups "
               "(${gpu_labelled} labelled gpu); ${spec} lists ${gpus} GPU slots")

# 2. A scratch project, one GPU test through the same function.
file(REMOVE_RECURSE ${WORK_DIR})
file(WRITE ${WORK_DIR}/src/probe.sh
  "[ -n \"$CTEST_RESOURCE_GROUP_0_GPUS\" ] || { echo 'no GPU slot allotted'; exit 1; }\n"
  "echo \"allotted: $CTEST_RESOURCE_GROUP_0_GPUS\"\nexit 77\n")
file(WRITE ${WORK_DIR}/src/CMakeLists.txt
  "cmake_minimum_required(VERSION 3.25)\nproject(probe NONE)\nenable_testing()\n"
  "include(${SOURCE_DIR}/cmake/samplecheck_qualification.cmake)\n"
  "add_test(NAME gpu_probe COMMAND sh ${WORK_DIR}/src/probe.sh)\n"
  "set_tests_properties(gpu_probe PROPERTIES SKIP_RETURN_CODE 77)\n"
  "samplecheck_test_gpus(gpu_probe 1)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/src -B ${WORK_DIR}/build -G Ninja
  -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
spec_of(${WORK_DIR}/build probe_spec probe_gpus)
execute_process(COMMAND ${CTEST} --test-dir ${WORK_DIR}/build -V
  OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "allotted: id:[^\n]*" OR NOT out MATCHES "\\(Skipped\\)")
  message(FATAL_ERROR "the scratch GPU test was not allotted a slot and skipped (ctest exit ${rc}):\n${out}")
endif()
string(REGEX MATCH "allotted: [^\n]*" allotted "${out}")
message(STATUS "scratch project: ${probe_spec} lists ${probe_gpus}; gpu_probe ${allotted}, Skipped")
