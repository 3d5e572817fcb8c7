// The PTX the tensor-core matmul (mma_kernels.cu) is made of: the shared-memory
// swizzle, cp.async, the TMA copy and its mbarriers, ldmatrix and mma.sync, each one
// instruction (or a wait loop) behind a named function. Included by mma_kernels.cu
// only (CUDA, sm_90a: never a HIP object).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace samplecheck::matmul {
// Internal linkage, as when all of this was in mma_kernels.cu: the only includer.
namespace {

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Element offset of 16-byte chunk `chunk` of row `row` in a [rows][BK] tile. The
// chunk's low 3 bits are XORed with row % 8, so the 8 rows one ldmatrix matrix
// reads (same logical chunk) land in 8 different 16-byte bank groups: no bank
// conflicts (BK = 64 or 128: 8 or 16 chunks a row, the XOR stays in the row).
template <int BK>
__device__ __forceinline__ int swizzle(int row, int chunk) {
  return row * BK + ((chunk ^ (row & 7)) << 3);
}

// 16 bytes global -> shared, bypassing L1 (W is read once); src_bytes = 0 fills zeros.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

// How a block's k-tiles reach shared memory: scalar loads and stores (any
// alignment and K), cp.async of 16 bytes a thread, or the copy engine (TMA).
enum class load_path { scalar, cp_async, tma };

__device__ __forceinline__ void mbarrier_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
}
// One arrival (the issuing thread's) that also expects `bytes` from the copy engine.
__device__ __forceinline__ void mbarrier_expect_bytes(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, "
        "1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
}
// Box (column k, row `row`) of `map` into shared `dst`; rows and columns past the
// tensor arrive as zeros and still count in the mbarrier's bytes.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int32_t k,
                                         int32_t row, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k), "r"(row), "r"(bar)
      : "memory");
}

// Four 8x8 b16 matrices; lanes 8q..8q+7 give the row addresses of matrix q, and
// thread t receives row t / 4, columns 2 (t % 4) and +1 of each, in r[q].
__device__ __forceinline__ void ldmatrix_x4(uint32_t address, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
}

// c = A (16 x 16, row) . B (16 x 8, col) + c, bf16 inputs, fp32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Byte offset of k16 step kk of a thread's ldmatrix row, from `offset`, its
// step-0 offset (chunk h = 0 or 1). The step's chunk 2 kk + h swizzles to
// (2 kk & 8) + ((2 kk & 6) ^ (h ^ row % 8)), and bits 4-6 of `offset` hold
// h ^ row % 8 (rows are whole 128-byte units): one XOR and a constant.
__device__ __forceinline__ uint32_t k16_offset(uint32_t offset, int kk) {
  return (offset ^ static_cast<uint32_t>((kk & 3) << 5)) + static_cast<uint32_t>((kk & 4) << 5);
}

}  // namespace
}  // namespace samplecheck::matmul
