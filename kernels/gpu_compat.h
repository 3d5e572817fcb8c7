// One kernel source for CUDA (nvcc, sm_90a) and HIP (hipcc, gfx90a).
//
// The kernels name the runtime through gpu* aliases, the warp through
// sc_warp_size (32 on NVIDIA, 64 on gfx90a: a wavefront is 64 lanes, so any code
// that hard-codes 32 silently scans half a wavefront there), and block-wide
// reduce / scan / segmented sort through the wrappers at the bottom, which are
// CUB on CUDA and rocPRIM on HIP (Debian package librocprim-dev).
#pragma once

#include <cstddef>
#include <cstdint>

// Host-only C++ (tests, the bench driver) may include this for the runtime aliases;
// the block primitives need the device compiler.
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#include <rocprim/rocprim.hpp>
#define SC_GPU_HIP 1
#else
#include <cuda_runtime.h>
#if defined(__CUDACC__)
#include <cub/cub.cuh>
#endif
#define SC_GPU_CUDA 1
#endif

// ---------------------------------------------------------------------------
// Runtime API
// ---------------------------------------------------------------------------
#if defined(SC_GPU_HIP)
using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuGraph_t = hipGraph_t;
using gpuGraphExec_t = hipGraphExec_t;
using gpuStreamCaptureStatus = hipStreamCaptureStatus;
#define gpuSuccess hipSuccess
#define gpuErrorStreamCaptureUnsupported hipErrorStreamCaptureUnsupported
#define gpuErrorInvalidValue hipErrorInvalidValue
#define gpuMalloc hipMalloc
#define gpuMallocHost hipHostMalloc
#define gpuFree hipFree
#define gpuFreeHost hipHostFree
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemset hipMemset
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuStreamCreate hipStreamCreate
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamIsCapturing hipStreamIsCapturing
#define gpuStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuStreamCaptureModeGlobal hipStreamCaptureModeGlobal
#define gpuStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define gpuGraphInstantiate(exec, graph) hipGraphInstantiate((exec), (graph), nullptr, nullptr, 0)
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphDestroy hipGraphDestroy
#define gpuGraphExecDestroy hipGraphExecDestroy
#define gpuEventCreate hipEventCreate
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuGetLastError hipGetLastError
#define gpuGetErrorString hipGetErrorString
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#else
using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
using gpuStreamCaptureStatus = cudaStreamCaptureStatus;
#define gpuSuccess cudaSuccess
#define gpuErrorStreamCaptureUnsupported cudaErrorStreamCaptureUnsupported
#define gpuErrorInvalidValue cudaErrorInvalidValue
#define gpuMalloc cudaMalloc
#define gpuMallocHost cudaMallocHost
#define gpuFree cudaFree
#define gpuFreeHost cudaFreeHost
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemset cudaMemset
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuStreamCreate cudaStreamCreate
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuStreamCaptureModeGlobal cudaStreamCaptureModeGlobal
#define gpuStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define gpuGraphInstantiate(exec, graph) cudaGraphInstantiate((exec), (graph), 0)
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuGetLastError cudaGetLastError
#define gpuGetErrorString cudaGetErrorString
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#endif

// ---------------------------------------------------------------------------
// Warp / wavefront
// ---------------------------------------------------------------------------
#if defined(SC_GPU_HIP)
// gfx90a (MI200) runs 64-lane wavefronts; RDNA's wave32 is not a target here.
inline constexpr int sc_warp_size = 64;
#else
inline constexpr int sc_warp_size = 32;
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
// The butterfly shuffle over the whole warp (the matmul's lane reduction). CUDA
// needs the participation mask; HIP's wavefront shuffles take none.
template <typename T>
__device__ __forceinline__ T gpu_shfl_xor(T value, int lane_mask) {
#if defined(SC_GPU_HIP)
  return __shfl_xor(value, lane_mask, sc_warp_size);
#else
  return __shfl_xor_sync(0xffffffffu, value, lane_mask, sc_warp_size);
#endif
}

// 1 / x to within 1 ulp for normal x: one MUFU.RCP (CUDA's __fdividef adds range
// fix-ups for huge denominators that a caller with x in (0, 1] does not need).
__device__ __forceinline__ float gpu_reciprocal_approx(float x) {
#if defined(SC_GPU_HIP)
  return __builtin_amdgcn_rcpf(x);
#else
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#endif
}

// The arrival count of a block that has just stored its share (release) and, if
// it is the last, will read the others' shares (acquire): one device-scope
// acq_rel atomic add, returning the count before it. It replaces __threadfence()
// + atomicAdd + __threadfence(): on sm_90 each __threadfence() is a sequentially
// consistent fence (MEMBAR.SC.GPU and an L1 invalidate) on the path of the
// last block.
#if defined(__CUDACC__) || defined(__HIPCC__)
__device__ __forceinline__ unsigned gpu_arrive(unsigned* counter) {
#if defined(SC_GPU_HIP)
  return __hip_atomic_fetch_add(counter, 1u, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_AGENT);
#else
  unsigned before;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n" : "=r"(before) : "l"(counter) : "memory");
  return before;
#endif
}
#endif

// ---------------------------------------------------------------------------
// Block-wide primitives: CUB on CUDA, rocPRIM on HIP. Results of reduce() and the
// scan aggregate are broadcast to every thread (both libraries leave them in
// thread 0 / every thread respectively; the kernels always want all threads).
// Every call ends with a barrier, so storage may be reused by the next call.
// ---------------------------------------------------------------------------
namespace samplecheck::gpu {

template <typename T, int BlockThreads>
struct block_primitives {
#if defined(SC_GPU_HIP)
  using reduce_impl = rocprim::block_reduce<T, BlockThreads>;
  using scan_impl = rocprim::block_scan<T, BlockThreads>;
  union storage_type {
    typename reduce_impl::storage_type reduce;
    typename scan_impl::storage_type scan;
  };
#else
  using reduce_impl = cub::BlockReduce<T, BlockThreads, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
  using scan_impl = cub::BlockScan<T, BlockThreads, cub::BLOCK_SCAN_WARP_SCANS>;
  union storage_type {
    typename reduce_impl::TempStorage reduce;
    typename scan_impl::TempStorage scan;
  };
#endif
  // Our own functor: CCCL 3 dropped cub::Max, and NaN handling stays ours.
  struct max_op {
    __device__ __forceinline__ T operator()(const T& a, const T& b) const { return a < b ? b : a; }
  };
  struct shared_type {
    storage_type storage;
    T broadcast;
  };

  // Sum over the block, returned to every thread.
  __device__ __forceinline__ static T sum(T value, shared_type& shared) {
    T total;
#if defined(SC_GPU_HIP)
    reduce_impl().reduce(value, total, shared.storage.reduce, rocprim::plus<T>());
#else
    total = reduce_impl(shared.storage.reduce).Sum(value);
#endif
    if (threadIdx.x == 0) shared.broadcast = total;
    __syncthreads();
    total = shared.broadcast;
    __syncthreads();
    return total;
  }

  // Max over the block, returned to every thread.
  __device__ __forceinline__ static T max(T value, shared_type& shared) {
    T result;
#if defined(SC_GPU_HIP)
    reduce_impl().reduce(value, result, shared.storage.reduce, max_op());
#else
    result = reduce_impl(shared.storage.reduce).Reduce(value, max_op());
#endif
    if (threadIdx.x == 0) shared.broadcast = result;
    __syncthreads();
    result = shared.broadcast;
    __syncthreads();
    return result;
  }

  // Any associative operator (argmax pairs, say), returned to every thread.
  template <typename Op>
  __device__ __forceinline__ static T reduce(T value, Op op, shared_type& shared) {
    T result;
#if defined(SC_GPU_HIP)
    reduce_impl().reduce(value, result, shared.storage.reduce, op);
#else
    result = reduce_impl(shared.storage.reduce).Reduce(value, op);
#endif
    if (threadIdx.x == 0) shared.broadcast = result;
    __syncthreads();
    result = shared.broadcast;
    __syncthreads();
    return result;
  }

  // Inclusive prefix sum in thread order; `total` gets the block aggregate.
  __device__ __forceinline__ static T inclusive_sum(T value, T& total, shared_type& shared) {
    T prefix;
#if defined(SC_GPU_HIP)
    scan_impl().inclusive_scan(value, prefix, total, shared.storage.scan, rocprim::plus<T>());
#else
    scan_impl(shared.storage.scan).InclusiveSum(value, prefix, total);
#endif
    __syncthreads();
    return prefix;
  }
};

// Stable ascending radix sort of (key, value) pairs on bits [begin_bit, end_bit) of
// the key, over the whole device: equal keys keep their input order.
template <typename Key, typename Value>
inline gpuError_t radix_sort_pairs(void* temp, size_t& temp_bytes, const Key* keys_in, Key* keys_out,
                                   const Value* values_in, Value* values_out, int num_items, int begin_bit,
                                   int end_bit, gpuStream_t stream) {
#if defined(SC_GPU_HIP)
  return rocprim::radix_sort_pairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out,
                                   static_cast<unsigned>(num_items), static_cast<unsigned>(begin_bit),
                                   static_cast<unsigned>(end_bit), stream);
#else
  return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, num_items,
                                         begin_bit, end_bit, stream);
#endif
}

}  // namespace samplecheck::gpu
#endif  // __CUDACC__ || __HIPCC__
