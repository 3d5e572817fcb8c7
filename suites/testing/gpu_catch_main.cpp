// Main for GPU test executables: no device means "skipped" (exit 77), never a pass.
#define CATCH_CONFIG_RUNNER
#include <cstdio>

#include "suites/testing/catch_session.h"

#ifdef SAMPLECHECK_HAVE_CUDA
#include <cuda_runtime.h>
#endif

int main(int argc, char* argv[]) {
  int devices = 0;
#ifdef SAMPLECHECK_HAVE_CUDA
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
#endif
  if (devices == 0) {
    std::printf("SKIPPED: no CUDA device is present; this GPU test did not run.\n");
    return 77;
  }
  return samplecheck::testing::run_catch_session(argc, argv);
}
