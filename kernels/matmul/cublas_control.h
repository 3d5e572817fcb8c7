// cuBLAS bf16 GEMM (fp32 compute, default algorithm) in the sc_matmul layout.
#pragma once

#include <cstdint>
#include <string>

namespace samplecheck::matmul {

// out[m, n] = bf16(a[m, k] . weight[n, k] (+ bias[n])) on `stream`; device
// pointers. Returns an empty string on success, else what failed.
std::string run_cublas(const uint16_t* a, const uint16_t* weight, const uint16_t* bias,
                       uint16_t* out, int64_t m, int64_t n, int64_t k, void* stream);

}  // namespace samplecheck::matmul
