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
# Environment: SAMPLECHECK_BIN (default build/tools/samplecheck/samplecheck, else
# build-cpu's), BUDGET (default quick), QUALIFY_ARGS (e.g. "--checks replay --timeout 1500").
#
# torch 2.15.0 from PyPI, its CUDA 13 build with four CUDA wheels beside the machine's
# toolkit (tools/scripts/shipped/cpu_qualify.sh, torch_venv, says which); about 3.2 GB.
# docs/shipped/sglang.md.
set -euo pipefail
# shellcheck source=shipped/cpu_qualify.sh
source "$(dirname "$0")/shipped/cpu_qualify.sh"
((${#subjects[@]})) || subjects=(sglang.sampling_from_probs_torch sglang.top_k_top_p_min_p_sampling_from_probs_torch)
torch_venv "$work/venv"
shipped_tree sglang 0.5.10.post1 sglang-0.5.10.post1-py3-none-any.whl
for subject in "${subjects[@]}"; do
  interpret=()
  case $subject in *.seeded) interpret=(TRITON_INTERPRET=1 TORCHDYNAMO_DISABLE=1) ;; esac
  qualify_subject "$subject" \
    "$work/venv/bin/python -m samplecheck_subject.run samplecheck_subject.adapters.sglang_shipped:subjects" \
    SAMPLECHECK_SGLANG_TREE="$work/sglang" "${interpret[@]}"
done
