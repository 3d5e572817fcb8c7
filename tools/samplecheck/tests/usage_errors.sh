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

# judged WANT WORD ARGS...: samplecheck ARGS must exit WANT with WORD on stdout (0), or on
# stderr (2: a refusal, which also prints nothing on stdout and stops before any check runs).
judged() {
  local want=$1 word=$2
  shift 2
  local stream=out start rc why=""
  [ "$want" -eq 2 ] && stream=err
  start=$(now_ms)
  timeout -k 2 "$run_limit_s" "$bin" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  local ms=$(($(now_ms) - start))
  if [ "$rc" -ne "$want" ]; then why="exit $rc, want $want"
  elif ! grep -qF -- "$word" "$tmp/$stream"; then why="std$stream does not contain \"$word\""
  elif [ "$want" -eq 2 ] && [ -s "$tmp/out" ]; then why="printed to stdout (did a check run?)"
  elif [ "$want" -eq 2 ] && [ "$ms" -gt "$limit_ms" ]; then why="took $ms ms (did a check run?)"
  fi
  report "$why" "$ms" "$@"
}

# refused WORD ARGS...: samplecheck ARGS must exit 2, print nothing on stdout, name WORD on stderr.
refused() { judged 2 "$@"; }

# accepted WORD ARGS...: samplecheck ARGS must exit 0 with WORD on stdout.
accepted() { judged 0 "$@"; }

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
refused "--vocab-size: '16' is below 2048" "${q[@]}" --vocab-size 16
# The minimum is a V the fixture rows fit in (padded_tail's 1024-token tile and 1024 more).
refused "--vocab-size: '1024' is below 2048" "${q[@]}" --vocab-size 1024
refused "--m: '4097' is above 4096" qualify --subject cpu.segmented --m 1,4097
refused "--timeout: '0' is not above 0" "${q[@]}" --timeout 0
refused "--time-limit: '0' is not above 0" "${q[@]}" --time-limit 0
refused "--time-limit: 'abc' is not a number" "${q[@]}" --time-limit abc
refused "--progress-every: '0' is not above 0" "${q[@]}" --progress-every 0
refused "--progress-every: 'soon' is not a number" "${q[@]}" --progress-every soon
refused "--fixtures $tmp/nowhere: not a directory" "${q[@]}" --fixtures "$tmp/nowhere"
refused "--fixtures $tmp/nowhere: not a directory" qualify --subject cpu.segmented --fixtures "$tmp/nowhere"
refused "--fixtures $tmp: no matmul/layer_shapes.txt" "${q[@]}" --fixtures "$tmp"
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
# A record is data: every malformed one is refused naming the file and the field, and a
# process it names never starts unless the command line gives it.
record() { # record FILE PYTHON-EXPRESSION-ON-r: a valid record of an in-tree mutant, edited
  python3 - "$1" "$2" <<'PY'
import json, sys
r = {"format": "samplecheck-repro", "version": 1, "subject": "cpu.sort_filter:S07",
     "kind": "sampler", "plugin": None, "check": "goodness_of_fit", "dtype": "f32",
     "budget": "quick", "vocab_size": 32000, "seed": 20261130, "alpha": 1e-6,
     "verdict": "FAIL", "detail": "", "samples": 1, "evidence": {}}
exec(sys.argv[2])
open(sys.argv[1], "w").write(json.dumps(r))
PY
}
mkdir -p "$tmp/a_dir.json"
refused "replay: '$tmp/a_dir.json' is a directory" replay "$tmp/a_dir.json"
record "$tmp/ok.json" "pass"
head -c 100 "$tmp/ok.json" >"$tmp/truncated.json"
refused "replay: '$tmp/truncated.json' is not JSON" replay "$tmp/truncated.json"
record "$tmp/alpha.json" "r['alpha'] = 2.0"
refused "'$tmp/alpha.json': field 'alpha': 2.0 is outside" replay "$tmp/alpha.json"
record "$tmp/v1.json" "r['vocab_size'] = 1"
refused "'$tmp/v1.json': field 'vocab_size': 1 is outside [2048" replay "$tmp/v1.json"
record "$tmp/type.json" "r['seed'] = 'twelve'"
refused "'$tmp/type.json': field 'seed': \"twelve\" is not an integer" replay "$tmp/type.json"
record "$tmp/dtype.json" "r['dtype'] = 7"
refused "'$tmp/dtype.json': field 'dtype'" replay "$tmp/dtype.json"
record "$tmp/v2.json" "r['version'] = 2"
refused "'$tmp/v2.json': field 'version' is 2" replay "$tmp/v2.json"
truncate -s 1G "$tmp/huge.json"  # sparse: no gigabyte is written
refused "'$tmp/huge.json' is 1073741824 bytes, above the 64 MiB" replay "$tmp/huge.json"
record "$tmp/exec.json" "r['exec'] = 'touch $tmp/ran'"
refused "names a process to run: --exec 'touch $tmp/ran'" replay "$tmp/exec.json"
record "$tmp/plugin.json" "r['plugin'] = '$tmp/libnot_loaded.so'"
refused "names a process to run: --plugin $tmp/libnot_loaded.so" replay "$tmp/plugin.json"
[ -e "$tmp/ran" ] && report "the record's --exec command ran" 0 replay "$tmp/exec.json"
refused "no command given"
# fingerprint and bisect: every refusal before anything runs.
refused "give -o FILE.json" fingerprint --subject cpu.segmented
refused "no subject named 'no.such'" fingerprint --subject no.such -o "$tmp/f.json"
refused "fingerprint: cannot open" fingerprint --compare "$tmp/missing.json" "$tmp/missing2.json"
refused "--compare" fingerprint --compare "$tmp/only_one.json"
refused "--compare takes two manifests" fingerprint --compare "$tmp/a.json" "$tmp/b.json" -o "$tmp/c.json"
refused "not a fingerprint manifest: field 'format'" fingerprint --compare "$tmp/v7.json" "$tmp/v7.json"
"$bin" fingerprint --subject cpu.segmented --shape 32x1001 --m 1,2 -o "$tmp/m.json" >/dev/null
manifest() { # manifest FILE PYTHON-EXPRESSION-ON-m: the manifest above, edited
  python3 -c "import json, sys; m = json.load(open('$tmp/m.json')); $2; json.dump(m, open('$1', 'w'))"
}
refused "fingerprint: '$tmp/a_dir.json' is a directory" fingerprint --compare "$tmp/a_dir.json" "$tmp/m.json"
head -c 100 "$tmp/m.json" >"$tmp/m_cut.json"
refused "fingerprint: '$tmp/m_cut.json' is not JSON" fingerprint --compare "$tmp/m.json" "$tmp/m_cut.json"
manifest "$tmp/m_subject.json" "m['subject'] = 5"
refused "field 'subject' is not a string" fingerprint --compare "$tmp/m.json" "$tmp/m_subject.json"
manifest "$tmp/m_v2.json" "m['version'] = 2"
refused "field 'version' is 2" fingerprint --compare "$tmp/m.json" "$tmp/m_v2.json"
manifest "$tmp/m_m.json" "m['plan']['batch_sizes'] = [1, 5000]"
refused "field 'plan.batch_sizes': 5000" fingerprint --compare "$tmp/m.json" "$tmp/m_m.json"
manifest "$tmp/m_plugin.json" "m['plugin'] = {'exec': 7}"
refused "field 'plugin'" fingerprint --compare "$tmp/m.json" "$tmp/m_plugin.json"
refused "fingerprint: '$tmp/huge.json' is 1073741824 bytes" fingerprint --compare "$tmp/m.json" "$tmp/huge.json"
refused "--m: '5-3'" fingerprint --subject cpu.segmented --m 5-3 -o "$tmp/f.json"
refused "--repeat: '0'" fingerprint --subject cpu.segmented --repeat 0 -o "$tmp/f.json"
refused "--report-dir goes with --compare" fingerprint --subject cpu.segmented -o "$tmp/f.json" --report-dir "$tmp/r"
refused "--report-dir /dev/null: not a directory" fingerprint --compare "$tmp/v7.json" "$tmp/v7.json" --report-dir /dev/null
refused "--good" bisect --bad HEAD --build true --check true
refused "is not a git work tree" bisect --good a --bad b --build true --check true --repo /proc
git init -q "$tmp/repo" && git -C "$tmp/repo" -c user.email=t@t.invalid -c user.name=t commit -q --allow-empty -m one
refused "'nosuchrev' is not a commit" bisect --good nosuchrev --bad HEAD --build true --check true --repo "$tmp/repo"
refused "--work-dir $tmp/a_file: not a directory" bisect --good HEAD --bad HEAD --build true --check true --repo "$tmp/repo" --work-dir "$tmp/a_file"
refused "--step-timeout: '0' is not above 0" bisect --good HEAD --bad HEAD --build true --check true --repo "$tmp/repo" --step-timeout 0
# A second run into one report folder would overwrite the first's report.
"$bin" qualify --subject cpu.segmented --checks all_ones --shape 32x1001 --m 1,2 -q --report-dir "$tmp/rep" >/dev/null 2>&1
refused "--report-dir $tmp/rep: already holds a report" qualify --subject cpu.segmented --checks all_ones --shape 32x1001 --m 1,2 --report-dir "$tmp/rep"
accepted "subjects:" qualify --list
accepted "subjects:" qualify --list --seed 0xffffffffffffffff --alpha 0.5 --timeout 0.5
accepted "0x10 is 16; 010 is refused" qualify --help
accepted "--in-process" qualify --help
# --no-fork, the flag's name from when each check ran in a forked child: a deprecated
# spelling of --in-process, kept out of --help, that scripts may still give.
accepted "PASS" qualify --subject cpu.multinomial --checks replay --no-fork -q

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
