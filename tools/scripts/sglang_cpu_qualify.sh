#!/usr/bin/env bash
# SGLang 0.5.10.post1's shipped torch sampling functions on the CPU: a throwaway venv with
# torch from PyPI (its CUDA build, imported without a GPU), the wheel extracted by
# tools/scripts/extract_shipped.py, and `samplecheck qualify --exec` on each subject.
#
#   tools/scripts/sglang_cpu_qualify.sh WORK [SUBJECT...]
#
# WORK: the venv (WORK/venv), the wheel (WORK/wheels), the extracted tree (WORK/sglang) and
# the reports (WORK/reports/SUBJECT); each step is skipped where its output exists.
# SUBJECT default: the two unseeded subjects. The seeded ones run murmur_hash32 (a Triton
# kernel) in Triton's interpreter, about 0.8 s a row of 65,537 tokens: only cheap checks fit.
# Environment: SAMPLECHECK_BIN (default build/tools/samplecheck/samplecheck), BUDGET
# (default quick), QUALIFY_ARGS (e.g. "--checks replay --timeout 1500").
#
# torch 2.15.0's PyPI wheel is built for CUDA 13; `import torch` needs libcufile,
# libcusparseLt, libnvshmem_host and a libnccl with ncclCommResume beside the CUDA runtime
# libraries. This installs those four wheels without their dependencies and takes the rest
# (cudart, cuBLAS, cuDNN, cuFFT, cuSPARSE, nvrtc) from the machine's CUDA toolkit on the
# loader's path (this project's machines: /usr/local/cuda-13.0); about 3.2 GB. docs/shipped.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 WORK [SUBJECT...]" >&2; exit 2; }
work=$(realpath -m "$1")
shift
subjects=("$@")
((${#subjects[@]})) || subjects=(sglang.sampling_from_probs_torch sglang.top_k_top_p_min_p_sampling_from_probs_torch)
samplecheck=${SAMPLECHECK_BIN:-build/tools/samplecheck/samplecheck}
mkdir -p "$work"

if [ ! -x "$work/venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q --no-deps torch==2.15.0 "triton~=3.9.0" nvidia-cufile \
    nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-nccl-cu13
  "$work/venv/bin/pip" install -q typing_extensions sympy networkx jinja2 filelock fsspec numpy
fi
"$work/venv/bin/python" -c "import torch; print('torch', torch.__version__, 'CUDA', torch.cuda.is_available())"

wheel=$work/wheels/sglang-0.5.10.post1-py3-none-any.whl
[ -e "$wheel" ] || /usr/bin/python3 -m pip download -q sglang==0.5.10.post1 --no-deps -d "$work/wheels"
[ -e "$work/sglang/provenance.json" ] ||
  /usr/bin/python3 tools/scripts/extract_shipped.py "$wheel" tools/scripts/shipped/sglang.toml "$work/sglang"

for subject in "${subjects[@]}"; do
  interpret=""
  case $subject in *.seeded) interpret="TRITON_INTERPRET=1 TORCHDYNAMO_DISABLE=1" ;; esac
  # shellcheck disable=SC2086
  PYTHONPATH="$PWD/python" SAMPLECHECK_SGLANG_TREE="$work/sglang" "$samplecheck" qualify \
    --exec "env $interpret $work/venv/bin/python -m samplecheck_subject.run samplecheck_subject.adapters.sglang_shipped:subjects" \
    --subject "$subject" --budget "${BUDGET:-quick}" --report-dir "$work/reports/$subject" \
    ${QUALIFY_ARGS:-} || echo "$subject: samplecheck exited $?"
done
