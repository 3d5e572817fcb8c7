#!/usr/bin/env bash
# After a qualification (tools/scripts/h200_qualify_python.sh): a standalone reproduction
# script for each record in OUT/repro (`samplecheck repro-script`, docs/repro-format.md,
# "Standalone scripts"), each run with the upstream package where the adapter found it.
#
#   tools/scripts/h200_repro_scripts.sh OUT SAMPLECHECK
#
# Writes OUT/repro_scripts/NAME.py and NAME.txt (the script's output) per record NAME.json,
# and OUT/repro_scripts/summary.md: per record the script's exit (1 reproduced, 0 not, 2 it
# could not run, 124 past SCRIPT_LIMIT) or, where repro-script refuses the record, the field
# and reason it gives (listed, not counted as a failure). Run from the repository root's
# checkout (its python/ generates the scripts); the trees as h200_qualify_python.sh takes them:
#   FLASHINFER_TREE  default carry/flashinfer (FlashInfer and cake; built modules are reused
#                    from FLASHINFER_WORKSPACE_BASE, default build/flashinfer-cache)
#   SGLANG_TREE      default carry/sglang        VLLM_TREE  default carry/vllm
#   SCRIPT_LIMIT     seconds one script may run (default 300)
# Exit status: 0 every script ran (whatever its verdict), 2 bad arguments or a script that
# could not be written for another reason than a refused record.
set -uo pipefail
(($# == 2)) || { echo "usage: $0 OUT SAMPLECHECK" >&2; exit 2; }
out=$(realpath -m "$1")
samplecheck=$(realpath -m "$2")
cd "$(dirname "$0")/../.." || exit 2
repo=$(pwd)
[ -d "$out/repro" ] || { echo "no $out/repro: run a qualification with --repro-dir there first" >&2; exit 2; }
[ -x "$samplecheck" ] || { echo "no samplecheck at $samplecheck" >&2; exit 2; }
scripts="$out/repro_scripts"
mkdir -p "$scripts"
summary="$scripts/summary.md"
printf '| record | script exit | verdict | seconds |\n|---|---|---|---|\n' >"$summary"

# The upstream packages where h200_qualify_python.sh puts them: FlashInfer's trimmed tree (and
# the modules it links from the tree's fallback/) and SGLang's site on the path; vLLM's tree
# through SAMPLECHECK_VLLM_TREE, which the vLLM scripts read as the adapter does.
flashinfer=$(realpath -m "${FLASHINFER_TREE:-carry/flashinfer}")
sglang=$(realpath -m "${SGLANG_TREE:-carry/sglang}")
script_path="$flashinfer:$sglang/site"
[ -d "$repo/build/python-fallback" ] && script_path="$script_path:$repo/build/python-fallback"
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export FLASHINFER_WORKSPACE_BASE=${FLASHINFER_WORKSPACE_BASE:-$repo/build/flashinfer-cache}
export SAMPLECHECK_VLLM_TREE
SAMPLECHECK_VLLM_TREE=$(realpath -m "${VLLM_TREE:-carry/vllm}")
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUDA_HOME/lib64

# run_script NAME OUTPUT [ARGS...]: runs NAME.py with ARGS into OUTPUT.txt, one summary line
# (the verdict line; else the last line, why it could not run, or the cut); sets code.
run_script() {
  local name=$1 output=$2 start=$SECONDS verdict
  shift 2
  (cd "$scripts" && PYTHONPATH="$script_path" timeout "${SCRIPT_LIMIT:-300}" python3 "$name.py" "$@") \
    >"$scripts/$output.txt" 2>&1
  code=$?
  verdict=$(grep -E '^(REPRODUCED|NOT REPRODUCED)' "$scripts/$output.txt" | tail -1)
  ((code == 124)) && verdict="cut at ${SCRIPT_LIMIT:-300} s"
  [ -n "$verdict" ] || verdict="could not run: $(tail -1 "$scripts/$output.txt")"
  echo "| $name${*:+ $*} | $code | ${verdict//|//} | $((SECONDS - start)) |" | tee -a "$summary"
}

status=0
shopt -s nullglob
for record in "$out"/repro/*.json; do
  name=$(basename "$record" .json)
  script="$scripts/$name.py"
  written=$(SAMPLECHECK_PYTHON=${SAMPLECHECK_PYTHON:-python3} PYTHONPATH="$repo/python" \
    "$samplecheck" repro-script "$record" -o "$script" 2>&1)
  made=$?
  if ((made != 0)); then
    # repro-script names the field that stops it after "field"; anything else is this loop's error.
    reason=$(printf '%s' "$written" | tr '\n|' ' /')
    if [[ $reason == *"field '"* ]]; then
      echo "| $name | - | refused: field '${reason#*"field '"} | - |" | tee -a "$summary"
    else
      echo "| $name | - | NOT WRITTEN (exit $made): $reason | - |" | tee -a "$summary"
      status=2
    fi
    continue
  fi
  run_script "$name" "$name"
  # batch_invariance not reproduced in the recorded placements (the check's batches held other
  # rows): the script again in every batch size the check ran.
  if ((code == 0)) && [[ $name == *.batch_invariance.* ]]; then
    run_script "$name" "$name.all" --sizes all
  fi
done
exit $status
