#!/usr/bin/env bash
# Sourced by the end-to-end scripts of this folder: a fresh work folder, ok/bad tallies
# and the closing line whose status is the script's.
#   source test_lib.sh WORKDIR
set -u
rm -rf "$1" && mkdir -p "$1"
passed=0 failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }
# The last command of a script: the tally, and exit 1 if anything failed.
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
