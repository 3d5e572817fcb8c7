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
#include <limits>

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
// One list for both runtimes: most names differ only by the cuda / hip prefix, so an alias
// added here exists on both or fails to compile on both. The few that differ beyond the
// prefix follow the list.
#if defined(SC_GPU_HIP)
#define SC_GPU_RUNTIME(name) hip##name
#else
#define SC_GPU_RUNTIME(name) cuda##name
#endif
using gpuError_t = SC_GPU_RUNTIME(Error_t);
using gpuStream_t = SC_GPU_RUNTIME(Stream_t);
using gpuEvent_t = SC_GPU_RUNTIME(Event_t);
using gpuGraph_t = SC_GPU_RUNTIME(Graph_t);
using gpuGraphExec_t = SC_GPU_RUNTIME(GraphExec_t);
using gpuStreamCaptureStatus = SC_GPU_RUNTIME(StreamCaptureStatus);
#define gpuSuccess SC_GPU_RUNTIME(Success)
#define gpuErrorStreamCaptureUnsupported SC_GPU_RUNTIME(ErrorStreamCaptureUnsupported)
#define gpuErrorInvalidValue SC_GPU_RUNTIME(ErrorInvalidValue)
#define gpuMalloc SC_GPU_RUNTIME(Malloc)
#define gpuFree SC_GPU_RUNTIME(Free)
#define gpuMemcpy SC_GPU_RUNTIME(Memcpy)
#define gpuMemcpyAsync SC_GPU_RUNTIME(MemcpyAsync)
#define gpuMemset SC_GPU_RUNTIME(Memset)
#define gpuMemsetAsync SC_GPU_RUNTIME(MemsetAsync)
#define gpuMemcpyHostToDevice SC_GPU_RUNTIME(MemcpyHostToDevice)
#define gpuMemcpyDeviceToHost SC_GPU_RUNTIME(MemcpyDeviceToHost)
#define gpuMemcpyDeviceToDevice SC_GPU_RUNTIME(MemcpyDeviceToDevice)
#define gpuStreamCreate SC_GPU_RUNTIME(StreamCreate)
#define gpuStreamCreateWithFlags SC_GPU_RUNTIME(StreamCreateWithFlags)
#define gpuStreamNonBlocking SC_GPU_RUNTIME(StreamNonBlocking)
#define gpuStreamDestroy SC_GPU_RUNTIME(StreamDestroy)
#define gpuStreamSynchronize SC_GPU_RUNTIME(StreamSynchronize)
#define gpuStreamIsCapturing SC_GPU_RUNTIME(StreamIsCapturing)
#define gpuStreamCaptureStatusNone SC_GPU_RUNTIME(StreamCaptureStatusNone)
#define gpuStreamBeginCapture SC_GPU_RUNTIME(StreamBeginCapture)
#define gpuStreamEndCapture SC_GPU_RUNTIME(StreamEndCapture)
#define gpuStreamCaptureModeGlobal SC_GPU_RUNTIME(StreamCaptureModeGlobal)
#define gpuStreamCaptureModeThreadLocal SC_GPU_RUNTIME(StreamCaptureModeThreadLocal)
#define gpuGraphLaunch SC_GPU_RUNTIME(GraphLaunch)
#define gpuGraphDestroy SC_GPU_RUNTIME(GraphDestroy)
#define gpuGraphExecDestroy SC_GPU_RUNTIME(GraphExecDestroy)
#define gpuEventCreate SC_GPU_RUNTIME(EventCreate)
#define gpuEventDestroy SC_GPU_RUNTIME(EventDestroy)
#define gpuEventRecord SC_GPU_RUNTIME(EventRecord)
#define gpuEventSynchronize SC_GPU_RUNTIME(EventSynchronize)
#define gpuEventElapsedTime SC_GPU_RUNTIME(EventElapsedTime)
#define gpuDeviceSynchronize SC_GPU_RUNTIME(DeviceSynchronize)
#define gpuGetDeviceCount SC_GPU_RUNTIME(GetDeviceCount)
#define gpuGetDevice SC_GPU_RUNTIME(GetDevice)
#define gpuGetLastError SC_GPU_RUNTIME(GetLastError)
#define gpuGetErrorString SC_GPU_RUNTIME(GetErrorString)
#define gpuDeviceGetAttribute SC_GPU_RUNTIME(DeviceGetAttribute)

// Named differently, or with other arguments.
#if defined(SC_GPU_HIP)
#define gpuMallocHost hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuGraphInstantiate(exec, graph) hipGraphInstantiate((exec), (graph), nullptr, nullptr, 0)
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#else
#define gpuMallocHost cudaMallocHost
#define gpuFreeHost cudaFreeHost
#define gpuGraphInstantiate(exec, graph) cudaGraphInstantiate((exec), (graph), 0)
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

// `x` folded by `op` over groups of `Width` lanes (a power of two up to the warp)
// by one fixed butterfly, in every lane of each group: the same bits in every lane
// and every call.
template <int Width, typename T, typename Op>
__device__ __forceinline__ T gpu_warp_fold(T x, Op op) {
#pragma unroll
  for (int lanes = Width / 2; lanes > 0; lanes /= 2) x = op(x, gpu_shfl_xor(x, lanes));
  return x;
}

// The warp's largest 64-bit value, OR and sum, in every lane. On CUDA the 32-bit
// words go through REDUX (one instruction each, sm_80+) where a butterfly of
// shuffles takes five to ten; HIP has no REDUX and takes the butterfly.
__device__ __forceinline__ unsigned long long gpu_warp_max(unsigned long long x) {
#if defined(SC_GPU_HIP)
  return gpu_warp_fold<sc_warp_size>(
      x, [](unsigned long long a, unsigned long long b) { return a < b ? b : a; });
#else
  const unsigned high = __reduce_max_sync(0xffffffffu, static_cast<unsigned>(x >> 32));
  const unsigned low = __reduce_max_sync(
      0xffffffffu, static_cast<unsigned>(x >> 32) == high ? static_cast<unsigned>(x) : 0u);
  return static_cast<unsigned long long>(high) << 32 | low;
#endif
}
__device__ __forceinline__ unsigned gpu_warp_or(unsigned x) {
#if defined(SC_GPU_HIP)
  return gpu_warp_fold<sc_warp_size>(x, [](unsigned a, unsigned b) { return a | b; });
#else
  return __reduce_or_sync(0xffffffffu, x);
#endif
}
__device__ __forceinline__ int gpu_warp_add(int x) {
#if defined(SC_GPU_HIP)
  return gpu_warp_fold<sc_warp_size>(x, [](int a, int b) { return a + b; });
#else
  return __reduce_add_sync(0xffffffffu, x);
#endif
}
__device__ __forceinline__ float gpu_warp_sum(float x) {
  return gpu_warp_fold<sc_warp_size>(x, [](float a, float b) { return a + b; });
}
__device__ __forceinline__ float gpu_warp_max(float x) {
  return gpu_warp_fold<sc_warp_size>(x, [](float a, float b) { return fmaxf(a, b); });
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
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n"
               : "=r"(before)
               : "l"(counter)
               : "memory");
  return before;
#endif
}
#endif

// ---------------------------------------------------------------------------
// Block-wide primitives. Every fold over a block is block_fold: each warp folds,
// lane 0 stages the warp's value in shared memory, one barrier, and every warp
// folds the staged values (butterflies in a fixed order: the same bits in every
// thread and every call). Scans are CUB on CUDA and rocPRIM on HIP. (CUB's
// reduction and a broadcast of its thread-0 result took three barriers and a
// serial fold of the warps' values in thread 0.)
// ---------------------------------------------------------------------------
namespace samplecheck::gpu {

// The fold of every thread's `value` over the block, returned to every thread:
// `fold_warp` (a fold over one warp that returns in every lane, from the gpu_warp_*
// above) folds each warp, lane 0 stages the result, and every warp folds the
// staged values (`identity` in the lanes past the last warp). One barrier; `staged`
// must not be rewritten before another. (block_primitives::reduce over a 16-byte
// argmax struct, CUB's reduction and a broadcast, took 0.8 us of a Gumbel call at
// B = 1 on the H200.)
template <int BlockThreads, typename T, typename WarpFold>
__device__ __forceinline__ T block_fold(T value, const T& identity, WarpFold fold_warp,
                                        T (&staged)[BlockThreads / sc_warp_size]) {
  static_assert(BlockThreads % sc_warp_size == 0 && BlockThreads / sc_warp_size <= sc_warp_size);
  const int warp = threadIdx.x / sc_warp_size, lane = threadIdx.x % sc_warp_size;
  value = fold_warp(value);
  if (lane == 0) staged[warp] = value;
  __syncthreads();
  return fold_warp(lane < BlockThreads / sc_warp_size ? staged[lane] : identity);
}

// Scalar folds and the scan over a block, with storage the next call may reuse.
template <typename T, int BlockThreads>
struct block_primitives {
  static constexpr int kWarps = BlockThreads / sc_warp_size;
#if defined(SC_GPU_HIP)
  using scan_impl = rocprim::block_scan<T, BlockThreads>;
  using scan_storage = typename scan_impl::storage_type;
#else
  using scan_impl = cub::BlockScan<T, BlockThreads, cub::BLOCK_SCAN_WARP_SCANS>;
  using scan_storage = typename scan_impl::TempStorage;
#endif
  struct shared_type {
    union {
      scan_storage scan;
      T staged[kWarps];
    };
  };
  struct sum_op {
    __device__ __forceinline__ T operator()(const T& a, const T& b) const { return a + b; }
  };
  // Our own functor: CCCL 3 dropped cub::Max, and NaN handling stays ours.
  struct max_op {
    __device__ __forceinline__ T operator()(const T& a, const T& b) const { return a < b ? b : a; }
  };

  // Any associative, commutative operator with its identity, over the block,
  // returned to every thread.
  template <typename Op>
  __device__ __forceinline__ static T reduce(T value, Op op, T identity, shared_type& shared) {
    value = block_fold<BlockThreads>(
        value, identity, [op](const T& x) { return gpu_warp_fold<sc_warp_size>(x, op); },
        shared.staged);
    __syncthreads();  // the next call may rewrite `staged`
    return value;
  }
  __device__ __forceinline__ static T sum(T value, shared_type& shared) {
    return reduce(value, sum_op(), T(0), shared);
  }
  static constexpr T kLowest =  // max's identity
      std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                           : std::numeric_limits<T>::lowest();
  __device__ __forceinline__ static T max(T value, shared_type& shared) {
    return reduce(value, max_op(), kLowest, shared);
  }

  // Inclusive prefix sum in thread order; `total` gets the block aggregate.
  __device__ __forceinline__ static T inclusive_sum(T value, T& total, shared_type& shared) {
    T prefix;
#if defined(SC_GPU_HIP)
    scan_impl().inclusive_scan(value, prefix, total, shared.scan, rocprim::plus<T>());
#else
    scan_impl(shared.scan).InclusiveSum(value, prefix, total);
#endif
    __syncthreads();
    return prefix;
  }
};

// Stable ascending radix sort of (key, value) pairs on bits [begin_bit, end_bit) of
// the key, over the whole device: equal keys keep their input order.
template <typename Key, typename Value>
inline gpuError_t radix_sort_pairs(void* temp, size_t& temp_bytes, const Key* keys_in,
                                   Key* keys_out, const Value* values_in, Value* values_out,
                                   int num_items, int begin_bit, int end_bit, gpuStream_t stream) {
#if defined(SC_GPU_HIP)
  return rocprim::radix_sort_pairs(
      temp, temp_bytes, keys_in, keys_out, values_in, values_out, static_cast<unsigned>(num_items),
      static_cast<unsigned>(begin_bit), static_cast<unsigned>(end_bit), stream);
#else
  return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out,
                                         num_items, begin_bit, end_bit, stream);
#endif
}

}  // namespace samplecheck::gpu
#endif  // __CUDACC__ || __HIPCC__
