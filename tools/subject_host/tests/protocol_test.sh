#!/usr/bin/env bash
# protocol_test.sh SAMPLECHECK PROTOCOL_SUBJECT SUBJECT_HOST FORGE_PLUGIN SEGFAULT_PLUGIN LOOP_PLUGIN
#                  TRUNCATE_PLUGIN
#
# The subject-process protocol end to end, one row per case: what samplecheck is asked,
# the exit status it must give and the words its output must hold (all of them, '|'
# separated). A faulty subject fails its checks while the battery goes on (other checks
# still pass); a subject with no usable hello is a clear usage error (2).
set -u
samplecheck=$1 subject=$2 host=$3 forge=$4 segfault=$5 loop=$6 truncate=$7
quick=(--budget quick)
# The faulty subjects run a few checks, enough to show the battery going on past a
# failure (a check before the fault passes, later ones restart the subject); the
# correct subject runs the whole quick battery. The slot-keyed one draws more than one
# call of 65,536 outputs a row in goodness_of_fit: its slots repeat across calls, and only
# the seeds the battery keys by subsequence keep those draws independent (run_call).
few="--checks support,degenerate_rows,replay,batch_reorder"
failures=0
# name | exit | words | arguments
cases=(
  "ok|0|PASS|--exec '$subject ok'"
  "crash|1|signal 11 (Segmentation fault)|pass |--exec '$subject crash' $few"
  "hang|1|TIMEOUT|not run: the subject hung in 2 checks|--exec '$subject hang' --timeout 2 $few,parallel_samples,tail"
  "exit0|1|exited with status 0 before replying|pass |--exec '$subject exit0' $few"
  "garbage|1|malformed reply to sample request 3: a frame that is not JSON|--exec '$subject garbage' $few"
  "bad_token|1|out_token[0] = 32000 is outside [0, 32000)|--exec '$subject bad_token' $few"
  "never_samples|1|never wrote out_valid|--exec '$subject never_samples' $few"
  "wrong_version|2|field protocol is 2, a version this samplecheck does not speak|--exec '$subject wrong_version'"
  "bad_descriptor|2|field philox_outputs_per_call is 0, must be >= 1|--exec '$subject bad_descriptor'"
  "slot|0|per_request_seeds [f32] [n/a]: the subject declares rng_policy batch_slot|batch_reorder [f32] [n/a]|goodness_of_fit [f32]       pass|stream_position [f32]       pass|--exec '$subject slot' --checks per_request_seeds,batch_reorder,replay,goodness_of_fit,stream_position"
  "rule|0|stream_agreement [f32]      pass|stream_position [f32]       pass|--exec '$subject rule' --checks stream_agreement,stream_position,goodness_of_fit"
  "rule_slot|0|stream_agreement [f32]      pass|(batch_slot: stream (sent seed, slot r, offset))|--exec '$subject rule_slot' --checks stream_agreement,replay -v"
  "ok_no_rule|0|stream_agreement [f32] [n/a]: uniform_rule undeclared|--exec '$subject ok' --checks stream_agreement,replay"
  "sum_one|0|tail [f32]                  pass|support [f32]               pass|--exec '$subject sum_one' --checks tail,support"
  "no_renorm|1|tail [f32]                  FAIL|row 'subnormal unfiltered'|--exec '$subject no_renorm' --checks tail"
  "output_params|0|parameter_routing [f32] [n/a]: the subject declares parameter_indexing output_row|--exec '$subject output_params' --checks parameter_routing,replay"
  "matmul|0|PASS|--exec '$subject matmul' --m 1,2,3,17 --shape 24x40,8x7"
  "stderr_tail|1|the tail of its stderr: protocol_subject: crash at request 3|--exec '$subject crash' $few"
  "host|0|PASS|--exec '$host --in-tree cpu.multinomial' --checks support,replay,goodness_of_fit"
  "allreduce|0|message_invariance          pass|run_to_run                  pass|--exec '$subject allreduce'"
  "allreduce_size_switch|1|message_invariance          FAIL|its bits follow the message it travels in|run_to_run                  pass|--exec '$subject allreduce_size_switch'"
  "allreduce_disagree|1|run_to_run                  FAIL|the ranks disagree: element 0 of rank 1|--exec '$subject allreduce_disagree'"
  "host_collective|0|message_invariance          pass|--exec '$host --in-tree cpu.allreduce.fixed_order'"
  "forge|1|support [f32]               FAIL|malformed reply to sample request 1|--plugin $forge --checks support,replay"
  "segfault_entry|2|crashed: signal 11 (Segmentation fault) before its hello|--plugin $segfault"
  "loop_entry|2|sent no hello within 2 s|--plugin $loop --handshake-timeout 2"
  "truncate|1|support [f32]               FAIL|ftruncate of the shared region: Operation not permitted|--exec '$subject truncate' --checks support,replay"
  "truncate_plugin|1|support [f32]               FAIL|Operation not permitted|--plugin $truncate --checks support,replay"
  "scribble|1|support [f32]               FAIL|subject protocol.scribble wrote into an array it only reads (it declares inputs preserved): seed[0] changed from|--exec '$subject scribble' --checks support,replay"
  "in_place|0|support [f32]               pass|replay [f32]                pass|--exec '$subject in_place' --checks support,replay"
  "x08|1|support [f32]               FAIL|offset[0] changed from|--subject cpu.multinomial:X08 --checks support"
  "bad_name|2|field name holds a control character|--exec '$subject bad_name'"
  "long_name|2|field name is 200 bytes long, more than 128|--exec '$subject long_name'"
  "many|2|field subjects holds 5000 subjects, more than the 256|--exec '$subject many'"
  "keyed_rule|2|field uniform_rule is inverse_cdf_u53, which is stated on the Philox stream|--exec '$subject keyed_rule'"
  "zero_logits|2|field degenerate_rows is treat_as_zero, which needs input_kind probs|--exec '$subject zero_logits'"
  "bad_rng|2|field rng_policy is \"request_hashed\", not one of|\"request_keyed\"|--exec '$subject bad_rng'"
  "routes_no_top_k|2|field num_routes is 2, but routes state tie policies|--exec '$subject routes_no_top_k'"
  "bad_route_policy|2|field routes[0].tie_policy is \"highest\"|--exec '$subject bad_route_policy'"
)
for row in "${cases[@]}"; do
  IFS='|' read -r -a f <<<"$row"
  name=${f[0]} want=${f[1]} args=${f[${#f[@]}-1]}
  words=("${f[@]:2:${#f[@]}-3}")
  out=$(eval "timeout 300 \"$samplecheck\" qualify ${quick[*]} $args" 2>&1)
  rc=$?
  ok=1
  [ "$rc" -eq "$want" ] || ok=0
  for w in "${words[@]}"; do grep -qF -- "$w" <<<"$out" || { ok=0; echo "  missing: $w"; }; done
  if [ $ok -eq 1 ]; then
    echo "ok   $name (exit $rc)"
  else
    echo "FAIL $name: exit $rc, want $want; output tail:"
    tail -n 15 <<<"$out" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
done
# Replay goes through the same path: a failed --exec check replays from its record.
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$samplecheck" qualify "${quick[@]}" --exec "$subject bad_token" --checks support --repro-dir "$dir" >/dev/null 2>&1
record=$(ls "$dir"/*.json 2>/dev/null | head -n 1)
# A record never runs its command by itself: replay refuses (exit 2) until the user names it.
"$samplecheck" replay "$record" >/dev/null 2>&1
refused=$?
out=$("$samplecheck" replay "$record" --exec "$subject bad_token" 2>&1)
rc=$?
if [ -n "$record" ] && [ $refused -eq 2 ] && [ $rc -eq 1 ] && grep -qF "REPRODUCED" <<<"$out" \
   && ! grep -qF "NOT REPRODUCED" <<<"$out" && grep -qF '"exec"' "$record"; then
  echo "ok   replay of an --exec record (exit $rc)"
else
  echo "FAIL replay of an --exec record: exit $rc (without --exec: $refused)"; tail -n 8 <<<"$out"; failures=$((failures + 1))
fi
# The report says why the subnormal row was not sent to a subject that assumes rows sum to 1.
"$samplecheck" qualify "${quick[@]}" --exec "$subject sum_one" --checks tail --report-dir "$dir/sum_one" \
  >/dev/null 2>&1
if grep -qF "the subnormal row (FTZ, S13) not sent" "$dir/sum_one/report.json" 2>/dev/null; then
  echo "ok   sum_one's report says the subnormal row was not sent"
else
  echo "FAIL sum_one's report.json lacks the reason the subnormal row was not sent"
  failures=$((failures + 1))
fi
# Text from a subject is data: escape codes arrive escaped, and a 1 MB message is cut in the
# table but whole in report.json.
out=$("$samplecheck" qualify "${quick[@]}" --exec "$subject loud" --checks support,replay \
  --report-dir "$dir/loud" 2>&1)
rc=$?
detail=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(max(len(c["detail"]) for c in r["runs"][0]["checks"]))' "$dir/loud/report.json" 2>/dev/null)
if [ $rc -eq 1 ] && ! grep -q $'\x1b' <<<"$out" && grep -qF '\x1b[31mred' <<<"$out" \
   && [ ${#out} -lt 20000 ] && grep -qF "more bytes in the report's record" <<<"$out" \
   && [ "${detail:-0}" -gt 1000000 ] && ! grep -q $'\x1b' "$dir/loud/report.json" "$dir/loud/junit.xml"; then
  echo "ok   loud: escape codes escaped, the message cut in the table (${#out} bytes), whole in report.json"
else
  echo "FAIL loud: exit $rc, ${#out} bytes of output, longest detail in report.json ${detail:-none}"
  head -c 600 <<<"$out" | cat -v; echo; failures=$((failures + 1))
fi
# A helper that left the subject's session (setsid) does not outlive the run.
SAMPLECHECK_TEST_HELPER_PID="$dir/helper.pid" "$samplecheck" qualify "${quick[@]}" --exec "$subject setsid" \
  --checks support \
  >/dev/null 2>&1 </dev/null
helper=$(cat "$dir/helper.pid" 2>/dev/null)
if [ -n "$helper" ] && ! kill -0 "$helper" 2>/dev/null; then
  echo "ok   setsid: the subject's helper (pid $helper) ended with the run"
else
  echo "FAIL setsid: the subject's helper (pid ${helper:-never written}) outlived the run"
  [ -n "$helper" ] && kill -9 "$helper" 2>/dev/null
  failures=$((failures + 1))
fi
echo "$failures case(s) failed"
[ $failures -eq 0 ]
