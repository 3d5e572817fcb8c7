# shellcheck shell=bash disable=SC2034  # work, subjects and samplecheck are the caller's
# What tools/scripts/{sglang,vllm,jax}_cpu_qualify.sh share, sourced by each after its
# `set -euo pipefail`: their arguments (WORK [SUBJECT...]), a torch venv, a wheel downloaded
# (never installed) and extracted, and `samplecheck qualify --exec` on each subject.
# Sets work (WORK, absolute), subjects (the arguments after it) and samplecheck
# ($SAMPLECHECK_BIN, else build/'s, else build-cpu/'s), and runs from the repository's root.

[ $# -ge 1 ] || { echo "usage: $0 WORK [SUBJECT...]" >&2; exit 2; }
work=$(realpath -m "$1")  # before the cd below: a relative WORK is the caller's
shift
subjects=("$@")
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 2
samplecheck=${SAMPLECHECK_BIN:-build/tools/samplecheck/samplecheck}
[ -n "${SAMPLECHECK_BIN:-}" ] || [ -x "$samplecheck" ] ||
  samplecheck=build-cpu/tools/samplecheck/samplecheck
mkdir -p "$work"

# torch_venv VENV [PACKAGE...]: PyPI's torch 2.15.0 (its CUDA 13 build, imported without a
# GPU). `import torch` needs libcufile, libcusparseLt, libnvshmem_host and a libnccl with
# ncclCommResume beside the CUDA runtime libraries: those four wheels without their
# dependencies, the rest (cudart, cuBLAS, cuDNN, cuFFT, cuSPARSE, nvrtc) from the machine's
# CUDA toolkit on the loader's path (this project's machines: /usr/local/cuda-13.0); about
# 3.2 GB. Made once; PACKAGEs are added to it then.
torch_venv() {
  local venv=$1
  shift
  if [ ! -x "$venv/bin/python" ]; then
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --no-deps torch==2.15.0 "triton~=3.9.0" nvidia-cufile \
      nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-nccl-cu13
    "$venv/bin/pip" install -q typing_extensions sympy networkx jinja2 filelock fsspec numpy "$@"
  fi
  "$venv/bin/python" -c \
    "import torch; print('torch', torch.__version__, 'CUDA', torch.cuda.is_available())"
}

# shipped_tree PACKAGE VERSION WHEEL: the wheel (file name WHEEL) into $work/wheels and the
# modules of tools/scripts/shipped/PACKAGE.toml extracted into $work/PACKAGE, each once.
shipped_tree() {
  local wheel=$work/wheels/$3
  [ -e "$wheel" ] || /usr/bin/python3 -m pip download -q "$1==$2" --no-deps -d "$work/wheels"
  [ -e "$work/$1/provenance.json" ] || /usr/bin/python3 tools/scripts/extract_shipped.py \
    "$wheel" "tools/scripts/shipped/$1.toml" "$work/$1"
}

# qualify_subject SUBJECT EXEC [VARIABLE=VALUE...]: the subject under `qualify --exec EXEC`
# with the variables set for samplecheck and its subject process, the report in
# $work/reports/SUBJECT; a failed or skipped subject is said and the next one runs.
qualify_subject() {
  local subject=$1 command=$2
  shift 2
  # shellcheck disable=SC2086
  env PYTHONPATH="$PWD/python" "$@" "$samplecheck" qualify --exec "$command" --subject "$subject" \
    --budget "${BUDGET:-quick}" --report-dir "$work/reports/$subject" ${QUALIFY_ARGS:-} ||
    echo "$subject: samplecheck exited $?"
}
