// sc_matmul and sc_plugin exactly as ABI 1.0 released them, frozen: what a plugin
// built against the 1.0 header exports. Minor 1 appended fields to both, so a 1.0
// matmul array has a 64-byte stride where the current sc_matmul is 80 bytes.
#pragma once

#include <cstddef>

#include "kernels/samplecheck_plugin.h"

struct sc_matmul_v1_0 {
  sc_abi_version abi_version;
  const char* name;
  const char* description;
  int32_t memory_space;
  int32_t num_launch_configs;
  uint64_t flags;
  void* context;
  sc_status (*run)(void* context, const sc_matmul_problem* problem, char* error, size_t error_size);
  const char* (*launch_config_name)(void* context, int32_t index);
};

struct sc_plugin_v1_0 {
  sc_abi_version abi_version;
  const char* name;
  int32_t num_samplers;
  int32_t num_matmuls;
  const sc_sampler* samplers;
  const sc_matmul_v1_0* matmuls;
  uint64_t flags;
};

// The 1.0 sizes as released; kernels/abi_c_check.c pins today's offsets.
static_assert(sizeof(sc_matmul_v1_0) == 64);
static_assert(sizeof(sc_plugin_v1_0) == 48);
