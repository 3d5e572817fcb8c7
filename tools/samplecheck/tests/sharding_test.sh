#!/usr/bin/env bash
# Sharded qualification (docs/sharding.md): three shards merged give the unsharded run's
# verdicts, p-values and Holm levels bit for bit, on a correct sampler and on a mutant,
# which is still killed; a missing shard is not judged, never a pass; bad --shard values
# and mismatched, duplicated or malformed shard files exit 2 naming the flag or the file
# and field; the Slurm and Kubernetes launchers run the shard their variables name.
#   sharding_test.sh SAMPLECHECK WORKDIR SOURCE_DIR PYTHON (the build's, with jsonschema)
sc=$1
work=$2
src=$3
py=$4
source "$(dirname "$0")/test_lib.sh" "$work"

# The rows of a report.json (every field but times), one JSON line each: equal lines are
# bit-equal p-values and Holm levels (JSON keeps a double's shortest exact spelling).
rows() {
  python3 -c 'import json, sys
for run in json.load(open(sys.argv[1]))["runs"]:
    for c in run["checks"]:
        for t in ("seconds", "subject_seconds", "judge_seconds", "repro_path"): c.pop(t)
        print(json.dumps(c, sort_keys=True))' "$1"
}
field() { python3 -c 'import json, sys; print(eval("json.load(open(sys.argv[1]))" + sys.argv[2]))' "$@"; }

# 1. Bad --shard values: exit 2 naming the flag, before anything runs.
for value in 0/0 3/2 -1/2 x 2/2 1/3/4 ""; do
  out=$("$sc" qualify --subject cpu.multinomial --shard "$value" 2>&1)
  status=$?
  [ $status -eq 2 ] && grep -qF -- "--shard: '" <<<"$out" && ok "--shard '$value' refused (exit 2)" ||
    bad "--shard '$value' (exit $status): $out"
done

# 2. Unsharded and three shards, on a correct sampler and on S10 (outputs of one input row
#    share a draw: parallel_samples, a statistical kill through the shared Holm budget).
sharded_equals_unsharded() {  # SUBJECT WANT_STATUS
  local subject=$1 want=$2 name=${1//:/_} status i
  "$sc" qualify --subject "$subject" --quiet --report-dir "$work/$name.full" >"$work/$name.full.txt" 2>&1
  status=$?
  [ $status -eq "$want" ] || bad "$subject unsharded: exit $status, want $want"
  for i in 0 1 2; do
    "$sc" qualify --subject "$subject" --quiet --shard "$i/3" --report-dir "$work/$name.$i" \
      >"$work/$name.$i.txt" 2>&1
  done
  "$sc" merge "$work/$name".{0,1,2}/report.json --report-dir "$work/$name.merged" >"$work/$name.merged.txt" 2>&1
  status=$?
  [ $status -eq "$want" ] && ok "$subject: 3 shards merged exit $want, as unsharded" ||
    bad "$subject merged: exit $status, want $want: $(tail -n 3 "$work/$name.merged.txt")"
  if [ -s "$work/$name.full/report.json" ] && [ -s "$work/$name.merged/report.json" ] &&
    diff <(rows "$work/$name.full/report.json") <(rows "$work/$name.merged/report.json") >"$work/$name.diff"; then
    ok "$subject: merged rows equal the unsharded rows bit for bit ($(rows "$work/$name.full/report.json" | wc -l) rows)"
  else
    bad "$subject: merged rows differ: $(head -n 4 "$work/$name.diff")"
  fi
}
sharded_equals_unsharded cpu.multinomial 0
sharded_equals_unsharded cpu.multinomial:S10 1
grep -q '^parallel_samples \[f32\] *FAIL' "$work/cpu.multinomial_S10.merged.txt" &&
  ok "S10 killed through shard + merge (parallel_samples FAIL)" || bad "S10 not killed by parallel_samples"
# The merge recomputed Holm: a shard alone compares its rows with lower levels (the other
# shards' rows count as p = 1), the merge with the unsharded run's.
lower=$(python3 -c 'import json, sys
full = {(c["check"], c["dtype"]): c["alpha_share"] for c in json.load(open(sys.argv[1]))["runs"][0]["checks"]}
print(sum(c["alpha_share"] is not None and c["alpha_share"] < full[(c["check"], c["dtype"])]
          for f in sys.argv[2:] for c in json.load(open(f))["runs"][0]["checks"]))' \
  "$work/cpu.multinomial_S10.full/report.json" "$work"/cpu.multinomial_S10.{0,1,2}/report.json)
[ "${lower:-0}" -gt 0 ] && ok "S10: $lower rows had lower Holm levels in their shard than merged" ||
  bad "S10: no shard row had a lower Holm level ($lower): the merge recomputed nothing"
# Each shard judged part of the plan, and together all of it.
counts=$(for i in 0 1 2; do field "$work/cpu.multinomial.$i/report.json" '["runs"][0]["checks"].__len__()'; done | tr '\n' ' ')
[ "$counts" = "17 17 17 " ] && ok "the 51 rows split 17/17/17" || bad "rows per shard: $counts"

# 3. A missing shard: INCOMPLETE, exit 1, the shard named; never PASS.
out=$("$sc" merge "$work"/cpu.multinomial.{0,2}/report.json --report-dir "$work/missing" 2>&1)
status=$?
[ $status -eq 1 ] && grep -q '^INCOMPLETE' <<<"$out" && grep -qF 'shard 1/3 missing' <<<"$out" &&
  [ "$(field "$work/missing/report.json" '["runs"][0]["verdict"]')" = INCOMPLETE ] &&
  [ "$(field "$work/missing/report.json" '["runs"][0]["shard"]["missing"]')" = "[1]" ] &&
  ok "shard 1/3 missing: INCOMPLETE, exit 1, report.json names it" ||
  bad "missing shard (exit $status): $(tail -n 3 <<<"$out")"

# Shards that found no device (every row skipped, as a GPU subject's shards on a host
# without one): the merge is skipped (77), never PASS.
for i in 0 1 2; do
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for c in d["runs"][0]["checks"]:
    if c["verdict"] != "n/a": c["verdict"] = "skipped"
for h in d["runs"][0]["shard"]["holm_inputs"].values(): h.update(p_value=None, skipped="did not run", decides=False)
json.dump(d, open(sys.argv[2], "w"))' "$work/cpu.multinomial.$i/report.json" "$work/nodevice.$i.json"
done
out=$("$sc" merge "$work"/nodevice.{0,1,2}.json 2>&1)
status=$?
[ $status -eq 77 ] && grep -q '^SKIPPED' <<<"$out" && ok "shards without a device merge to SKIPPED (77)" ||
  bad "shards without a device (exit $status): $(tail -n 2 <<<"$out")"

# The shard and merged reports, complete and not, are valid against the schema.
if "$py" - "$src/docs/report-schema.json" "$work/cpu.multinomial.0/report.json" \
  "$work/cpu.multinomial_S10.merged/report.json" "$work/missing/report.json" <<'PY'; then
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
for path in sys.argv[2:]:
    jsonschema.validate(json.load(open(path)), schema)
PY
  ok "a shard's, a merged and an incomplete report.json are valid against docs/report-schema.json"
else
  bad "a report.json is not valid against docs/report-schema.json"
fi
# 4. Files that cannot be merged: exit 2 naming the file and the field.
s0=$work/cpu.multinomial.0/report.json
s1=$work/cpu.multinomial.1/report.json
edit() {  # NAME PYTHON-STATEMENT-ON-d: a copy of shard 1 with one field changed
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(d, open(sys.argv[3], "w"))' "$s1" "$2" "$work/$1.json"
}
edit seed 'd["runs"][0]["seed"] = 7'
edit budget 'd["runs"][0]["budget"] = "standard"'
edit count 'd["runs"][0]["shard"]["count"] = 4'
edit version 'd["samplecheck"]["version"] = "0.0.0"'
edit pvalue 'next(iter(d["runs"][0]["shard"]["holm_inputs"].values()))["p_value"] = "small"'
edit row 'd["runs"][0]["checks"].pop()'
edit verdict 'd["runs"][0]["checks"][0]["verdict"] = "maybe"'
edit unsharded 'del d["runs"][0]["shard"]'
edit subject 'd["runs"][0]["subject"] = "cpu.multinomial:S10"'
printf '{"format": "samplecheck-report", "runs": [' >"$work/truncated.json"
refused() {  # WHAT FILE TEXT
  out=$("$sc" merge "$s0" "$2" 2>&1)
  status=$?
  [ $status -eq 2 ] && grep -qF -- "'$2'" <<<"$out" && grep -qF -- "$3" <<<"$out" &&
    ok "$1: exit 2 naming the file and $3" || bad "$1 (exit $status): $out"
}
refused "another seed" "$work/seed.json" "runs[0].seed: 7 differs"
refused "another budget" "$work/budget.json" "runs[0].budget"
refused "another shard count" "$work/count.json" "shard.count: 4 differs"
refused "another samplecheck" "$work/version.json" "samplecheck.version"
refused "a p-value not a number" "$work/pvalue.json" ".p_value: is not a number"
refused "a row short" "$work/row.json" "runs[0].checks: holds 16 rows"
refused "an unknown verdict" "$work/verdict.json" "verdict 'maybe'"
refused "an unsharded report" "$work/unsharded.json" "runs[0].shard: missing"
refused "another subject" "$work/subject.json" "runs[0].subject"
refused "a truncated file" "$work/truncated.json" "is not JSON"
refused "shard 0 twice" "$work/cpu.multinomial.0/report.json" "shard.index: shard 0/3 again"
out=$("$sc" merge "$s0" "$work/cpu.multinomial_S10.1/report.json" 2>&1)
[ $? -eq 2 ] && grep -qF "runs[0].subject" <<<"$out" && ok "a mutant's shard with a correct one's: exit 2" ||
  bad "mixed subjects: $out"
# A name read from a file is data: an escape code in it is shown escaped, never sent raw.
edit escape 'd["runs"][0]["subject"] = "cpu.multinomial\x1b[31m"'
out=$("$sc" merge "$work/escape.json" 2>&1)
! grep -q $'\x1b' <<<"$out" && grep -qF 'cpu.multinomial\x1b[31m: shard 0/3 missing' <<<"$out" &&
  ok "an escape code in a shard's subject is shown escaped" || bad "escape code: $(cat -v <<<"$out")"

# 5. The launchers derive the shard from the scheduler's variables and run that shard:
#    its rows are the ones `--shard i/3` gives.
launch() {  # NAME ENV... : runs the launcher with the environment given
  local name=$1
  shift
  env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX -u SAMPLECHECK_SHARDS SAMPLECHECK="$sc" "$@" \
    >"$work/$name.txt" 2>&1
}
same_shard() {  # WHAT DIR INDEX
  if [ -s "$2/report.json" ] && diff <(rows "$2/report.json") <(rows "$work/cpu.multinomial.$3/report.json") >/dev/null &&
    [ "$(field "$2/report.json" '["runs"][0]["shard"]["index"]')" = "$3" ]; then
    ok "$1 ran shard $3/3 (its rows are --shard $3/3's)"
  else
    bad "$1 did not run shard $3/3: $(tail -n 3 "$work/$(basename "$2").txt" 2>/dev/null)"
  fi
}
launch slurm SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=3 \
  bash "$src/tools/scripts/shard_qualify.sh" "$work/slurm" --subject cpu.multinomial --quiet
same_shard "Slurm task 3 of array 1-3" "$work/slurm/shard-2-of-3" 2
launch sbatch SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=3 \
  SLURM_SUBMIT_DIR="$src" OUT="$work/sbatch" bash "$src/tools/scripts/slurm_qualify.sbatch" \
  --subject cpu.multinomial --quiet
same_shard "slurm_qualify.sbatch, task 0 of array 0-2" "$work/sbatch/shard-0-of-3" 0
launch k8s JOB_COMPLETION_INDEX=1 SAMPLECHECK_SHARDS=3 \
  bash "$src/tools/scripts/shard_qualify.sh" "$work/k8s" --subject cpu.multinomial --quiet
same_shard "Kubernetes index 1 of 3" "$work/k8s/shard-1-of-3" 1
out=$("$sc" merge "$work/sbatch/shard-0-of-3/report.json" "$work/k8s/shard-1-of-3/report.json" \
  "$work/slurm/shard-2-of-3/report.json" 2>&1)
[ $? -eq 0 ] && grep -q '^PASS' <<<"$out" && ok "the launchers' three shards merge to PASS" ||
  bad "merge of the launchers' shards: $(tail -n 3 <<<"$out")"
# The Job's completions and SAMPLECHECK_SHARDS agree (Kubernetes passes only the index).
yaml=$src/tools/scripts/k8s_qualify_job.yaml
[ "$(sed -n 's/^ *completions: *//p' "$yaml")" = "$(grep -A1 'name: SAMPLECHECK_SHARDS' "$yaml" | sed -n 's/.*value: *"\(.*\)"/\1/p')" ] &&
  ok "k8s_qualify_job.yaml: completions = SAMPLECHECK_SHARDS" || bad "k8s_qualify_job.yaml: completions and SAMPLECHECK_SHARDS differ"
for env in "" "SLURM_ARRAY_TASK_ID=1 JOB_COMPLETION_INDEX=1 SAMPLECHECK_SHARDS=3" "JOB_COMPLETION_INDEX=1" \
  "SLURM_ARRAY_TASK_ID=x SLURM_ARRAY_TASK_COUNT=3"; do
  # shellcheck disable=SC2086
  launch refused $env bash "$src/tools/scripts/shard_qualify.sh" "$work/refused" --subject cpu.multinomial
  status=$?
  [ $status -eq 2 ] && [ ! -e "$work/refused" ] && ok "launcher with '${env:-no variable}': exit 2, nothing run" ||
    bad "launcher with '$env' (exit $status): $(cat "$work/refused.txt")"
done
finish
