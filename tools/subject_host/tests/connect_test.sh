#!/usr/bin/env bash
# connect_test.sh SAMPLECHECK PROTOCOL_SUBJECT PYTHON
#
# --connect end to end (connect_server.py forks one protocol_subject per connection), the
# hello's environment in report.json, --version, --require-device, and what report.json
# and junit.xml say about the run. One line per case; any FAIL fails the test.
set -u
samplecheck=$1 subject=$2 python=$3
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
servers=()
trap 'kill "${servers[@]}" 2>/dev/null; rm -rf "$dir"' EXIT
failures=0
few="--checks support,degenerate_rows,replay,batch_reorder"

serve() {  # serve NAME MODE [--serve-in-listener]: a server at $dir/NAME.sock
  "$python" "$here/connect_server.py" "$dir/$1.sock" "$subject" "$2" "${@:3}" &
  servers+=($!)
  for _ in $(seq 100); do [ -S "$dir/$1.sock" ] && return; sleep 0.05; done
  echo "FAIL the server $1 did not start"; failures=$((failures + 1))
}
expect() {  # expect NAME WANT_EXIT RC OUTPUT WORDS...
  local name=$1 want=$2 rc=$3 out=$4 ok=1
  shift 4
  [ "$rc" -eq "$want" ] || ok=0
  for w in "$@"; do grep -qF -- "$w" <<<"$out" || { ok=0; echo "  missing: $w"; }; done
  if [ $ok -eq 1 ]; then echo "ok   $name (exit $rc)"; else
    echo "FAIL $name: exit $rc, want $want"; tail -n 8 <<<"$out" | sed 's/^/    /'
    failures=$((failures + 1)); fi
}

for mode in ok environment bad_environment hang crash bad_token; do serve $mode $mode; done
serve listener ok --serve-in-listener

out=$("$samplecheck" qualify --connect "$dir/ok.sock" --checks support,replay,goodness_of_fit -q 2>&1)
expect "ok" 0 $? "$out" "PASS"
out=$("$samplecheck" qualify --connect "$dir/environment.sock" --checks support -q \
  --report-dir "$dir/env" 2>&1)
expect "environment" 0 $? "$out" "PASS"
out=$(cat "$dir/env/report.json" "$dir/env/junit.xml" 2>&1)
expect "report says what ran" 0 0 "$out" '"numpy": "1.24.2"' '"python": "3.11.2"' \
  '"plugin_abi"' '"revision"' '"platform"' '"rng_policy"' '"hostname"' \
  '<property name="seed"' '<property name="samplecheck.version"' 'timestamp="'
out=$("$samplecheck" qualify --connect "$dir/bad_environment.sock" -q 2>&1)
expect "bad_environment" 2 $? "$out" "field environment.packages.numpy is not a string"
out=$("$samplecheck" qualify --connect "$dir/hang.sock" --timeout 2 $few,parallel_samples -q 2>&1)
expect "hang" 1 $? "$out" "TIMEOUT" "not run: the subject hung in 2 checks"
out=$("$samplecheck" qualify --connect "$dir/crash.sock" $few -q 2>&1)
expect "crash" 1 $? "$out" "closed its connection" "pass "
out=$("$samplecheck" qualify --connect "$dir/listener.sock" -q 2>&1)
expect "listener" 2 $? "$out" "the listener itself: serve each connection in a forked child"
out=$("$samplecheck" qualify --connect "$dir/none.sock" -q 2>&1)
expect "no server" 2 $? "$out" "connect: No such file or directory"

"$samplecheck" qualify --connect "$dir/bad_token.sock" --checks support -q --repro-dir "$dir/r" \
  >/dev/null 2>&1
record=$(ls "$dir"/r/*.json 2>/dev/null | head -n 1)
out=$("$samplecheck" replay "$record" 2>&1)
expect "replay refuses a --connect record alone" 2 $? "$out" "names a process to run: --connect"
out=$("$samplecheck" replay "$record" --connect "$dir/bad_token.sock" 2>&1)
expect "replay with --connect" 1 $? "$out" "REPRODUCED"

out=$("$samplecheck" --version 2>&1)
expect "--version" 0 $? "$out" "samplecheck " "(revision " "plugin ABI 1." "subject protocol 1"
"$samplecheck" qualify --subject cuda.multinomial --checks support -q >/dev/null 2>&1
plain=$?
if [ $plain -eq 77 ]; then
  out=$("$samplecheck" qualify --subject cuda.multinomial --checks support -q --require-device 2>&1)
  expect "--require-device without a GPU" 1 $? "$out" "device absent"
else
  echo "ok   --require-device: a GPU is here (exit $plain without the flag), nothing to refuse"
fi
[ $failures -eq 0 ] || { echo "$failures case(s) failed"; exit 1; }
