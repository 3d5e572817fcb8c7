#!/usr/bin/env bash
# Failed checks replay to the same numbers, and the same seed gives the same report
# while another process loads the machine.
#   replay_test.sh SAMPLECHECK WORKDIR
sc=$1
work=$2
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

# The same seed under load: the table without its time column is identical.
table() { "$sc" qualify --subject cpu.multinomial --checks goodness_of_fit,tail,offset_advancement \
  | awk '{ $NF = ""; print }' | grep -v '^PASS\|^FAIL'; }
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
