#!/usr/bin/env bash
# Fetches llama.cpp's source from a published package, verifies it, and builds the one
# library that its sampler API lives in, for the CPU, into a prefix:
#
#   tools/scripts/build_llamacpp.sh OUT_DIR [JOBS]
#
# Source: llama-cpp-python 0.3.36's source distribution from PyPI, which carries llama.cpp
# (ggml-org/llama.cpp@0c1e57098, its CHANGELOG says) under vendor/llama.cpp. pip downloads
# it by name and version and refuses any other bytes (--require-hashes); nothing is
# installed. The tarball is kept in OUT_DIR/download, so a second run does not fetch again.
#
# Built: the `llama` target only, static and position-independent (plugins/llamacpp links
# it into a plugin that exports one symbol), without ggml's CPU backend (GGML_CPU=OFF):
# the sampler API works on a llama_token_data_array that the caller fills and runs no
# ggml graph, so the compute kernels are not needed. No tests, tools, examples, server or
# common library. Installed to OUT_DIR/prefix (include/llama.h, lib/libllama.a,
# lib/libggml*.a); OUT_DIR/build-seconds holds the wall time of the configure and build.
# JOBS: parallel compile jobs (default 2). LLAMACPP_CMAKE_ARGS (environment): more
# arguments for llama.cpp's configure, split on spaces (e.g. compiler launchers).
#
# Outside this repository: no llama.cpp file enters it. CMake runs this script when
# SAMPLECHECK_LLAMACPP is ON (plugins/llamacpp/CMakeLists.txt).
set -euo pipefail

readonly version=0.3.36
readonly sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
readonly tarball=llama_cpp_python-${version}.tar.gz

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 OUT_DIR [JOBS]" >&2
  exit 2
fi
out=$(realpath -m "$1")
jobs=${2:-2}
# Debian's Python (the one install_deps.sh provisions), else the python3 on PATH.
python=/usr/bin/python3
[ -x "$python" ] || python=python3

mkdir -p "$out/download"
if ! echo "$sha256  $out/download/$tarball" | sha256sum --check --status 2>/dev/null; then
  rm -f "$out/download/$tarball"
  requirement=$(mktemp)
  trap 'rm -f "$requirement"' EXIT
  echo "llama-cpp-python==$version --hash=sha256:$sha256" >"$requirement"
  # --no-binary for this package only: its build requirements (scikit-build-core, for the
  # metadata step pip runs on any source distribution) come as wheels, not built from source.
  "$python" -m pip download --quiet --no-deps --no-binary llama-cpp-python --require-hashes \
    -r "$requirement" -d "$out/download"
fi
echo "$sha256  $out/download/$tarball" | sha256sum --check --quiet

# Only what the library's CMake project reads: its top-level files, cmake/, ggml/, src/,
# include/, vendor/ (added unconditionally by its CMakeLists.txt) and the licences.
src="$out/src"
rm -rf "$src"
mkdir -p "$src"
root=llama_cpp_python-${version}/vendor/llama.cpp
tar -xzf "$out/download/$tarball" -C "$src" --strip-components=3 --wildcards \
  "$root/CMakeLists.txt" "$root/LICENSE" "$root/cmake" "$root/ggml" "$root/src" \
  "$root/include" "$root/vendor" "$root/licenses"

start=$(date +%s)
rm -rf "$out/build" "$out/prefix"
cmake -S "$src" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DGGML_NATIVE=OFF -DGGML_CPU=OFF -DGGML_OPENMP=OFF \
  -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_NUMBER=0 -DLLAMA_BUILD_COMMIT=0c1e57098 \
  -DCMAKE_INSTALL_PREFIX="$out/prefix" ${LLAMACPP_CMAKE_ARGS:-} >"$out/configure.log" # split on purpose
cmake --build "$out/build" --target llama -j "$jobs"
cmake --install "$out/build" --component Unspecified >"$out/install.log"
echo $(($(date +%s) - start)) >"$out/build-seconds"
echo "llama.cpp (llama-cpp-python $version) built in $(cat "$out/build-seconds") s: $out/prefix"
