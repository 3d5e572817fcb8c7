#!/usr/bin/env bash
# JAX's jax.random.categorical on the CPU: a throwaway venv with jax[cpu] from PyPI and
# `samplecheck qualify --exec` on each subject of samplecheck_subject.adapters.jax_categorical
# (docs/shipped/jax.md, "JAX's jax.random.categorical").
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
# shellcheck source=shipped/cpu_qualify.sh
source "$(dirname "$0")/shipped/cpu_qualify.sh"
((${#subjects[@]})) || subjects=(jax.categorical)
if [ ! -x "$work/venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q "${JAX_SPEC:-jax[cpu]==0.10.2}" numpy
fi
"$work/venv/bin/python" -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, jax.devices())"
for subject in "${subjects[@]}"; do
  qualify_subject "$subject" \
    "$work/venv/bin/python -m samplecheck_subject.run samplecheck_subject.adapters.jax_categorical:subjects"
done
