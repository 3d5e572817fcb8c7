#!/usr/bin/env bash
# Bad samplecheck command lines, end to end: each must exit exactly 2, say on stderr what it
# refused (the option and the value, or the unknown word), and stop before any check runs:
# nothing on stdout (a run prints its table there, even a quick one of 0.4 s) and at once.
#
#   usage: usage_errors.sh path/to/samplecheck
set -u

bin=${1:?usage: usage_errors.sh path/to/samplecheck}
limit_ms=5000    # a usage error exits at once
run_limit_s=10   # a mutants or calibrate run that was not stopped takes minutes: cut it off
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# report WHY ARGS...: one line per case; WHY empty means the case passed.
report() {
  local why=$1 ms=$2
  shift 2
  local shown="${*:-(no arguments)}"
  if [ -z "$why" ]; then
    passed=$((passed + 1))
    printf 'ok    %5d ms  samplecheck %s\n' "$ms" "$shown"
  else
    failed=$((failed + 1))
    printf 'FAIL  %5d ms  samplecheck %s: %s\n' "$ms" "$shown" "$why"
    sed 's/^/        stderr: /' "$tmp/err"
  fi
}

# refused WORD ARGS...: samplecheck ARGS must exit 2, print nothing on stdout, name WORD on stderr.
refused() {
  local word=$1
  shift
  local start rc why=""
  start=$(now_ms)
  timeout -k 2 "$run_limit_s" "$bin" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  local ms=$(($(now_ms) - start))
  if [ "$rc" -ne 2 ]; then why="exit $rc, want 2"
  elif ! grep -qF -- "$word" "$tmp/err"; then why="stderr does not contain \"$word\""
  elif [ -s "$tmp/out" ]; then why="printed to stdout (did a check run?)"
  elif [ "$ms" -gt "$limit_ms" ]; then why="took $ms ms (did a check run?)"
  fi
  report "$why" "$ms" "$@"
}

# accepted WORD ARGS...: samplecheck ARGS must exit 0 with WORD on stdout.
accepted() {
  local word=$1
  shift
  local start rc why=""
  start=$(now_ms)
  timeout -k 2 "$run_limit_s" "$bin" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  local ms=$(($(now_ms) - start))
  if [ "$rc" -ne 0 ]; then why="exit $rc, want 0"
  elif ! grep -qF -- "$word" "$tmp/out"; then why="stdout does not contain \"$word\""
  fi
  report "$why" "$ms" "$@"
}

q=(qualify --subject cpu.multinomial)
refused "--alpha: 'nan'" "${q[@]}" --alpha nan
refused "--alpha: '0.7'" "${q[@]}" --alpha 0.7
refused "--seed: '-1'" "${q[@]}" --seed -1
refused "--seed: '99999999999999999999'" "${q[@]}" --seed 99999999999999999999
refused "--seed: '010'" "${q[@]}" --seed 010
refused "--timeout: 'nan'" "${q[@]}" --timeout nan
refused "--vocab-size: 'abc'" "${q[@]}" --vocab-size abc
refused "huge" "${q[@]}" --budget huge
refused "--frobnicate" "${q[@]}" --frobnicate
refused "--seed" "${q[@]}" --seed
refused "--seed: '010'" mutants --subjects-prefix cpu. --seed 010
refused "--runs: '0'" calibrate --runs 0
refused "--first-seed: '-1'" calibrate --first-seed -1
refused "--fail-below: 'nan'" calibrate --fail-below nan
refused "--jobs: '0'" calibrate --jobs 0
refused "unknown command 'bogus'" bogus
# What the battery cannot judge or write is refused before it starts.
refused "--vocab-size: '16' is below 1024" "${q[@]}" --vocab-size 16
refused "--checks: no check named 'bogus'" "${q[@]}" --checks support,bogus
touch "$tmp/a_file"
refused "--repro-dir $tmp/a_file: not a directory" "${q[@]}" --repro-dir "$tmp/a_file"
refused "--repro-dir /proc/x" "${q[@]}" --repro-dir /proc/x
refused "--repro-dir /dev/full" "${q[@]}" --repro-dir /dev/full
refused "--report-dir $tmp/a_file: not a directory" "${q[@]}" --report-dir "$tmp/a_file"
refused "--report-dir /proc/x" "${q[@]}" --report-dir /proc/x
refused "--report-dir /proc/x" mutants --subjects-prefix cpu. --report-dir /proc/x
refused "--m: '5-3'" qualify --subject cpu.segmented --m 5-3
refused "--shape" qualify --subject cpu.segmented --shape 4096x0
refused "no subject named 'no.such'" qualify --subject no.such
refused "dlopen failed" qualify --plugin /nonexistent/libvendor.so
refused "calibrate: cpu.segmented is a matmul" calibrate --subject cpu.segmented --runs 1
refused "replay: cannot open" replay "$tmp/missing.json"
echo '{"format": "samplecheck-repro", "version": 7}' >"$tmp/v7.json"
refused "field 'version' is 7" replay "$tmp/v7.json"
refused "no command given"
# fingerprint and bisect: every refusal before anything runs.
refused "give -o FILE.json" fingerprint --subject cpu.segmented
refused "no subject named 'no.such'" fingerprint --subject no.such -o "$tmp/f.json"
refused "fingerprint: cannot open" fingerprint --compare "$tmp/missing.json" "$tmp/missing2.json"
refused "--compare" fingerprint --compare "$tmp/only_one.json"
refused "--compare takes two manifests" fingerprint --compare "$tmp/a.json" "$tmp/b.json" -o "$tmp/c.json"
refused "not a fingerprint manifest: field 'format'" fingerprint --compare "$tmp/v7.json" "$tmp/v7.json"
refused "--m: '5-3'" fingerprint --subject cpu.segmented --m 5-3 -o "$tmp/f.json"
refused "--repeat: '0'" fingerprint --subject cpu.segmented --repeat 0 -o "$tmp/f.json"
refused "--report-dir goes with --compare" fingerprint --subject cpu.segmented -o "$tmp/f.json" --report-dir "$tmp/r"
refused "--report-dir /dev/null: not a directory" fingerprint --compare "$tmp/v7.json" "$tmp/v7.json" --report-dir /dev/null
refused "--good" bisect --bad HEAD --build true --check true
refused "is not a git work tree" bisect --good a --bad b --build true --check true --repo /proc
git init -q "$tmp/repo" && git -C "$tmp/repo" -c user.email=t@t.invalid -c user.name=t commit -q --allow-empty -m one
refused "'nosuchrev' is not a commit" bisect --good nosuchrev --bad HEAD --build true --check true --repo "$tmp/repo"
accepted "subjects:" qualify --list
accepted "subjects:" qualify --list --seed 0xffffffffffffffff --alpha 0.5 --timeout 0

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
