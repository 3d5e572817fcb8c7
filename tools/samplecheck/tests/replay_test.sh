#!/usr/bin/env bash
# Failed checks replay to the same numbers, and the same seed gives the same report
# while another process loads the machine.
# A record names a subject process only as data: replay runs the one the command line
# gives, or the recorded one with --trust-record.
#   replay_test.sh SAMPLECHECK WORKDIR SUBJECT_HOST
sc=$1
work=$2
host=$3
source "$(dirname "$0")/test_lib.sh" "$work"

# A statistical kill (S07 drops the token that crosses p: goodness_of_fit) and an exact
# matmul kill (B01 chooses the split from M: batch_invariance), each through --repro-dir.
"$sc" qualify --subject cpu.sort_filter:S07 --checks goodness_of_fit --repro-dir "$work/s07" \
  >"$work/s07.txt" 2>&1
[ $? -eq 1 ] && ok "S07 fails goodness_of_fit (exit 1)" || bad "S07 did not exit 1: $(tail -n 3 "$work/s07.txt")"
"$sc" qualify --subject cpu.segmented:B01 --checks batch_invariance --repro-dir "$work/b01" \
  >"$work/b01.txt" 2>&1
[ $? -eq 1 ] && ok "B01 fails batch_invariance (exit 1)" || bad "B01 did not exit 1: $(tail -n 3 "$work/b01.txt")"
# An exact sampler kill: X07 forms u from the wrong outputs (stream_agreement), in every dtype.
"$sc" qualify --subject cpu.multinomial:X07 --checks stream_agreement \
  --repro-dir "$work/x07" >"$work/x07.txt" 2>&1
[ $? -eq 1 ] && ok "X07 fails stream_agreement (exit 1)" || bad "X07 did not exit 1: $(tail -n 3 "$work/x07.txt")"

for record in "$work"/s07/*.json "$work"/b01/*.json "$work"/x07/*.json; do
  [ -f "$record" ] || { bad "no reproduction file in $(dirname "$record")"; continue; }
  "$sc" replay "$record" >"$record.replay" 2>&1
  status=$?
  if [ $status -eq 1 ] && grep -q '^REPRODUCED$' "$record.replay"; then
    ok "replay $(basename "$record") reproduces (exit 1)"
  else
    bad "replay $(basename "$record") exit $status: $(tail -n 4 "$record.replay")"
  fi
done
# The replayed p-value is the recorded one, digit for digit.
rec=$(ls "$work"/s07/*.json 2>/dev/null | head -n 1)
if [ -n "$rec" ] && grep -q 'p-value: recorded \(.*\), now \1$' "$rec.replay"; then
  ok "S07 replay prints the recorded p-value"
else
  bad "S07 replay p-value differs: $(grep p-value "$rec.replay" 2>/dev/null)"
fi

# A record of an in-tree subject with an exec field added: refused, the command printed
# and not run; the command line's --exec replays it (the recorded one shown beside it);
# --trust-record runs the recorded one.
python3 -c "import json, sys; r = json.load(open(sys.argv[1])); r['exec'] = sys.argv[2]
json.dump(r, open(sys.argv[3], 'w'))" "$rec" "touch $work/ran" "$work/exec.json"
out=$("$sc" replay "$work/exec.json" 2>&1)
status=$?
[ $status -eq 2 ] && grep -qF "names a process to run: --exec 'touch $work/ran'" <<<"$out" &&
  [ ! -e "$work/ran" ] && ok "a record naming a command is refused (exit 2), the command shown, not run" ||
  bad "record with exec (exit $status, ran: $([ -e "$work/ran" ] && echo yes || echo no)): $out"
out=$("$sc" replay "$work/exec.json" --exec "$host --in-tree cpu.sort_filter:S07" 2>&1)
status=$?
[ $status -eq 1 ] && grep -q '^REPRODUCED$' <<<"$out" && [ ! -e "$work/ran" ] &&
  grep -qF "the record names --exec 'touch $work/ran'; running the one given: --exec" <<<"$out" &&
  ok "--exec given: replays through it, the recorded command shown beside" ||
  bad "replay --exec (exit $status): $(tail -n 4 <<<"$out")"
python3 -c "import json, sys; r = json.load(open(sys.argv[1])); r['exec'] = sys.argv[2]
json.dump(r, open(sys.argv[3], 'w'))" "$rec" "$host --in-tree cpu.sort_filter:S07" "$work/trusted.json"
out=$("$sc" replay "$work/trusted.json" --trust-record 2>&1)
status=$?
[ $status -eq 1 ] && grep -q '^REPRODUCED$' <<<"$out" &&
  grep -q "running the process the record names (--trust-record): --exec" <<<"$out" &&
  ok "--trust-record runs the recorded command" || bad "replay --trust-record (exit $status): $(tail -n 4 <<<"$out")"

# The printed reproduce line is one shell word per argument: pasted, it replays.
odd="$work/a folder's records"
"$sc" qualify --subject cpu.sort_filter:S07 --checks goodness_of_fit --repro-dir "$odd" >"$work/odd.txt" 2>&1
line=$(sed -n 's/^ *reproduce: samplecheck //p' "$work/odd.txt" | head -n 1)
out=$(eval "\"\$sc\" $line" 2>&1)
status=$?
[ -n "$line" ] && [ $status -eq 1 ] && grep -q '^REPRODUCED$' <<<"$out" &&
  ok "the reproduce line is shell-quoted: pasted, it replays ($line)" ||
  bad "reproduce line '$line' (exit $status): $(tail -n 2 <<<"$out")"

# The same seed under load: the table without its time and judge columns is identical.
table() { "$sc" qualify --subject cpu.multinomial --checks goodness_of_fit,tail,offset_advancement \
  | awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^[0-9.]+s$/) $i = ""; print }' |
  grep -v '^PASS\|^FAIL'; }
table >"$work/quiet.txt"
( end=$((SECONDS + 60)); while [ $SECONDS -lt $end ]; do :; done ) &
load=$!
table >"$work/loaded.txt"
kill $load 2>/dev/null
if cmp -s "$work/quiet.txt" "$work/loaded.txt"; then
  ok "the same seed gives the same samples and p-values under load"
else
  bad "reports differ under load: $(diff "$work/quiet.txt" "$work/loaded.txt" | head -n 4)"
fi

finish
