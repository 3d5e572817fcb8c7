# cmake -P: samplecheck_add_qualification(... SHARDS 3 GPUS 1) in a scratch project, its
# samplecheck a probe that prints what ctest gave it and exits as samplecheck does for a
# CUDA subject on a machine without a GPU (77):
#   1. The generated spec (no GPU here: placeholder slots): every shard is allotted a
#      slot, runs with --shard i/3 and shows as Skipped, never Passed; the merge runs
#      after the shards, on their three report.json files, and shows as Skipped.
#   2. A spec the project names, listing three GPUs: ctest -j3 pins each shard to a GPU
#      of its own (three distinct ids).
# Needs SOURCE_DIR, WORK_DIR, CTEST, MAKE_PROGRAM.
foreach(var SOURCE_DIR WORK_DIR CTEST MAKE_PROGRAM)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "shard_resources_test.cmake: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
file(WRITE ${WORK_DIR}/src/probe.sh [=[
echo "probe: $*"
[ "$1" = merge ] && exit 77
[ -n "${CTEST_RESOURCE_GROUP_0_GPUS:-}" ] || { echo 'no GPU slot allotted'; exit 1; }
echo "allotted: $CTEST_RESOURCE_GROUP_0_GPUS for $*"
sleep 1
exit 77
]=])
file(CHMOD ${WORK_DIR}/src/probe.sh PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)

# The scratch project; SPEC, when given, is the project's own resource spec.
function(scratch_project build spec)
  set(own_spec "")
  if(spec)
    set(own_spec "set(CTEST_RESOURCE_SPEC_FILE ${spec})\n")
  endif()
  file(WRITE ${WORK_DIR}/src/CMakeLists.txt
    "cmake_minimum_required(VERSION 3.25)\nproject(probe NONE)\nenable_testing()\n${own_spec}"
    "add_executable(samplecheck::samplecheck IMPORTED)\n"
    "set_target_properties(samplecheck::samplecheck PROPERTIES IMPORTED_LOCATION ${WORK_DIR}/src/probe.sh)\n"
    "include(${SOURCE_DIR}/cmake/samplecheck_qualification.cmake)\n"
    "samplecheck_add_qualification(NAME q SUBJECT cuda.multinomial SHARDS 3 GPUS 1 LABELS gpu)\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/src -B ${build} -G Ninja
    -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
endfunction()

# 1. The generated spec.
scratch_project(${WORK_DIR}/generated "")
execute_process(COMMAND ${CTEST} --test-dir ${WORK_DIR}/generated -V
  OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
foreach(i 0 1 2)
  if(NOT out MATCHES "allotted: id:[^\n]* for qualify [^\n]*--shard ${i}/3"
     OR NOT out MATCHES "q\\.shard${i} [.]+[*]* *Skipped")
    message(FATAL_ERROR "shard ${i}/3 was not allotted a slot and skipped (ctest exit ${rc}):\n${out}")
  endif()
endforeach()
if(NOT rc EQUAL 0 OR out MATCHES "Test +#[0-9]+: q(\\.shard[0-9])? [.]+ *Passed" OR NOT out MATCHES
   "probe: merge [^\n]*shard0/report.json [^\n]*shard1/report.json [^\n]*shard2/report.json")
  message(FATAL_ERROR "the merge did not run on the three shards, or something passed (exit ${rc}):\n${out}")
endif()
string(REGEX MATCH "[0-9]+% tests passed[^\n]*" summary "${out}")
message(STATUS "generated spec: 3 shards allotted a slot each and skipped, merge skipped; ${summary}")

# 2. Three GPUs named in the project's spec: one each, side by side.
file(WRITE ${WORK_DIR}/three-gpus.json
  "{\"version\": {\"major\": 1, \"minor\": 0}, \"local\": [{\"gpus\": [{\"id\": \"0\", \"slots\": 1}, {\"id\": \"1\", \"slots\": 1}, {\"id\": \"2\", \"slots\": 1}]}]}\n")
scratch_project(${WORK_DIR}/three ${WORK_DIR}/three-gpus.json)
execute_process(COMMAND ${CTEST} --test-dir ${WORK_DIR}/three -V -j3
  OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
string(REGEX MATCHALL "allotted: id:[0-9]+" ids "${out}")
list(REMOVE_DUPLICATES ids)
list(LENGTH ids distinct)
if(NOT rc EQUAL 0 OR NOT distinct EQUAL 3)
  message(FATAL_ERROR "the three shards did not get three GPUs (${ids}; ctest exit ${rc}):\n${out}")
endif()
message(STATUS "three-GPU spec: shards pinned to ${ids}")
