#!/usr/bin/env bash
# Turns the flashinfer-python and apache-tvm-ffi wheels into the smallest directory tree
# that imports `flashinfer.sampling` and `flashinfer.cake_sampling` and JIT-builds their
# modules, for a machine that cannot install packages (the H200: torch 2.11, nvcc 13.0,
# Python 3.12; a call carries 64 MiB).
#
#   tools/scripts/trim_flashinfer.sh WHEEL_DIR OUT_DIR
#
# WHEEL_DIR holds flashinfer_python-0.7.2.post1-*.whl and apache_tvm_ffi-0.1.*.whl (see
# docs/h200.md for the pip download line); any other wheel there (nvidia-ml-py, ninja,
# requests ...) is unpacked into OUT_DIR/fallback, which tools/scripts/h200_qualify_python.sh
# puts on the path only for modules the machine lacks.
#
# What stays:
#  - flashinfer/sampling.py, flashinfer/cake_sampling.py and every module they import at
#    module level (an AST walk: the
#    names imported inside functions are left out, e.g. the radix top-k that the scalar
#    top_k "top_k_first" fast path imports; the adapters pass per-row tensors, which never
#    take it). The package __init__, which imports every module, is replaced by one line
#    that reads the version, so `import flashinfer.sampling` runs only that chain.
#  - data/csrc/{sampling.cu, renorm.cu, flashinfer_sampling_binding.cu, sampling_utils.h,
#    tvm_ffi_utils.h}, data/include (FlashInfer's headers), the cccl headers the JIT puts on
#    -I (cub, libcudacxx/include, thrust), and empty cutlass / spdlog include folders (the
#    JIT names them with -isystem; the sampling module includes neither).
#  - the cake sampler's frozen source (data/csrc/cake_sampling: its binding header, manifest
#    and 14 generated files, 47 MB) as one xz archive, OUT_DIR/cake_sampling.tar.xz (0.2 MB):
#    tools/scripts/h200_qualify_python.sh unpacks it into the tree before the first import,
#    byte for byte (the adapter checks each file against the wheel's RECORD).
#  - apache-tvm-ffi without its C++ sources and libbacktrace's sources (its testing library
#    stays: tvm_ffi.core loads it at import).
#
# Outside the shipped package and never run by CI; no FlashInfer file enters the repository.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 WHEEL_DIR OUT_DIR" >&2
  exit 2
fi
wheels=$(cd "$1" && pwd)
out=$(realpath -m "$2")
fi_wheel=$(ls "$wheels"/flashinfer_python-*.whl 2>/dev/null | head -1)
tvm_wheel=$(ls "$wheels"/apache_tvm_ffi-*.whl 2>/dev/null | head -1)
if [ -z "$fi_wheel" ] || [ -z "$tvm_wheel" ]; then
  echo "$0: $wheels must hold flashinfer_python-*.whl and apache_tvm_ffi-*.whl" >&2
  exit 2
fi
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
  echo "$0: $out exists and is not empty" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m zipfile -e "$fi_wheel" "$work/fi"
python3 -m zipfile -e "$tvm_wheel" "$work/tvm"
mkdir -p "$out"

# The module-level import closure of flashinfer.sampling, as paths relative to the wheel root.
python3 - "$work/fi" flashinfer.sampling flashinfer.cake_sampling >"$work/modules.txt" <<'EOF'
import ast
import pathlib
import sys

root = pathlib.Path(sys.argv[1])


def path_of(module):
    p = root.joinpath(*module.split("."))
    if (p / "__init__.py").exists():
        return p / "__init__.py"
    if p.with_suffix(".py").exists():
        return p.with_suffix(".py")
    return None


def module_level(body):
    """Statements that run at import: not the bodies of functions or classes."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            sub = getattr(node, field, None)
            if isinstance(sub, list):
                yield from module_level(sub)


seen, todo = set(), list(sys.argv[2:])
while todo:
    module = todo.pop()
    if module in seen:
        continue
    seen.add(module)
    if module == "flashinfer":
        continue  # its __init__ is replaced by the stub
    parts = module.split(".")
    todo += [".".join(parts[:i]) for i in range(2, len(parts))]  # parent packages' __init__
    source = path_of(module)
    if source is None:
        continue  # a name imported from a module, not a module
    print(source.relative_to(root))
    package = module if source.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in module_level(ast.parse(source.read_text()).body):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "flashinfer":
                continue
            todo.append(target)
            todo += [f"{target}.{a.name}" for a in node.names if path_of(f"{target}.{a.name}")]
        elif isinstance(node, ast.Import):
            todo += [a.name for a in node.names if a.name.split(".")[0] == "flashinfer"]
EOF

(cd "$work/fi" && xargs -a "$work/modules.txt" cp --parents -t "$out")
cat >"$out/flashinfer/__init__.py" <<'EOF'
# Trimmed by samplecheck's tools/scripts/trim_flashinfer.sh: FlashInfer's own __init__ imports
# every module; this tree holds only flashinfer.sampling's and flashinfer.cake_sampling's
# import chains. Import them directly.
from .version import __version__  # noqa: F401
EOF

data=flashinfer/data
(cd "$work/fi" && cp --parents -t "$out" \
  $data/csrc/sampling.cu $data/csrc/renorm.cu $data/csrc/flashinfer_sampling_binding.cu \
  $data/csrc/sampling_utils.h $data/csrc/tvm_ffi_utils.h)
(cd "$work/fi" && cp -r --parents -t "$out" $data/include $data/cccl/cub/cub \
  $data/cccl/libcudacxx/include $data/cccl/thrust/thrust)
# The cake sampler's frozen source, compressed (47 MB of generated CUDA in 0.2 MB).
python3 - "$work/fi/$data/csrc" "$out/cake_sampling.tar.xz" <<'EOF'
import sys
import tarfile

with tarfile.open(sys.argv[2], "w:xz", preset=9) as archive:
    archive.add(f"{sys.argv[1]}/cake_sampling", arcname="cake_sampling")
EOF
mkdir -p "$out/$data/cutlass/include" "$out/$data/cutlass/tools/util/include" \
  "$out/$data/spdlog/include"
cp -r "$work/fi"/flashinfer_python-*.dist-info "$out/"

rm -rf "$work/tvm/tvm_ffi/3rdparty/libbacktrace" \
  "$work/tvm/tvm_ffi/src"
cp -r "$work/tvm/tvm_ffi" "$work"/tvm/apache_tvm_ffi-*.dist-info "$out/"

shopt -s nullglob
for wheel in "$wheels"/*.whl; do
  case $(basename "$wheel") in
    flashinfer_python-* | apache_tvm_ffi-*) ;;
    *) python3 -m zipfile -e "$wheel" "$out/fallback" ;;
  esac
done
find "$out" -name __pycache__ -prune -exec rm -rf {} +
[ -d "$out/fallback" ] && find "$out/fallback" -path '*/bin/*' -type f -exec chmod +x {} +

echo "$(wc -l <"$work/modules.txt") flashinfer modules; $(du -sh "$out" | cut -f1) in $out"
du -sh "$out"/* | sort -h
