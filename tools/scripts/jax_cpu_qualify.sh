#!/usr/bin/env bash
# JAX's jax.random.categorical on the CPU: a throwaway venv with jax[cpu] from PyPI and
# `samplecheck qualify --exec` on each subject of samplecheck_subject.adapters.jax_categorical
# (docs/shipped.md, "JAX's jax.random.categorical").
#
#   tools/scripts/jax_cpu_qualify.sh WORK [SUBJECT...]
#
# WORK: the venv (WORK/venv, made once; JAX_SPEC pins it, default "jax[cpu]==0.10.2") and the
# reports (WORK/reports/SUBJECT). SUBJECT default: jax.categorical.
# Environment: SAMPLECHECK_BIN (default build/tools/samplecheck/samplecheck, else
# build-cpu's), BUDGET (default quick), QUALIFY_ARGS (e.g. "--checks replay,batch_invariance
# --timeout 900"), SAMPLECHECK_JAX_DTYPES (e.g. "f32": the dtypes declared; default all three).
# jax draws ~8M Gumbel noise elements a second on 2 shared cores: about 240 samples a second
# at the quick budget's V = 32000, so the whole quick battery of one subject takes hours
# there; the exact checks and goodness_of_fit at one dtype fit in minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 WORK [SUBJECT...]" >&2; exit 2; }
work=$(realpath -m "$1")
shift
subjects=("$@")
((${#subjects[@]})) || subjects=(jax.categorical)
samplecheck=${SAMPLECHECK_BIN:-build/tools/samplecheck/samplecheck}
[ -x "$samplecheck" ] || samplecheck=build-cpu/tools/samplecheck/samplecheck
mkdir -p "$work"

if [ ! -x "$work/venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q "${JAX_SPEC:-jax[cpu]==0.10.2}" numpy
fi
"$work/venv/bin/python" -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, jax.devices())"

for subject in "${subjects[@]}"; do
  # shellcheck disable=SC2086
  PYTHONPATH="$PWD/python" "$samplecheck" qualify \
    --exec "$work/venv/bin/python -m samplecheck_subject.run samplecheck_subject.adapters.jax_categorical:subjects" \
    --subject "$subject" --budget "${BUDGET:-quick}" --report-dir "$work/reports/$subject" \
    ${QUALIFY_ARGS:-} || echo "$subject: samplecheck exited $?"
done
