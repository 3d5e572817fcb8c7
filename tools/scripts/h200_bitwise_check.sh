#!/usr/bin/env bash
# Checks a change to the CUDA subjects on a GPU machine against the build before it, bit for
# bit: the GPU test programs, compute-sanitizer (memcheck, racecheck) on every subject's
# small mixed batch, the SGLang seeded max-hash probe, `samplecheck fingerprint` of every
# CUDA sampler and matmul with both builds compared, and a standard shard of
# cuda.dual_pivot_logits with GPU memory per process sampled every 3 s.
#
#   OUT=DIR [DEADLINE=560] tools/scripts/h200_bitwise_check.sh
#
# Carried in (docs/h200/2026-12-04.md): .gpu/bin (samplecheck and its subject host, this
# tree), .gpu/old (the same two of the tree before the change), .gpu/tests (kernels_cuda_*
# and matmul_gpu_test), carry/sglang (tools/scripts/extract_shipped.py). Results under OUT,
# with OUT/times.txt naming each step's exit status and seconds.
set -u
cd "$(dirname "$0")/../.." || exit 2
: "${OUT:?set OUT to the results folder}"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$(date +%s); DEADLINE=${DEADLINE:-560}
left() { echo $(( DEADLINE - ($(date +%s) - t0) )); }
stamp() { echo "$1 rc=$2 $(( $(date +%s) - $3 )) s" >> $OUT/times.txt; }
nvidia-smi > $OUT/machine.txt 2>&1
(while true; do echo "# $(date +%T)"; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader; sleep 3; done) > $OUT/apps.txt 2>&1 &
smi=$!
new=.gpu/bin/samplecheck; old=.gpu/old/samplecheck
# The chunked subject's standard shard, beside the rest (memory per process from apps.txt).
s=$(date +%s); mkdir -p $OUT/shard
(timeout 420 $new qualify --subject cuda.dual_pivot_logits --budget standard --seed 47 --shard 0/3 -q \
   --fixtures fixtures --report-dir $OUT/shard > $OUT/shard/out.txt 2>&1; echo "shard rc=$? $(( $(date +%s) - s )) s" >> $OUT/times.txt) &
shard=$!
for t in kernels_cuda_samplers kernels_cuda_mutants kernels_cuda_graph kernels_cuda_gumbel_bounds matmul_gpu_test; do
  s=$(date +%s); timeout 150 .gpu/tests/$t --fixtures fixtures > $OUT/t_$t.log 2>&1; stamp $t $? $s
done
for tool in memcheck racecheck; do
  s=$(date +%s); timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 9 \
    .gpu/tests/kernels_cuda_samplers --fixtures fixtures "[sanitize]" > $OUT/san_$tool.log 2>&1; stamp san_$tool $? $s
done
s=$(date +%s); SAMPLECHECK_SGLANG_TREE=carry/sglang PYTHONPATH=python timeout 120 \
  python3 tools/scripts/h200_probes/sglang_seeded_max_hash.py $OUT/probe > $OUT/probe.log 2>&1; stamp probe $? $s
mkdir -p $OUT/fp/old $OUT/fp/new
fp() {  # subject, extra args
  local n=${1//[:.]/_}
  for v in old new; do
    [ "$(left)" -gt 40 ] || { echo "fp $1 skipped: time" >> $OUT/times.txt; return; }
    local b=$new; [ $v = old ] && b=$old
    s=$(date +%s); timeout 60 $b fingerprint --subject $1 "${@:2}" --fixtures fixtures -o $OUT/fp/$v/$n.json > $OUT/fp/$v/$n.log 2>&1; stamp "fp_$v $1" $? $s
  done
  $new fingerprint --compare $OUT/fp/old/$n.json $OUT/fp/new/$n.json --no-rerun > $OUT/fp/cmp_$n.log 2>&1
  echo "COMPARE $1 rc=$? $(tail -1 $OUT/fp/cmp_$n.log)" >> $OUT/times.txt
}
MS="--m 1,2,3,7,16,17,33,64,65,128,129,257,1024,1025,2048"
for s in cuda.dual_pivot_logits cuda.dual_pivot_topk_first cuda.dual_pivot cuda.dual_pivot_cluster cuda.multinomial_split cuda.gumbel_probs cuda.gumbel_logits cuda.multinomial cuda.sort_filter cuda.dual_pivot_deterministic; do fp $s; done
for s in cuda.persistent_mma cuda.segmented_mma cuda.persistent cuda.segmented; do fp $s $MS; done
for s in cuda.dual_pivot:S01 cuda.dual_pivot_topk_first:S16; do fp $s; done; fp cuda.segmented:B04 $MS
wait $shard
kill $smi
tar czf /tmp/r.tgz -C $OUT . && mv /tmp/r.tgz $OUT/results.tgz
cat $OUT/times.txt
