#!/usr/bin/env bash
# Fingerprints: the same subject twice is identical; a planted batch-variant mutant
# against its correct host is found, first divergence where the defect acts; a
# manifest of another plan is refused as incomparable (exit 2); a subject process
# (--exec) hashes as the same kernel in-tree does, and --compare re-runs it.
#   fingerprint_test.sh SAMPLECHECK WORKDIR SUBJECT_HOST
sc=$1
work=$2
host=$3
source "$(dirname "$0")/test_lib.sh" "$work"
plan=(--shape 4096x4096 --m 1,2,63,64,65,66 --columns 1024)

"$sc" fingerprint --subject cpu.segmented "${plan[@]}" -o "$work/a.json" >/dev/null &&
  "$sc" fingerprint --subject cpu.segmented "${plan[@]}" -o "$work/b.json" >/dev/null ||
  bad "fingerprint of cpu.segmented failed"
out=$("$sc" fingerprint --compare "$work/a.json" "$work/b.json")
[ $? -eq 0 ] && grep -q '^identical: ' <<<"$out" && ok "cpu.segmented twice: identical (exit 0)" ||
  bad "cpu.segmented twice: $out"

# B01 splits K in two above M = 64: every entry up to M = 64 is equal, the first
# divergence is at M > 64 and names a row, a column and two different bit patterns.
"$sc" fingerprint --subject cpu.segmented:B01 "${plan[@]}" -o "$work/b01.json" >/dev/null
out=$("$sc" fingerprint --compare "$work/a.json" "$work/b01.json")
rc=$?
echo "$out"
m=$(sed -n 's/^first divergence: .*M = \([0-9]*\),.*/\1/p' <<<"$out")
bits=$(sed -n 's/^  row [0-9]*, column [0-9]*: \(0x[0-9a-f]*\) vs \(0x[0-9a-f]*\) .*/\1 \2/p' <<<"$out")
if [ $rc -eq 1 ] && [ -n "$m" ] && [ "$m" -gt 64 ] && [ -n "$bits" ] && [ "${bits% *}" != "${bits#* }" ]; then
  ok "B01 vs cpu.segmented: first divergence at M = $m > 64, bits $bits"
else
  bad "B01 vs cpu.segmented (exit $rc, M '$m', bits '$bits')"
fi

# X02 chunks its scan below B = 16 only: the first diverging batch is smaller than 16.
"$sc" fingerprint --subject cpu.dual_pivot --vocab-size 16384 -o "$work/dp.json" >/dev/null
"$sc" fingerprint --subject cpu.dual_pivot:X02 --vocab-size 16384 -o "$work/x02.json" >/dev/null
out=$("$sc" fingerprint --compare "$work/dp.json" "$work/x02.json")
rc=$?
echo "$out"
b=$(sed -n 's/^first divergence: dtype [a-z0-9]*, batch size \([0-9]*\):.*/\1/p' <<<"$out")
if [ $rc -eq 1 ] && [ -n "$b" ] && [ "$b" -lt 16 ] && grep -q '^  slot [0-9]* (request [0-9]*): token [0-9]* vs token [0-9]*' <<<"$out"; then
  ok "X02 vs cpu.dual_pivot: first divergence at batch size $b < 16, slot and tokens named"
else
  bad "X02 vs cpu.dual_pivot (exit $rc, batch size '$b')"
fi

# --repeat: the same process twice. cpu.segmented repeats its bits; S16 (its renorm
# total summed in a new order every call) does not, and the entry is named.
out=$("$sc" fingerprint --subject cpu.segmented --shape 32x1001 --m 1,2,3 --repeat 2 -o "$work/r.json")
[ $? -eq 0 ] && grep -q "(2 identical repeats)" <<<"$out" && ok "cpu.segmented --repeat 2: identical" ||
  bad "cpu.segmented --repeat 2: $out"
out=$("$sc" fingerprint --subject cpu.dual_pivot_topk_first:S16 --vocab-size 16384 --repeat 2 -o "$work/s16.json")
[ $? -eq 1 ] && grep -q "repeat 2 differs from the first in [0-9]* of 102 entries; first: dtype" <<<"$out" &&
  ok "S16 --repeat 2: the repeat differs ($out)" || bad "S16 --repeat 2: $out"

# The same kernel through --exec (the subject host speaking the protocol): identical
# hashes; against X02 through --exec, the divergence is re-run through the command.
"$sc" fingerprint --exec "$host --in-tree cpu.dual_pivot" --vocab-size 16384 -o "$work/dp_exec.json" \
  >/dev/null || bad "fingerprint --exec failed"
out=$("$sc" fingerprint --compare "$work/dp.json" "$work/dp_exec.json")
[ $? -eq 0 ] && grep -q '^identical: ' <<<"$out" && ok "cpu.dual_pivot in-tree and --exec: identical" ||
  bad "cpu.dual_pivot in-tree vs --exec: $out"
"$sc" fingerprint --exec "$host --in-tree cpu.dual_pivot:X02" --vocab-size 16384 -o "$work/x02_exec.json" \
  >/dev/null
out=$("$sc" fingerprint --compare "$work/dp_exec.json" "$work/x02_exec.json" --trust-record)
[ $? -eq 1 ] && grep -q '^  slot [0-9]* (request [0-9]*): token [0-9]* vs token [0-9]*' <<<"$out" &&
  ok "X02 --exec vs cpu.dual_pivot --exec: the divergence re-run through the commands" ||
  bad "X02 --exec vs --exec: $out"
# Without --trust-record a manifest's command never runs: the verdict stands, the
# re-run is declined naming the command. An exec field added to an in-tree manifest too.
out=$("$sc" fingerprint --compare "$work/dp_exec.json" "$work/x02_exec.json")
[ $? -eq 1 ] && grep -qF "names --exec '$host --in-tree cpu.dual_pivot'; not run" <<<"$out" &&
  ok "--compare without --trust-record: the recorded command is shown, not run" ||
  bad "--compare of --exec manifests without --trust-record: $out"
python3 -c "import json, sys; m = json.load(open(sys.argv[1])); m['plugin'] = {'exec': sys.argv[2]}
json.dump(m, open(sys.argv[3], 'w'))" "$work/b01.json" "touch $work/ran" "$work/b01_exec.json"
out=$("$sc" fingerprint --compare "$work/a.json" "$work/b01_exec.json")
[ $? -eq 1 ] && [ ! -e "$work/ran" ] && grep -qF "names --exec 'touch $work/ran'; not run" <<<"$out" &&
  ok "an exec field added to an in-tree manifest is not run" || bad "manifest with exec: $out"
out=$("$sc" fingerprint --exec "$host --in-tree cpu.dual_pivot" --subject cpu.dual_pivot \
  --compare "$work/dp.json" "$work/dp_exec.json" 2>&1)
[ $? -eq 2 ] && ok "--compare with --exec: usage error (exit 2)" || bad "--compare with --exec: $out"

# Another plan: incomparable, exit 2, the differing field named.
"$sc" fingerprint --subject cpu.segmented --shape 4096x4096 --m 1,2 -o "$work/other.json" >/dev/null
out=$("$sc" fingerprint --compare "$work/a.json" "$work/other.json" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "incomparable: their plans differ in 'batch_sizes'" <<<"$out" &&
  ok "a manifest of another plan is refused as incomparable (exit 2)" || bad "other plan (exit $rc): $out"

finish
