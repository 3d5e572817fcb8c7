// One sc_matmul_problem from its operands: the one way the matmul runners and the
// tests that call a matmul's ABI directly build a call. Header-only and plain C++, so
// .cu files and tests that link no harness library use it too.
#pragma once

#include <cstdint>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::harness {

struct matmul_args {
  int64_t m = 0, n = 0, k = 0;
  const uint16_t* a = nullptr;       // bf16 bits [m, k], in the subject's memory space
  const uint16_t* weight = nullptr;  // bf16 bits [n, k]
  const uint16_t* bias = nullptr;    // bf16 bits [n], or NULL
  uint16_t* out = nullptr;           // bf16 bits [m, n]
  int32_t launch_config = -1;        // -1: the subject's own choice
  void* stream = nullptr;
};

// Versioned as this build speaks the ABI; reserved words and flags 0.
inline sc_matmul_problem make_problem(const matmul_args& args) {
  return {.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
          .m = args.m,
          .n = args.n,
          .k = args.k,
          .a = args.a,
          .weight = args.weight,
          .bias = args.bias,
          .out = args.out,
          .launch_config = args.launch_config,
          .reserved0 = 0,
          .stream = args.stream,
          .flags = 0};
}

}  // namespace samplecheck::harness
