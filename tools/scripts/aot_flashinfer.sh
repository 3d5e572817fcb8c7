#!/usr/bin/env bash
# Builds FlashInfer's two sampling modules ahead of time on a machine without a GPU and puts
# them into the trimmed tree (tools/scripts/trim_flashinfer.sh), so that the H200 loads them
# instead of JIT-compiling them on every fresh machine (cake's module alone took 374 s there).
#
#   tools/scripts/aot_flashinfer.sh TREE
#
# TREE is trim_flashinfer.sh's output (e.g. carry/flashinfer); the script adds
# TREE/flashinfer/data/aot/<module>/<module>.so, the path FlashInfer's jit/env.py
# get_aot_artifacts() checks first: JitSpec.try_load() loads a file there with
# tvm_ffi.load_module and never builds. The modules:
#  - `sampling` (flashinfer.sampling: jit/sampling.py gen_sampling_module), and
#  - cake's `cake_sampling_<20 hex>` (jit/cake_sampling.py gen_cake_sampling_module), a name
#    derived from its frozen source, so a tree of another source revision never loads it.
#    `sampling`'s name is fixed: rerun this script whenever the tree is rebuilt from other wheels.
# Only TREE/flashinfer/data/aot is written (replaced whole); the build runs in a scratch copy
# where cake_sampling.tar.xz is unpacked, so TREE keeps the archive alone (47 MB unpacked).
#
# Environment:
#   PYTHON      an interpreter with torch (any recent CPU or CUDA build: FlashInfer's JIT
#               imports it at module level and reads only its C++ ABI flag), apache-tvm-ffi of
#               TREE's version, ninja and packaging (default python3); its tvm_ffi's
#               libtvm_ffi.so must be byte-identical to TREE's (checked): the modules import
#               that library's C ABI only, resolved at load from the device's tvm_ffi, so the
#               interpreter's Python version need not be the device's.
#   ARCH_LIST   FLASHINFER_CUDA_ARCH_LIST, default "9.0a" (the H200, sm_90a cubins, no PTX)
#   MAX_JOBS    parallel nvcc jobs, default 2
#   CUDA_HOME   default /usr/local/cuda: its nvcc should be the device's version (both modules
#               need libcudart.so.13 at load, and the CUDA driver at the first launch)
#
# Outside the shipped package and never run by CI; no FlashInfer file enters the repository.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 TREE" >&2
  exit 2
fi
tree=$(cd "$1" && pwd)
python=${PYTHON:-python3}
if [ ! -f "$tree/flashinfer/jit/core.py" ] || [ ! -f "$tree/tvm_ffi/lib/libtvm_ffi.so" ]; then
  echo "$0: $tree is not a trimmed FlashInfer tree (trim_flashinfer.sh)" >&2
  exit 2
fi

# The interpreter's libtvm_ffi.so is the one the modules are compiled against (its headers);
# the device resolves their TVMFFI* symbols in the tree's copy.
ours=$("$python" -c 'import tvm_ffi.libinfo as i; print(i.find_libtvm_ffi())')
if ! cmp -s "$ours" "$tree/tvm_ffi/lib/libtvm_ffi.so"; then
  echo "$0: $ours differs from $tree/tvm_ffi/lib/libtvm_ffi.so: install TREE's apache-tvm-ffi version" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tree"
cp -r "$tree/flashinfer" "$tree"/flashinfer_python-*.dist-info "$work/tree/"
rm -rf "$work/tree/flashinfer/data/aot"
if [ ! -d "$work/tree/flashinfer/data/csrc/cake_sampling" ]; then
  "$python" "$(dirname "$0")/unpack_cake_source.py" "$tree/cake_sampling.tar.xz" "$work/tree/flashinfer/data/csrc"
fi

# One ninja run over both modules (MAX_JOBS jobs: cake's single translation unit beside the
# sampling module's three); writes "NAME PATH" per module to the file named by its argument.
PYTHONPATH="$work/tree" PATH="$(dirname "$(command -v "$python")"):$PATH" \
  FLASHINFER_CUDA_ARCH_LIST="${ARCH_LIST:-9.0a}" CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
  FLASHINFER_WORKSPACE_BASE="$work/ws" FLASHINFER_JIT_PREBUILD_MAX_JOBS="${MAX_JOBS:-2}" \
  "$python" - "$work/built.txt" <<'EOF'
import pathlib
import sys

from flashinfer.jit.cake_sampling import gen_cake_sampling_module
from flashinfer.jit.core import build_jit_specs
from flashinfer.jit.sampling import gen_sampling_module

specs = [gen_sampling_module(), gen_cake_sampling_module()]
build_jit_specs(specs, verbose=False, skip_prebuilt=False)
for spec in specs:
    if not spec.jit_library_path.is_file():
        sys.exit(f"{spec.name}: no {spec.jit_library_path} after the build")
pathlib.Path(sys.argv[1]).write_text("".join(f"{s.name} {s.jit_library_path}\n" for s in specs))
EOF

rm -rf "$tree/flashinfer/data/aot"
while read -r name path; do
  mkdir -p "$tree/flashinfer/data/aot/$name"
  cp "$path" "$tree/flashinfer/data/aot/$name/$name.so"
done <"$work/built.txt"
(cd "$tree" && sha256sum flashinfer/data/aot/*/*.so)
echo "$(du -sh "$tree/flashinfer/data/aot" | cut -f1) in $tree/flashinfer/data/aot"
