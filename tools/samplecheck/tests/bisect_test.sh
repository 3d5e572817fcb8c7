#!/usr/bin/env bash
# samplecheck bisect on a throwaway git repository holding a small matmul plugin
# (built from kernels/samplecheck_plugin.h alone, as a vendor builds one). History:
#   good    the plugin: fp32 sum over K in increasing k, one bf16 rounding (tagged good)
#   c1      an unrelated change (good)
#   c2      the K split depends on M: above M = 48 two halves, each rounded to bf16 (bad)
#   c3      an unrelated change that does not build (skip)
#   c4      the build fixed (bad)
#   c5, c6  unrelated changes (bad)
# bisect must name c2, skip c3, report the smallest failing M (49) with its row and
# column, and leave the repository on its branch with no bisect in progress.
#   bisect_test.sh SAMPLECHECK KERNELS_DIR CC WORKDIR
sc=$1 kernels=$2 cc=$3 work=$4
source "$(dirname "$0")/test_lib.sh" "$work"
mkdir -p "$work/repo" && cd "$work/repo" || exit 1

git init -q -b main . && git config user.email test@example.invalid && git config user.name test
commit() { git add -A && git commit -qm "$1"; }

cat >gemm.c <<'C'
/* toy.gemm: out[m, n] = bf16(sum over k of a[m, k] * w[n, k] (+ bias[n])). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "samplecheck_plugin.h"
#include "split.h"

static float bf16_to_float(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static float dot(const uint16_t* a, const uint16_t* w, int64_t from, int64_t to) {
  float s = 0.0f;
  for (int64_t t = from; t < to; ++t) s += bf16_to_float(a[t]) * bf16_to_float(w[t]);
  return s;
}

static sc_status run(void* context, const sc_matmul_problem* p, char* error, size_t size) {
  (void)context;
  if (p == NULL || p->m <= 0 || p->n <= 0 || p->k <= 0 || !p->a || !p->weight || !p->out) {
    if (error && size) snprintf(error, size, "toy.gemm: bad problem");
    return SC_ERR_INVALID_ARGUMENT;
  }
  for (int64_t i = 0; i < p->m; ++i)
    for (int64_t j = 0; j < p->n; ++j) {
      const uint16_t* a = p->a + i * p->k;
      const uint16_t* w = p->weight + j * p->k;
      float sum = SUM(a, w, p->k, p->m);
      if (p->bias) sum += bf16_to_float(p->bias[j]);
      p->out[i * p->n + j] = float_to_bf16(sum);
    }
  if (error && size) error[0] = '\0';
  return SC_OK;
}

static const sc_matmul matmuls[] = {{
    .abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
    .name = "toy.gemm",
    .description = "fp32 sum over k, one bf16 rounding",
    .memory_space = SC_MEMORY_HOST,
    .run = run,
}};

static const sc_plugin plugin = {
    .abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
    .name = "toy gemm",
    .num_matmuls = 1,
    .matmuls = matmuls,
    .sampler_size = sizeof(sc_sampler),
    .matmul_size = sizeof(sc_matmul),
};

__attribute__((visibility("default"))) const sc_plugin* samplecheck_plugin(void) { return &plugin; }
C
cat >split.h <<'C'
/* How a row's sum over K is formed. */
#define SUM(a, w, k, m) dot(a, w, 0, k)
C
echo 'const char* toy_version(void) { return "0.9"; }' >version.c
echo "toy gemm" >README
commit "toy.gemm: fp32 sum over K, one rounding"
git tag good
echo "A toy matmul plugin for samplecheck bisect." >README
commit "README: say what this is"
cat >split.h <<'C'
/* How a row's sum over K is formed: above M = 48 the K range is split in two halves
 * whose partials go through bf16 (a split-K path for larger batches). */
#define SUM(a, w, k, m) \
  ((m) > 48 ? bf16_to_float(float_to_bf16(dot(a, w, 0, (k) / 2))) + \
                  bf16_to_float(float_to_bf16(dot(a, w, (k) / 2, k))) \
            : dot(a, w, 0, k))
C
commit "split K in two for batches above 48 rows"
echo "this is not C" >version.c
commit "version file: a new format"
echo 'const char* toy_version(void) { return "1.0"; }' >version.c
commit "version file: make it C"
echo "Build: cc -shared gemm.c version.c" >>README
commit "README: how to build"
echo "License: public domain." >>README
commit "README: licence"
head=$(git rev-parse HEAD)
c2=$(git rev-parse HEAD~4)
c3=$(git rev-parse HEAD~3)

build="$cc -std=c99 -O1 -ffp-contract=off -fPIC -shared -I$kernels gemm.c version.c -o libtoy.so"
check="$sc qualify --plugin ./libtoy.so --checks batch_invariance --shape 64x256 --m 1-64,65,80"
out=$("$sc" bisect --good good --bad main --build "$build" --check "$check" --work-dir "$work/bisect" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] && ok "bisect exits 0" || bad "bisect exited $rc"
grep -q "^first bad commit: $c2 split K in two for batches above 48 rows" <<<"$out" &&
  ok "names the commit that made the K split depend on M" || bad "first bad commit is not $c2"
grep -q "^skipped (did not build): ${c3:0:12} version file: a new format" <<<"$out" &&
  ok "skips the commit that does not build" || bad "the broken commit ${c3:0:12} was not skipped"
grep -q "smallest failing M = 49, row [0-9]*, column [0-9]*: 0x[0-9a-f]* alone vs 0x[0-9a-f]* in the batch" <<<"$out" &&
  ok "reports the smallest failing M (49), its row, column and bits" || bad "no smallest failing M = 49 line"
[ "$(git rev-parse HEAD)" = "$head" ] && [ "$(git symbolic-ref --short HEAD)" = main ] &&
  ! git bisect log >/dev/null 2>&1 && ok "the repository is restored (main, no bisect in progress)" ||
  bad "the repository was left bisecting or detached"

# bisect never names a commit it did not judge. Each case must stop with exit 2 and its
# reason, and leave the repository on main with no bisect in progress.
stops() { # stops WHY WORD ARGS...: samplecheck bisect ARGS exits 2 printing WORD
  local why=$1 word=$2
  shift 2
  out=$("$sc" bisect --good good --bad main --build "$build" "$@" 2>&1)
  local rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$word" <<<"$out" && [ "$(git rev-parse HEAD)" = "$head" ] &&
    ! git bisect log >/dev/null 2>&1; then
    ok "$why"
  else
    bad "$why (exit $rc): $(tail -n 3 <<<"$out")"
  fi
}
stops "a check that passes at the bad end: stopped before bisecting" \
  "--bad: the check passes at ${head:0:12}; it must fail there" --check true
stops "a check that fails at the good end: stopped before bisecting" \
  "--good: the check fails at" --check false
stops "a check not on PATH (127): stopped, not skipped" \
  "the check exited 127 (command not found)" --check no-such-samplecheck-check
stops "a killed check: stopped" "the check was killed by signal 9" --check 'kill -9 $$'
stops "a step past --step-timeout: stopped" "ran past the step timeout (3 s)" \
  --check "sleep 30" --step-timeout 3
# Between the ends, a check that exits 2 (here where the K split exists but no licence
# line does) judged nothing: git must not read it as bad.
stops "a check exiting 2 between the ends: stopped, no commit named" "the check exited 2" \
  --check "if grep -q License README; then exit 1; elif grep -q 48 split.h; then exit 2; fi"
# Without --work-dir the temporary folder is gone after the run.
tmpdir=$(sed -n 's/.*(logs and records in \([^,)]*\).*/\1/p' <<<"$out")
[ -n "$tmpdir" ] && [ ! -e "$tmpdir" ] && ok "the temporary folder $tmpdir is removed" ||
  bad "the temporary folder '$tmpdir' is left behind"

# The check alone is a git bisect run script: exit 1 at the bad head, 0 at good.
eval "$build" && $check >/dev/null 2>&1
[ $? -eq 1 ] && ok "the check alone exits 1 at the bad head" || bad "the check did not exit 1 at the head"
git checkout -q good && eval "$build" && $check >/dev/null 2>&1
[ $? -eq 0 ] && ok "the check alone exits 0 at the good commit" || bad "the check did not exit 0 at good"
git checkout -q main

finish
