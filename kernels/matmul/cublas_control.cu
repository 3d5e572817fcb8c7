#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <mutex>

#include "kernels/matmul/cublas_control.h"

namespace samplecheck::matmul {
namespace {

// With beta = 1 cuBLAS adds C, so the bias enters as C pre-filled with it (bf16
// bias is exact in C's bf16).
__global__ void broadcast_bias_kernel(const uint16_t* bias, uint16_t* out, int64_t m, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < m * n;
       i += stride)
    out[i] = bias[i % n];
}

cublasHandle_t shared_handle(std::string& error) {
  static std::once_flag once;
  static cublasHandle_t handle = nullptr;
  static cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  std::call_once(once, [] { status = cublasCreate(&handle); });
  if (status != CUBLAS_STATUS_SUCCESS)
    error = std::string("cublasCreate: ") + cublasGetStatusString(status);
  return handle;
}

}  // namespace

std::string run_cublas(const uint16_t* a, const uint16_t* weight, const uint16_t* bias,
                       uint16_t* out, int64_t m, int64_t n, int64_t k, void* stream) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) return "cuBLAS takes 32-bit dimensions";
  std::string error;
  const cublasHandle_t handle = shared_handle(error);
  if (!error.empty()) return error;
  const auto s = static_cast<cudaStream_t>(stream);
  if (cublasSetStream(handle, s) != CUBLAS_STATUS_SUCCESS) return "cublasSetStream failed";
  float beta = 0.0f;
  if (bias != nullptr) {
    const int64_t blocks = (m * n + 255) / 256;
    broadcast_bias_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), 256, 0, s>>>(
        bias, out, m, n);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return cudaGetErrorString(e);
    beta = 1.0f;
  }
  // Row-major out [m, n] is column-major [n, m]: out^T = weight . a^T, with
  // weight row-major [n, k] read as column-major [k, n] and transposed.
  const float alpha = 1.0f;
  const cublasStatus_t status =
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                   static_cast<int>(k), &alpha, weight, CUDA_R_16BF, static_cast<int>(k), a,
                   CUDA_R_16BF, static_cast<int>(k), &beta, out, CUDA_R_16BF, static_cast<int>(n),
                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS)
    return std::string("cublasGemmEx: ") + cublasGetStatusString(status);
  return {};
}

}  // namespace samplecheck::matmul
