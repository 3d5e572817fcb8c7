// vendor.rowwise: out[m, n] = bf16(fp32 sum over k, in increasing k, of
// a[m, k] * weight[n, k], then + bias[n] in fp32), rounded to nearest even once.
//
// Every output follows that one order whatever the launch configuration and
// whatever M, so the matmul is batch-invariant: a row's bits do not depend on
// the rows batched with it. The two configurations block over rows only: "rows1"
// takes one row of a at a time, "rows4" four, reusing each weight row four times;
// each output still has its own accumulator and its own order, hence the same
// bits. Its own choice (launch_config = -1) is rows1 below M = 4, rows4 from 4.
#include <algorithm>
#include <cinttypes>
#include <cstdint>

#include "bf16.h"
#include "report.h"
#include "vendor.h"

namespace vendor {
namespace {

constexpr const char* kName = "vendor.rowwise";
constexpr const char* kConfigNames[VENDOR_ROWWISE_NUM_CONFIGS] = {"rows1", "rows4"};
constexpr int64_t kRowsPerBlock[VENDOR_ROWWISE_NUM_CONFIGS] = {1, 4};

sc_status check_problem(const sc_matmul_problem* p, char* error, size_t size) {
  if (p == nullptr)
    return report(SC_ERR_INVALID_ARGUMENT, error, size, "%s: problem is NULL", kName);
  if (p->abi_version.major != SC_ABI_VERSION_MAJOR)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_matmul_problem field abi_version.major = %u, this matmul implements %d",
                  kName, p->abi_version.major, SC_ABI_VERSION_MAJOR);
  const struct {
    int64_t value;
    const char* field;
  } extents[] = {{p->m, "m"}, {p->n, "n"}, {p->k, "k"}};
  for (const auto& e : extents)
    if (e.value <= 0)
      return report(SC_ERR_INVALID_ARGUMENT, error, size,
                    "%s: sc_matmul_problem field %s = %" PRId64 " must be positive", kName, e.field,
                    e.value);
  // Element counts m * k, n * k and m * n must be addressable.
  if (p->m > INT64_MAX / p->k || p->n > INT64_MAX / p->k || p->m > INT64_MAX / p->n)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_matmul_problem fields m = %" PRId64 ", n = %" PRId64 ", k = %" PRId64
                  ": the operand sizes overflow int64",
                  kName, p->m, p->n, p->k);
  const struct {
    const void* pointer;
    const char* field;
  } operands[] = {{p->a, "a"}, {p->weight, "weight"}, {p->out, "out"}};
  for (const auto& o : operands)
    if (o.pointer == nullptr)
      return report(SC_ERR_INVALID_ARGUMENT, error, size, "%s: sc_matmul_problem field %s is NULL",
                    kName, o.field);
  if (p->launch_config < -1 || p->launch_config >= VENDOR_ROWWISE_NUM_CONFIGS)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_matmul_problem field launch_config = %d is outside [-1, %d)", kName,
                  p->launch_config, VENDOR_ROWWISE_NUM_CONFIGS);
  if (p->reserved0 != 0)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_matmul_problem field reserved0 = %d, must be 0", kName, p->reserved0);
  if (p->flags != 0)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_matmul_problem field flags = %#" PRIx64 ", must be 0", kName, p->flags);
  return SC_OK;
}

int32_t own_choice(int64_t m) { return m < VENDOR_ROWWISE_ROWS4_FROM_M ? 0 : 1; }

// Rows [first, first + rows) of the output, each output in the one order.
void block_of_rows(const sc_matmul_problem& p, int64_t first, int64_t rows) {
  constexpr int64_t kMaxRows = 4;
  for (int64_t j = 0; j < p.n; ++j) {
    const uint16_t* w = p.weight + j * p.k;
    float sum[kMaxRows] = {};
    for (int64_t t = 0; t < p.k; ++t) {
      const float wt = bf16_to_float(w[t]);
      // bf16 x bf16 is exact in fp32 (8 + 8 significand bits), so a fused
      // multiply-add would round the same: only the order of the adds matters.
      for (int64_t r = 0; r < rows; ++r) sum[r] += bf16_to_float(p.a[(first + r) * p.k + t]) * wt;
    }
    const float bias = p.bias != nullptr ? bf16_to_float(p.bias[j]) : 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      // Without a bias nothing is added: sum + 0.0f would turn a -0 sum into +0.
      const float value = p.bias != nullptr ? sum[r] + bias : sum[r];
      p.out[(first + r) * p.n + j] = float_to_bf16(value);
    }
  }
}

}  // namespace
}  // namespace vendor

extern "C" sc_status vendor_rowwise_run(void*, const sc_matmul_problem* problem, char* error,
                                        size_t error_size) {
  using namespace vendor;
  if (const sc_status s = check_problem(problem, error, error_size); s != SC_OK) return s;
  const sc_matmul_problem& p = *problem;
  const int32_t config = p.launch_config >= 0 ? p.launch_config : own_choice(p.m);
  const int64_t rows = kRowsPerBlock[config];
  for (int64_t first = 0; first < p.m; first += rows)
    block_of_rows(p, first, std::min(rows, p.m - first));
  return succeed(error, error_size);
}

extern "C" const char* vendor_rowwise_config_name(void*, int32_t index) {
  return index >= 0 && index < VENDOR_ROWWISE_NUM_CONFIGS ? vendor::kConfigNames[index] : nullptr;
}
