// One function body for host and device code (Random123's convention): the
// reference and the kernels share the exact same arithmetic.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define SC_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define SC_HOST_DEVICE inline
#endif
