# samplecheck_add_qualification: a ctest test that qualifies a vendor's plugin.
#
#   find_package(samplecheck CONFIG REQUIRED)
#   samplecheck_add_qualification(NAME <test> [PLUGIN <shared library target>]
#     [SUBJECT <name>] [BUDGET quick|standard] [CHECKS <check>...] [LABELS <label>...]
#     [GPUS <n>] [TIMEOUT <seconds>] [SHARDS <n>])
#
# The test runs `samplecheck qualify --plugin $<TARGET_FILE:plugin>` (one subject with
# SUBJECT, else all the plugin's; without PLUGIN, SUBJECT names an in-tree subject) and
# leaves report.json, junit.xml and report.html in <build>/samplecheck/<test>/. Exit 0
# passes, 1 fails, 77 (no device for the subject) is reported as skipped
# (SKIP_RETURN_CODE), never as passed.
#
# SHARDS <n>: n tests <test>.shard<i> run `qualify --shard i/n` (each with its GPUS, so
# ctest gives every shard its own GPUs and runs the shards side by side), and <test>
# itself runs `samplecheck merge` on their report.json files once they have run (a
# fixture: `ctest -R <test>` runs the shards too), leaving the merged report in
# <build>/samplecheck/<test>/merged/ (docs/sharding.md).
#
# GPUS <n>: the test takes n GPUs through ctest's resource allocation (RESOURCE_GROUPS
# "<n>,gpus:1"), so GPU tests never share a device, and samplecheck runs on the GPUs
# ctest allotted (CTEST_RESOURCE_GROUP_* -> CUDA_VISIBLE_DEVICES). RESOURCE_GROUPS has
# no effect without a resource spec file; the function writes one,
# <build>/samplecheck-resources.json, one slot per GPU that `nvidia-smi -L` lists (at
# least n placeholders where it lists none: the tests then run and report skipped), and
# points CTEST_RESOURCE_SPEC_FILE at it, which CMake writes into the top directory's
# CTestTestfile.cmake, so plain `ctest` uses it when find_package(samplecheck) is called in
# the top-level CMakeLists.txt. Otherwise pass it yourself:
#   ctest --test-dir build --resource-spec-file build/samplecheck-resources.json
# (or "execution": {"resourceSpecFile": ...} in a test preset).
include_guard(GLOBAL)

# A spec file the project names itself is the project's: it is read, never written.
if(NOT DEFINED CTEST_RESOURCE_SPEC_FILE)
  set(CTEST_RESOURCE_SPEC_FILE "${CMAKE_BINARY_DIR}/samplecheck-resources.json")
  set_property(GLOBAL PROPERTY _SAMPLECHECK_WRITES_SPEC TRUE)
endif()

# Writes the resource spec: the GPUs nvidia-smi lists, else `at_least` placeholders.
function(_samplecheck_write_resource_spec at_least)
  get_property(writes GLOBAL PROPERTY _SAMPLECHECK_WRITES_SPEC)
  if(NOT writes)
    return()
  endif()
  get_property(detected GLOBAL PROPERTY _SAMPLECHECK_GPUS_DETECTED)
  if(NOT DEFINED detected OR detected STREQUAL "")
    set(detected 0)
    find_program(_SAMPLECHECK_NVIDIA_SMI nvidia-smi)
    if(_SAMPLECHECK_NVIDIA_SMI)
      execute_process(COMMAND ${_SAMPLECHECK_NVIDIA_SMI} -L OUTPUT_VARIABLE listed
                      RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 20)
      if(rc EQUAL 0)
        string(REGEX MATCHALL "GPU [0-9]+:" gpus "${listed}")
        list(LENGTH gpus detected)
      endif()
    endif()
    set_property(GLOBAL PROPERTY _SAMPLECHECK_GPUS_DETECTED ${detected})
  endif()
  set(entries "")
  if(detected GREATER 0)
    math(EXPR last "${detected} - 1")
    foreach(i RANGE ${last})
      list(APPEND entries "{\"id\": \"${i}\", \"slots\": 1}")
    endforeach()
  elseif(at_least GREATER 0)
    math(EXPR last "${at_least} - 1")
    foreach(i RANGE ${last})
      list(APPEND entries "{\"id\": \"absent${i}\", \"slots\": 1}")
    endforeach()
  endif()
  list(JOIN entries ", " joined)
  file(CONFIGURE OUTPUT "${CTEST_RESOURCE_SPEC_FILE}" CONTENT
    "{\"version\": {\"major\": 1, \"minor\": 0}, \"local\": [{\"gpus\": [${joined}]}]}\n" @ONLY)
endfunction()

# ctest reads the spec whenever CTEST_RESOURCE_SPEC_FILE is set, so it exists from the start.
_samplecheck_write_resource_spec(0)

# samplecheck_test_gpus(<test> <n>): test <test> (added in the calling directory) takes n
# GPUs, one slot each (RESOURCE_GROUPS "<n>,gpus:1"), and the spec grows to hold them.
# The one way a test asks for GPUs: samplecheck_add_qualification and this tree's own
# GPU tests (cmake/samplecheck.cmake's samplecheck_add_test GPU) both call it.
function(samplecheck_test_gpus test gpus)
  set_tests_properties(${test} PROPERTIES RESOURCE_GROUPS "${gpus},gpus:1")
  get_property(most GLOBAL PROPERTY _SAMPLECHECK_MOST_GPUS)
  if(NOT most OR gpus GREATER most)
    set_property(GLOBAL PROPERTY _SAMPLECHECK_MOST_GPUS ${gpus})
    set(most ${gpus})
  endif()
  _samplecheck_write_resource_spec(${most})
endfunction()

function(samplecheck_add_qualification)
  cmake_parse_arguments(PARSE_ARGV 0 Q "" "NAME;PLUGIN;SUBJECT;BUDGET;GPUS;TIMEOUT;SHARDS"
                        "CHECKS;LABELS")
  if(Q_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "samplecheck_add_qualification: unknown arguments ${Q_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT Q_NAME OR (NOT Q_PLUGIN AND NOT Q_SUBJECT))
    message(FATAL_ERROR "samplecheck_add_qualification: NAME and PLUGIN or SUBJECT are required")
  endif()
  if(Q_PLUGIN AND NOT TARGET ${Q_PLUGIN})
    message(FATAL_ERROR
      "samplecheck_add_qualification(${Q_NAME}): PLUGIN ${Q_PLUGIN} is not a target")
  endif()
  if(NOT TARGET samplecheck::samplecheck)
    message(FATAL_ERROR
      "samplecheck_add_qualification: no samplecheck::samplecheck (find_package(samplecheck))")
  endif()
  if(NOT Q_BUDGET)
    set(Q_BUDGET quick)
  elseif(NOT Q_BUDGET MATCHES "^(quick|standard)$")
    message(FATAL_ERROR
      "samplecheck_add_qualification(${Q_NAME}): BUDGET ${Q_BUDGET} is not quick or standard")
  endif()
  if(NOT DEFINED Q_GPUS)
    set(Q_GPUS 0)
  elseif(NOT Q_GPUS MATCHES "^[0-9]+$")
    message(FATAL_ERROR "samplecheck_add_qualification(${Q_NAME}): GPUS ${Q_GPUS} is not a count")
  endif()
  if(DEFINED Q_SHARDS AND NOT Q_SHARDS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "samplecheck_add_qualification(${Q_NAME}): SHARDS ${Q_SHARDS} is not a count")
  endif()
  if(NOT Q_TIMEOUT)
    set(Q_TIMEOUT 1800)
  endif()
  set(report_dir ${CMAKE_CURRENT_BINARY_DIR}/samplecheck/${Q_NAME})
  set(command $<TARGET_FILE:samplecheck::samplecheck> qualify --budget ${Q_BUDGET} --quiet)
  if(Q_PLUGIN)
    list(APPEND command --plugin $<TARGET_FILE:${Q_PLUGIN}>)
  endif()
  if(Q_SUBJECT)
    list(APPEND command --subject ${Q_SUBJECT})
  endif()
  if(Q_CHECKS)
    list(JOIN Q_CHECKS "," checks)
    list(APPEND command --checks ${checks})
  endif()
  if(Q_SHARDS)
    _samplecheck_add_shards(${Q_NAME} ${Q_SHARDS} ${Q_GPUS} ${Q_TIMEOUT} "${Q_LABELS}"
                            ${report_dir} ${command})
  else()
    add_test(NAME ${Q_NAME} COMMAND ${command} --report-dir ${report_dir})
    set_tests_properties(${Q_NAME} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${Q_TIMEOUT}
                         LABELS "samplecheck;${Q_LABELS}" FIXTURES_REQUIRED ${Q_NAME}.report_dir)
    if(Q_GPUS GREATER 0)
      samplecheck_test_gpus(${Q_NAME} ${Q_GPUS})
    endif()
  endif()
  # samplecheck refuses a report folder that holds a report; each ctest run empties it first.
  add_test(NAME ${Q_NAME}.clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${report_dir})
  # Removing a folder takes no GPU: not labelled gpu, which asks for resource groups.
  set(clean_labels ${Q_LABELS})
  list(REMOVE_ITEM clean_labels gpu)
  set_tests_properties(${Q_NAME}.clean PROPERTIES FIXTURES_SETUP ${Q_NAME}.report_dir
                       LABELS "samplecheck;${clean_labels}")
endfunction()

# The shards of samplecheck_add_qualification(... SHARDS n) and their merge (named
# <name>): each shard in <report_dir>/shard<i>/, the merged report in <report_dir>/merged/.
# The merge needs the shards as fixtures: a shard that fails leaves it not run, its own
# report saying why; shards that skip (no device) give a merge of skipped rows: skipped.
function(_samplecheck_add_shards name shards gpus timeout labels report_dir)
  set(command ${ARGN})
  set(reports "")
  math(EXPR last "${shards} - 1")
  foreach(i RANGE ${last})
    add_test(NAME ${name}.shard${i}
             COMMAND ${command} --shard ${i}/${shards} --report-dir ${report_dir}/shard${i})
    set_tests_properties(${name}.shard${i} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${timeout}
      LABELS "samplecheck;${labels}" FIXTURES_REQUIRED ${name}.report_dir
      FIXTURES_SETUP ${name}.shards)
    if(gpus GREATER 0)
      samplecheck_test_gpus(${name}.shard${i} ${gpus})
    endif()
    list(APPEND reports ${report_dir}/shard${i}/report.json)
  endforeach()
  # The merge reads files and takes no GPU: not labelled gpu, which asks for resource groups.
  set(merge_labels ${labels})
  list(REMOVE_ITEM merge_labels gpu)
  add_test(NAME ${name} COMMAND $<TARGET_FILE:samplecheck::samplecheck> merge ${reports}
                                --report-dir ${report_dir}/merged)
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
    LABELS "samplecheck;${merge_labels}" FIXTURES_REQUIRED "${name}.report_dir;${name}.shards")
endfunction()
