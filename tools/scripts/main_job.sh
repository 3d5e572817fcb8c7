#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install, build, and qualify an
# in-tree sampler with the quick battery, on the GPU when one is present
# (cuda.dual_pivot) and on the CPU otherwise (cpu.dual_pivot).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/scripts/install_deps.sh
source tools/scripts/env.sh
cmake --preset default
cmake --build --preset default
samplecheck=build/tools/samplecheck/samplecheck
subject=cpu.dual_pivot
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
   "$samplecheck" qualify --list | grep -q '^ *cuda\.dual_pivot '; then
  subject=cuda.dual_pivot
fi
echo "qualifying $subject"
exec "$samplecheck" qualify --subject "$subject" --budget "${BUDGET:-quick}" "$@"
