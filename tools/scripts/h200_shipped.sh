#!/usr/bin/env bash
# One device call (docs/shipped.md): shipped samplers and matmuls under `samplecheck qualify
# --exec` on the H200, each "NAME ENTRY SUBJECT CHECKS" line of $JOBS at once, each cut at
# $LIMIT seconds. ENTRY: a samplecheck_subject.adapters MODULE:function; CHECKS: a --checks
# list, or "all". The vLLM tree: $SAMPLECHECK_VLLM_TREE (default .gpu/vllm, extracted here by
# tools/scripts/extract_shipped.py and carried). Writes summary.txt and reports.tgz under $OUT.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 PYTHONPATH=$PWD/python PYTHONDONTWRITEBYTECODE=1
export SAMPLECHECK_VLLM_TREE=${SAMPLECHECK_VLLM_TREE:-$PWD/.gpu/vllm} SAMPLECHECK_PYTHON=python3
B=${BIN:-$PWD/.gpu/bin}
python3 -c 'import sys, torch, triton, jax; print(sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "jax", jax.__version__, jax.devices())' > $OUT/versions.txt 2>&1
job() {
  name=$1; entry=$2; subject=$3; checks=$4
  sel=(--checks "$checks"); [ "$checks" = all ] && sel=()
  t0=$(date +%s)
  timeout ${LIMIT:-230} $B/samplecheck qualify --exec "python3 -m samplecheck_subject.run samplecheck_subject.adapters.$entry" \
    --subject "$subject" "${sel[@]}" --budget ${BUDGET:-quick} --seed ${SEED:-20261130} --timeout ${LIMIT:-230} \
    --report-dir $OUT/r-$name > $OUT/$name.txt 2>&1
  rc=$?
  { echo "== $name ($subject, $checks): rc $rc, $(( $(date +%s) - t0 )) s"; grep -v -e Traceback -e '^  ' -e matplotlib $OUT/$name.txt | tail -n 45; } >> $OUT/summary.txt
}
export -f job
export B
echo "$JOBS" | grep -v '^$' | xargs -P ${PAR:-4} -L 1 bash -c 'job $0 $1 $2 $3'
tar czf $OUT/reports.tgz -C $OUT $(cd $OUT && ls -d r-* *.txt 2>/dev/null | grep -v summary) 2>/dev/null
rm -rf $OUT/r-* $(ls $OUT/*.txt | grep -v -e summary -e versions)
