# Writes OUT (a header defining SAMPLECHECK_REVISION) from `git describe` of SOURCE_DIR,
# only when it changes, so that a new commit rebuilds what prints the revision and
# nothing else. Run at every build (tools/samplecheck/CMakeLists.txt).
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE failed ERROR_QUIET)
if(failed OR revision STREQUAL "")
  set(revision "unknown (not built from a git checkout)")
endif()
set(text "#pragma once\n#define SAMPLECHECK_REVISION \"${revision}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
