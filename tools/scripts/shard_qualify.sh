#!/usr/bin/env bash
# One shard of a sharded qualification (docs/sharding.md), its index from the scheduler
# that started it:
#   Slurm job array         index SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN (an array
#                           0-3 or 1-4 alike), count SLURM_ARRAY_TASK_COUNT
#   Kubernetes Indexed Job  index JOB_COMPLETION_INDEX, count SAMPLECHECK_SHARDS (the
#                           Job's completions; Kubernetes does not pass it)
# SAMPLECHECK_SHARDS, when set, is the count under Slurm too. The shard's report goes to
# OUT_DIR/shard-I-of-N/ (replaced when a retried task runs the shard again); the exit
# status is samplecheck's. When every shard has run:
#   samplecheck merge OUT_DIR/shard-*-of-N/report.json --report-dir OUT_DIR/merged
#
#   shard_qualify.sh OUT_DIR [samplecheck qualify options, e.g. --subject cpu.multinomial]
# SAMPLECHECK: the samplecheck to run (default: the one on PATH).
set -euo pipefail
refuse() {
  echo "shard_qualify.sh: $1" >&2
  exit 2
}
number() { [[ $2 =~ ^(0|[1-9][0-9]*)$ ]] || refuse "$1='$2' is not a decimal number"; }
[ $# -ge 1 ] || refuse "usage: shard_qualify.sh OUT_DIR [samplecheck qualify options]"
out=$1
shift
slurm=${SLURM_ARRAY_TASK_ID:-} k8s=${JOB_COMPLETION_INDEX:-}
[ -n "$slurm" ] && [ -n "$k8s" ] &&
  refuse "SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are both set: which scheduler started this?"
if [ -n "$slurm" ]; then
  min=${SLURM_ARRAY_TASK_MIN:-0}
  number SLURM_ARRAY_TASK_ID "$slurm"
  number SLURM_ARRAY_TASK_MIN "$min"
  index=$((slurm - min))
  count=${SAMPLECHECK_SHARDS:-${SLURM_ARRAY_TASK_COUNT:-}}
  [ -n "$count" ] || refuse "no shard count: SLURM_ARRAY_TASK_COUNT and SAMPLECHECK_SHARDS are unset"
elif [ -n "$k8s" ]; then
  number JOB_COMPLETION_INDEX "$k8s"
  index=$k8s
  count=${SAMPLECHECK_SHARDS:-}
  [ -n "$count" ] || refuse "no shard count: set SAMPLECHECK_SHARDS to the Job's completions"
else
  refuse "neither SLURM_ARRAY_TASK_ID (Slurm job array) nor JOB_COMPLETION_INDEX (Kubernetes Indexed Job) is set"
fi
number "shard count" "$count"
dir="$out/shard-$index-of-$count"
rm -rf "$dir"
mkdir -p "$out"
echo "shard_qualify.sh: shard $index/$count -> $dir"
exec "${SAMPLECHECK:-samplecheck}" qualify "$@" --shard "$index/$count" --report-dir "$dir"
