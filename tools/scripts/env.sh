# Sourced by the scripts: puts the CUDA toolkit on PATH when the machine has one.
if [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
  export CUDACXX="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
fi
