#!/usr/bin/env bash
# Installs what samplecheck builds with on Debian 12 (as root, or through sudo).
# The CUDA 13 toolkit is not a Debian package: it is used when present
# (/usr/local/cuda), and the CUDA subjects are skipped from the build otherwise.
set -euo pipefail
packages=(
  cmake ninja-build g++ python3 python3-numpy python3-pytest  # python3-*: the Python subject tests
  python3-venv           # CI's wheel check: the wheel's build environment and a fresh venv
  catch2 libboost-math-dev libeigen3-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libxxhash-dev git    # fingerprints (XXH3); samplecheck bisect and its test
  hipcc librocprim-dev   # HIP: the kernel sources compile for gfx90a (no AMD GPU needed)
  python3-matplotlib python3-jsonschema  # report.html's plots; report.json's schema test
  python3-markdown-it    # python_docs_links: the docs' links and headings, parsed
  clang-format           # CI: the tree keeps .clang-format (Debian 12: clang-format 14)
  python3-pip            # tools/scripts/build_llamacpp.sh: pip download of llama.cpp's source
)
# The extended report test (samplecheck_report_screenshot) also wants chromium; it
# reports skipped without it.
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# The build and samplecheck use Debian's Python by path (CMake's SAMPLECHECK_PYTHON), not the
# python3 first on PATH (pyenv, conda), which may lack these: fail here, not in the tests.
/usr/bin/python3 -c 'import matplotlib, numpy, pytest, jsonschema' ||
  { echo "install_deps.sh: /usr/bin/python3 cannot import matplotlib, numpy, pytest, jsonschema" >&2; exit 1; }
