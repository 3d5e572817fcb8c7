#!/usr/bin/env bash
# One device call (docs/h200/2026-12-05.md): the standard battery of each
# "subject seed [i/n]" line of $JOBS (i/n: shard i of n, `qualify --shard`; a subject's
# shards are merged after the jobs, `samplecheck merge`), $PAR at once on the one GPU, each
# cut at $DEADLINE seconds from the call's start (one not started with fewer than
# $MIN_LEFT left). The job $PROF names runs under gperftools' profiler
# (.gpu/lib/libprofiler.so.0, carried: the device has no perf). Binaries: $BIN.
# Writes summary.txt, table.txt (h200_summarize.py), reports.tgz and prof/ under $OUT.
set -u
B=${BIN:-$PWD/.gpu/bin}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
# report.html's renderer: the device's python3 (its venv has matplotlib; /usr/bin/python3 has not)
export SAMPLECHECK_PYTHON=${SAMPLECHECK_PYTHON:-python3}
export START=$(date +%s) B
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt 2>&1
{ nproc; which perf nsys ncu python3; python3 -c 'import torch, triton; print(torch.__version__, triton.__version__)'; } >> $OUT/gpu.txt 2>&1
job() {
  s=$1; seed=$2; shard=${3:-}
  # A shard's report goes to shard-*, which the merge below turns into the subject's r-*.
  name=r-$s-$seed shard_args=""
  [ -n "$shard" ] && name=shard-$s-$seed-${shard/\//of} shard_args="--shard $shard"
  left=$(( ${DEADLINE:-570} - ($(date +%s) - START) ))
  [ $left -lt ${MIN_LEFT:-20} ] && { echo "$s seed $seed not started (deadline)" >> $OUT/summary.txt; return; }
  pre=""
  [ "${PROF:-}" = "$s $seed" ] && pre="env LD_PRELOAD=$PWD/.gpu/lib/libprofiler.so.0 \
    LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/.gpu/lib CPUPROFILE=$OUT/prof/cpu.prof \
    CPUPROFILE_FREQUENCY=200" && mkdir -p $OUT/prof
  t0=$(date +%s%N)
  # --time-limit 15 s before the kill: a cut run still prints and records its verdicts
  timeout $left $pre $B/samplecheck qualify --subject $s --budget ${BUDGET:-standard} --seed $seed \
    --time-limit $((left > 30 ? left - 15 : left)) \
    $shard_args --report-dir $OUT/$name --repro-dir $OUT/$name/repro > $OUT/$name.txt 2>&1
  rc=$?
  t1=$(date +%s%N)
  { echo "$s seed $seed $shard rc $rc wall_ms $(( (t1 - t0) / 1000000 )) started_s $(( t0 / 1000000000 - START ))"
    tail -n 1 $OUT/$name.txt
    # a run cut at the deadline prints no table: its last checks' progress lines say how far it got
    [ $rc -ne 0 ] && grep '^samplecheck: \[' $OUT/$name.txt | tail -n 4; } >> $OUT/summary.txt
}
export -f job
echo "$JOBS" | grep -v '^$' | xargs -P ${PAR:-3} -L 1 bash -c 'job $0 $1 $2'
# Each sharded subject's shards merged (a missing or cut shard makes the merge INCOMPLETE).
echo "$JOBS" | awk 'NF == 3 {print $1, $2}' | sort -u | while read -r s seed; do
  $B/samplecheck merge $OUT/shard-$s-$seed-*/report.json --report-dir $OUT/r-$s-$seed \
    > $OUT/r-$s-$seed.txt 2>&1
  echo "$s seed $seed merged rc $?: $(tail -n 1 $OUT/r-$s-$seed.txt)" >> $OUT/summary.txt
done
python3 tools/scripts/h200_summarize.py $OUT > $OUT/table.txt 2>&1
tar czf $OUT/reports.tgz -C $OUT $(cd $OUT && ls -d r-* shard-* 2>/dev/null) 2>/dev/null
rm -rf $OUT/r-* $OUT/shard-*
