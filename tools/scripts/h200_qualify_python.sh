#!/usr/bin/env bash
# Qualifies every Python adapter (python/samplecheck_subject/adapters) on a CUDA machine
# through `samplecheck qualify --exec`, and probes the renorm functions' determinism.
# For the H200 (torch 2.11, nvcc 13.0, Python 3.12, nothing installable): run from the
# repository root with the trimmed FlashInfer tree (tools/scripts/trim_flashinfer.sh)
# carried in.
#
#   tools/scripts/h200_qualify_python.sh [GROUP...]     GROUP: flashinfer cake torch matmul renorm
#                                                       cake_probe sglang vllm jax (default: all nine,
#                                                       in that order)
#   (cake: FlashInfer's cake sampler, adapters.flashinfer_cake, from the same trimmed tree, whose
#   cake_sampling.tar.xz this script unpacks into it first; cake_probe: what the battery does
#   not reach of it, tools/scripts/h200_probes/cake_statements.py, OUT/cake_statements.json)
# Environment:
#   OUT              where results go (required): OUT/<subject>.txt (the table), OUT/summary.md,
#                    OUT/repro/ (a record per failed check), OUT/reports/<subject>/ (report.json,
#                    report.html, junit.xml; unless QUALIFY_ARGS names --report-dir, which
#                    then serves a run of one subject: samplecheck refuses a folder that
#                    already holds a report, so a second subject stops the run, exit 2),
#                    OUT/renorm_determinism.json
#   SAMPLECHECK_BIN  default carry/bin/samplecheck (a CUDA build), else build/tools/samplecheck/samplecheck
#   SAMPLECHECK_PYTHON  report.html's renderer, default python3 on PATH (the device's, with matplotlib)
#   FLASHINFER_TREE  the trimmed tree, default carry/flashinfer
#   SGLANG_TREE      SGLang's extracted modules (tools/scripts/extract_shipped.py with
#                    tools/scripts/shipped/sglang.toml), default carry/sglang
#   VLLM_TREE        vLLM's (tools/scripts/shipped/vllm.toml), default carry/vllm
#   BUDGET           default standard
#   SUBJECT_LIMIT    seconds one subject's qualification may take (default 300; exit 124 past it)
#   SUBJECTS         only these subjects (comma-separated), default every subject of each group
#   QUALIFY_ARGS     extra samplecheck arguments (e.g. "--seed 7")
#   SUBJECT_LD_LIBRARY_PATH  the Python subject's library path (default: the machine's, then
#                    /usr/local/cuda/lib64)
#   MATMUL_ARGS      the matmul group's batch sizes, default the powers of two +-1 up to 4096:
#                    every call carries its `a` through the shared region, so all 4,096 sizes
#                    of every fixture shape (~200 GB of copies a shape) do not fit a call
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
repo=$(pwd)
: "${OUT:?set OUT to the results folder}"
samplecheck=${SAMPLECHECK_BIN:-carry/bin/samplecheck}
[ -n "${SAMPLECHECK_BIN:-}" ] || [ -x "$samplecheck" ] || samplecheck=build/tools/samplecheck/samplecheck
# samplecheck's CUDA build links cuBLAS from the toolkit. The Python subject keeps the
# machine's own library path first (torch's CUDA libraries) with the toolkit's last, where
# FlashInfer's JIT-built module finds libcudart; SUBJECT_LD_LIBRARY_PATH overrides it.
subject_library_path=${SUBJECT_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# report.html's renderer: the device's python3 (its venv has matplotlib; the build's
# /usr/bin/python3 there has not), as h200_queue.sh runs it.
export SAMPLECHECK_PYTHON=${SAMPLECHECK_PYTHON:-python3}
tree=$(cd "${FLASHINFER_TREE:-carry/flashinfer}" 2>/dev/null && pwd || true)
budget=${BUDGET:-standard}
groups=("$@")
((${#groups[@]})) || groups=(flashinfer cake torch matmul renorm cake_probe sglang vllm jax)
mkdir -p "$OUT/repro"
[ -x "$samplecheck" ] || { echo "no samplecheck at $samplecheck (build it or set SAMPLECHECK_BIN)" >&2; exit 2; }

# Python: the package from the checkout, FlashInfer from the trimmed tree, and from its
# fallback/ only the modules this machine lacks (linked one by one, so nothing shadows).
pythonpath="$repo/python"
if [ -n "$tree" ]; then
  pythonpath="$pythonpath:$tree"
  if [ -d "$tree/fallback" ]; then
    needed="$repo/build/python-fallback"  # not under OUT: links do not come back
    mkdir -p "$needed"
    for module in pynvml requests urllib3 idna certifi charset_normalizer packaging; do
      if ! python3 -c "import $module" 2>/dev/null; then
        for path in "$tree/fallback/$module" "$tree/fallback/$module.py"; do
          [ -e "$path" ] && ln -sfn "$path" "$needed/"
        done
        echo "using the carried $module"
      fi
    done
    pythonpath="$pythonpath:$needed"
    if ! command -v ninja >/dev/null; then
      for ninja in "$tree"/fallback/ninja-*.data/scripts/ninja; do PATH="$(dirname "$ninja"):$PATH"; done
      export PATH
    fi
  fi
fi
# The cake sampler's frozen source travels compressed (trim_flashinfer.sh); unpack it where
# FlashInfer's JIT looks (flashinfer/data/csrc/cake_sampling), once per tree.
if [ -n "$tree" ] && [ -f "$tree/cake_sampling.tar.xz" ] && [ ! -d "$tree/flashinfer/data/csrc/cake_sampling" ]; then
  python3 tools/scripts/unpack_cake_source.py "$tree/cake_sampling.tar.xz" "$tree/flashinfer/data/csrc" || exit 2
fi
export PYTHONPATH="$pythonpath${PYTHONPATH:+:$PYTHONPATH}"
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
# The JIT's build folder in the checkout (ignored by git), so a warm machine reuses it.
export FLASHINFER_WORKSPACE_BASE=${FLASHINFER_WORKSPACE_BASE:-$repo/build/flashinfer-cache}
# The subject's whole environment in its command line, so that a reproduction record (which
# keeps the --exec command) replays with `samplecheck replay FILE` alone.
subject_env="env LD_LIBRARY_PATH=${subject_library_path@Q} PYTHONPATH=${PYTHONPATH@Q} PATH=${PATH@Q}"
subject_env+=" CUDA_HOME=${CUDA_HOME@Q} FLASHINFER_WORKSPACE_BASE=${FLASHINFER_WORKSPACE_BASE@Q}"
sglang_tree=$(realpath -m "${SGLANG_TREE:-carry/sglang}")
subject_env+=" SAMPLECHECK_SGLANG_TREE=${sglang_tree@Q}"
vllm_tree=$(realpath -m "${VLLM_TREE:-carry/vllm}")
subject_env+=" SAMPLECHECK_VLLM_TREE=${vllm_tree@Q}"
eval "$subject_env python3 -c \"import torch; print('torch', torch.__version__, torch.cuda.get_device_name())\""

declare -A module_of=([flashinfer]=flashinfer_samplers [cake]=flashinfer_cake [torch]=torch_samplers [matmul]=torch_matmul
                       [sglang]=sglang_shipped [vllm]=vllm_shipped [jax]=jax_categorical)
summary="$OUT/summary.md"
[ -e "$summary" ] || printf '| subject | exit | seconds | verdicts |\n|---|---|---|---|\n' >"$summary"

qualify_group() {
  local module=samplecheck_subject.adapters.$1
  local names
  # name:kind:entry point; an adapter's CUDA-only subjects may have an entry point of their
  # own (vllm_shipped.cuda_subjects), the others are served by `subjects`.
  names=$(python3 -c "
import $module as m
want = [s for s in '${SUBJECTS:-}'.split(',') if s]
cuda_only = {d.name for _, d in m.cuda_descriptors()} if hasattr(m, 'cuda_subjects') else set()
print(' '.join(f\"{n}:{d.kind}:{'cuda_subjects' if n in cuda_only else 'subjects'}\"
               for n, (_, d) in m.DESCRIPTORS.items() if not want or n in want))")
  for row in $names; do
    local name kind point extra=${QUALIFY_ARGS:-}
    IFS=: read -r name kind point <<<"$row"
    # Each subject's report in a folder of its own (one --report-dir serves one subject).
    local report=()
    if [[ " $extra " != *" --report-dir "* ]]; then
      report=(--report-dir "$OUT/reports/$name")
    elif [ -n "${report_dir_user:-}" ]; then
      echo "QUALIFY_ARGS names --report-dir, which $report_dir_user has; $name needs a folder" \
        "of its own: name one subject (SUBJECTS), or leave --report-dir out (OUT/reports/<subject>/)" >&2
      exit 2
    else
      report_dir_user=$name
    fi
    if [ "$kind" = matmul ]; then
      extra="$extra ${MATMUL_ARGS:---m 1,2,3,4,7,8,9,15,16,17,31,32,33,63,64,65,127,128,129,255,256,257,511,512,513,1023,1024,1025,2047,2048,2049,4095,4096}"
    fi
    local command="$subject_env python3 -m samplecheck_subject.run $module:$point --subject ${name@Q}"
    local start=$SECONDS limit=${SUBJECT_LIMIT:-300}
    # The judge stops 20 s before the kill (--time-limit), so that a qualification cut there
    # still prints and records every verdict it reached.
    # shellcheck disable=SC2086
    timeout "$limit" "$samplecheck" qualify --exec "$command" --budget "$budget" \
      --time-limit $((limit > 40 ? limit - 20 : limit)) --fixtures "$repo/fixtures" \
      --repro-dir "$OUT/repro" "${report[@]}" \
      $extra >"$OUT/$name.txt" 2>&1
    local status=$?
    local verdicts
    verdicts=$(awk '/^[a-z]/ {v = ($2 ~ /^\[/) ? $3 : $2}
                    /^[a-z]/ && v ~ /^(pass|FAIL|TIMEOUT|n\/a|skipped)$/ {c[v]++}
                    END {for (v in c) printf "%s %d; ", v, c[v]}' "$OUT/$name.txt")
    echo "| $name | $status | $((SECONDS - start)) | $verdicts |" | tee -a "$summary"
  done
}

for group in "${groups[@]}"; do
  case $group in
    flashinfer | cake | torch | matmul | sglang | vllm | jax) qualify_group "${module_of[$group]}" ;;
    renorm) eval "$subject_env python3 tools/scripts/h200_probes/renorm_determinism.py ${OUT@Q}" \
              >"$OUT/renorm_determinism.txt" 2>&1
            echo "renorm determinism: exit $? ($OUT/renorm_determinism.txt)" | tee -a "$summary" ;;
    cake_probe) eval "$subject_env python3 tools/scripts/h200_probes/cake_statements.py ${OUT@Q}" \
                  >"$OUT/cake_statements.txt" 2>&1
                echo "cake statements: exit $? ($OUT/cake_statements.json)" | tee -a "$summary" ;;
    *) echo "unknown group $group (flashinfer cake torch matmul renorm cake_probe sglang vllm jax)" >&2; exit 2 ;;
  esac
done
cat "$summary"
