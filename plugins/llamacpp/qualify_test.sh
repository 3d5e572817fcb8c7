#!/usr/bin/env bash
# A ctest entry for the llama.cpp plugin:
#
#   qualify_test.sh PLUGIN SAMPLECHECK PYTHON REPORT_DIR EXPECTED -- QUALIFY_ARGS...
#
# Runs `SAMPLECHECK qualify --plugin PLUGIN --report-dir REPORT_DIR QUALIFY_ARGS`, then
# judges its report.json with expect_verdicts.py: EXPECTED is a '|'-separated list of
# CHECK=VERDICT~TEXT (the known failures, docs/shipped/llamacpp.md; TEXT may hold spaces), and
# every other check must pass or be n/a. Exit 77 (ctest: skipped, never passed) when
# PLUGIN is "-" (samplecheck was configured with SAMPLECHECK_LLAMACPP=OFF) or not built.
set -euo pipefail
if [ $# -lt 6 ] || [ "$6" != "--" ]; then
  echo "usage: $0 PLUGIN SAMPLECHECK PYTHON REPORT_DIR EXPECTED -- QUALIFY_ARGS..." >&2
  exit 2
fi
plugin=$1 samplecheck=$2 python=$3 report_dir=$4 expected=$5
shift 6
if [ "$plugin" = "-" ]; then
  echo "skipped: llama.cpp is not built (configure with -DSAMPLECHECK_LLAMACPP=ON;" \
    "tools/scripts/build_llamacpp.sh fetches and builds it)"
  exit 77
fi
if [ ! -f "$plugin" ]; then
  echo "skipped: the llama.cpp plugin $plugin is not built (target samplecheck_llamacpp)"
  exit 77
fi
rm -rf "$report_dir"
status=0
"$samplecheck" qualify --plugin "$plugin" --report-dir "$report_dir" "$@" || status=$?
echo "samplecheck qualify exited $status; the verdicts against the expected ones:"
expectations=()
[ -z "$expected" ] || IFS='|' read -r -a expectations <<<"$expected"
exec "$python" "$(dirname "$0")/expect_verdicts.py" "$report_dir/report.json" "${expectations[@]}"
