// Plugins for the loader's tests, from one source: built once per variant, with
// SAMPLECHECK_TEST_PLUGIN=<variant> (kernels/cpu/CMakeLists.txt). Each malformed
// variant breaks one rule of kernels/samplecheck_plugin.h, which the loader must
// refuse naming the field; minor0 and future_minor are well formed but laid out
// for another minor (ABI 1.0's smaller sc_matmul, a 1.2 with one more field per
// struct), which the loader must read at their own strides.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "kernels/collective/cpu_collectives.h"
#include "kernels/cpu/cpu_samplers.h"
#include "kernels/cpu/tests/abi_v1_0.h"
#include "kernels/matmul/matmul_abi.h"
#include "reference/numeric.h"

namespace {

enum class variant {
  duplicate_name,  // a matmul named as the plugin's sampler
  shadow,          // a matmul named as an in-tree subject
  empty,           // no subject at all
  plugin_flags,    // sc_plugin.flags != 0
  matmul_flags,    // sc_matmul.flags != 0
  reserved1,       // sc_matmul.reserved1 != 0
  null_run,        // sc_matmul.run == NULL
  unsorted_thresholds,
  null_array,         // num_matmuls > 0, matmuls == NULL
  negative_count,     // num_samplers < 0
  small_stride,       // matmul_size below even the 1.0 sc_matmul
  short_stride,       // entries state minor 1 but matmul_size is the 1.0 size
  minor0,             // well formed, ABI 1.0 layout
  future_minor,       // well formed, a minor newer than the host's
  minor4,             // well formed, ABI 1.4 layout (sc_sampler before minor 5's routes)
  collectives_only,   // well formed: one collective, no sampler or matmul (minor 6)
  collective_world,   // sc_collective.max_world_size 0
  collective_stride,  // collective_size below the minor-6 sc_collective
};
constexpr variant kVariant = variant::SAMPLECHECK_TEST_PLUGIN;

// The matmul every variant exports: each output is the bf16 rounding of the fp32
// sum over k, in increasing k, of a * w, plus the bias. One order for every
// launch configuration, so every configuration gives the same bits.
struct rows_matmul {
  const char* name;
  int32_t num_configs;
  const char* config_names[2];
};

sc_status run_rows(void* context, const sc_matmul_problem* p, char* error, size_t error_size) {
  using samplecheck::bf16_to_float;
  const auto& self = *static_cast<const rows_matmul*>(context);
  const sc_status status =
      samplecheck::matmul::validate_problem(self.name, p, self.num_configs, error, error_size);
  if (status != SC_OK) return status;
  for (int64_t i = 0; i < p->m; ++i)
    for (int64_t j = 0; j < p->n; ++j) {
      float sum = 0.0f;
      for (int64_t t = 0; t < p->k; ++t)
        sum += bf16_to_float(p->a[i * p->k + t]) * bf16_to_float(p->weight[j * p->k + t]);
      if (p->bias != nullptr) sum += bf16_to_float(p->bias[j]);
      p->out[i * p->n + j] = samplecheck::float_to_bf16(sum);
    }
  return SC_OK;
}

const char* rows_config_name(void* context, int32_t index) {
  const auto& self = *static_cast<const rows_matmul*>(context);
  return index >= 0 && index < self.num_configs ? self.config_names[index] : nullptr;
}

rows_matmul kWhole{"test.rows_a", 1, {"whole", nullptr}};
rows_matmul kBlocked{"test.rows_b", 2, {"rows1", "rows4"}};
constexpr int64_t kThresholds[] = {4};  // test.rows_b switches to rows4 at M = 4
constexpr int64_t kUnsorted[] = {8, 4};

sc_sampler multinomial(uint32_t minor) {
  for (const sc_sampler* s : samplecheck::cpu_samplers())
    if (std::string_view(s->name) == "cpu.multinomial") {
      sc_sampler copy = *s;
      copy.abi_version.minor = minor;
      copy.name = "test.multinomial";
      return copy;
    }
  return {};  // never: the CPU samplers always hold cpu.multinomial
}

sc_matmul matmul(rows_matmul& context, uint32_t minor) {
  sc_matmul m{};
  m.abi_version = {SC_ABI_VERSION_MAJOR, minor};
  m.name = context.name;
  m.description = "fp32 sum in increasing k, one rounding to bf16";
  m.memory_space = SC_MEMORY_HOST;
  m.num_launch_configs = context.num_configs;
  m.context = &context;
  m.run = run_rows;
  m.launch_config_name = rows_config_name;
  if (context.num_configs > 1) {
    m.num_batch_thresholds = 1;
    m.batch_thresholds = kThresholds;
  }
  return m;
}

// The collective every variant exports: each element summed in rank order.
sc_status run_allreduce(void*, const sc_collective_problem* p, char* error, size_t size) {
  if (p->world_size < 1 || p->world_size > 8 || p->count < 1 || p->dtype != SC_DTYPE_F32) {
    std::snprintf(error, size, "field world_size, count or dtype out of range");
    return SC_ERR_INVALID_ARGUMENT;
  }
  const auto* const* in = reinterpret_cast<const float* const*>(p->inputs);
  for (int64_t i = 0; i < p->count; ++i) {
    float sum = in[0][i];
    for (int32_t q = 1; q < p->world_size; ++q) sum += in[q][i];
    for (int32_t r = 0; r < p->world_size; ++r) static_cast<float*>(p->outputs[r])[i] = sum;
  }
  return SC_OK;
}

sc_collective allreduce() {
  return samplecheck::collective::host_f32_sum(
      "test.allreduce", SC_INVARIANT_SIZE | SC_INVARIANT_RUN, 8, run_allreduce);
}

// The variants in today's layout: one sampler, two matmuls, one collective, then one rule
// broken.
struct current_plugin {
  sc_sampler samplers[1];
  sc_matmul matmuls[2];
  sc_collective collectives[1];
  sc_plugin plugin{};

  current_plugin() {
    samplers[0] = multinomial(SC_ABI_VERSION_MINOR);
    matmuls[0] = matmul(kWhole, SC_ABI_VERSION_MINOR);
    matmuls[1] = matmul(kBlocked, SC_ABI_VERSION_MINOR);
    plugin.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
    plugin.name = "samplecheck test plugin";
    plugin.num_samplers = 1;
    plugin.num_matmuls = 2;
    plugin.samplers = samplers;
    plugin.matmuls = matmuls;
    plugin.sampler_size = sizeof(sc_sampler);
    plugin.matmul_size = sizeof(sc_matmul);
    collectives[0] = allreduce();
    plugin.num_collectives = 1;
    plugin.collectives = collectives;
    plugin.collective_size = sizeof(sc_collective);
    break_one_rule();
  }

  void break_one_rule() {
    sc_matmul& m = matmuls[1];
    switch (kVariant) {
      case variant::duplicate_name:
        m.name = samplers[0].name;
        break;
      case variant::shadow:
        m.name = "cpu.segmented";
        break;
      case variant::empty:
        plugin.num_samplers = plugin.num_matmuls = plugin.num_collectives = 0;
        break;
      case variant::plugin_flags:
        plugin.flags = 1;
        break;
      case variant::matmul_flags:
        m.flags = 4;
        break;
      case variant::reserved1:
        m.reserved1 = 7;
        break;
      case variant::null_run:
        m.run = nullptr;
        break;
      case variant::unsorted_thresholds:
        m.num_batch_thresholds = 2;
        m.batch_thresholds = kUnsorted;
        break;
      case variant::null_array:
        plugin.matmuls = nullptr;
        break;
      case variant::negative_count:
        plugin.num_samplers = -1;
        break;
      case variant::small_stride:
        plugin.matmul_size = 40;
        break;
      case variant::short_stride:
        plugin.matmul_size = sizeof(sc_matmul_v1_0);
        break;
      case variant::collectives_only:
        plugin.num_samplers = plugin.num_matmuls = 0;
        break;
      case variant::collective_world:
        collectives[0].max_world_size = 0;
        break;
      case variant::collective_stride:
        plugin.collective_size = 40;
        break;
      case variant::minor0:
      case variant::future_minor:
      case variant::minor4:
        break;  // laid out by the structs below
    }
  }
};

// ABI 1.0: no samplers (sc_sampler did not change), two matmuls at 64 bytes each.
struct minor0_plugin {
  sc_matmul_v1_0 matmuls[2];
  sc_plugin_v1_0 plugin{};

  minor0_plugin() {
    for (int i = 0; i < 2; ++i) {
      const sc_matmul m = matmul(i == 0 ? kWhole : kBlocked, 0);
      matmuls[i] = {{SC_ABI_VERSION_MAJOR, 0}, m.name,  m.description, m.memory_space,
                    m.num_launch_configs,      m.flags, m.context,     m.run,
                    m.launch_config_name};
    }
    plugin.abi_version = {SC_ABI_VERSION_MAJOR, 0};
    plugin.name = "samplecheck test plugin, ABI 1.0";
    plugin.num_matmuls = 2;
    plugin.matmuls = matmuls;
  }
};

// ABI 1.4: two samplers at 104 bytes each, the size sc_sampler had before minor 5 appended
// the routes; read at today's stride, entry 1 would start 16 bytes into its name.
struct sampler_v1_4 {
  alignas(8) unsigned char bytes[offsetof(sc_sampler, num_routes)];
};

struct minor4_plugin {
  sampler_v1_4 samplers[2];
  sc_plugin plugin{};

  minor4_plugin() {
    for (int i = 0; i < 2; ++i) {
      sc_sampler s = multinomial(4);
      s.name = i == 0 ? "test.multinomial" : "test.multinomial_b";
      std::memcpy(samplers[i].bytes, &s, sizeof samplers[i].bytes);
    }
    plugin.abi_version = {SC_ABI_VERSION_MAJOR, 4};
    plugin.name = "samplecheck test plugin, ABI 1.4";
    plugin.num_samplers = 2;
    plugin.samplers = reinterpret_cast<const sc_sampler*>(samplers);
    plugin.sampler_size = sizeof(sampler_v1_4);
    plugin.matmul_size = sizeof(sc_matmul);
  }
};

// What a later minor may do: append one field to each struct. The host must read
// the fields it knows at the plugin's strides and ignore the rest.
template <class T>
struct grown {
  T known;
  uint64_t appended = ~uint64_t{0};  // not 0, so a host that read it as flags would refuse
};

struct future_plugin {
  grown<sc_sampler> samplers[1];
  grown<sc_matmul> matmuls[2];
  grown<sc_plugin> plugin{};

  future_plugin() {
    const uint32_t minor = SC_ABI_VERSION_MINOR + 1;
    samplers[0].known = multinomial(minor);
    matmuls[0].known = matmul(kWhole, minor);
    matmuls[1].known = matmul(kBlocked, minor);
    sc_plugin& p = plugin.known;
    p.abi_version = {SC_ABI_VERSION_MAJOR, minor};
    p.name = "samplecheck test plugin, a newer minor";
    p.num_samplers = 1;
    p.num_matmuls = 2;
    p.samplers = &samplers[0].known;
    p.matmuls = &matmuls[0].known;
    p.sampler_size = sizeof(grown<sc_sampler>);
    p.matmul_size = sizeof(grown<sc_matmul>);
  }
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const sc_plugin* samplecheck_plugin(void) {
  switch (kVariant) {
    case variant::minor0: {
      static const minor0_plugin instance;
      // The entry point's type is today's; a 1.0 plugin returned its 1.0 struct.
      return reinterpret_cast<const sc_plugin*>(&instance.plugin);
    }
    case variant::future_minor: {
      static const future_plugin instance;
      return &instance.plugin.known;
    }
    case variant::minor4: {
      static const minor4_plugin instance;
      return &instance.plugin;
    }
    default: {
      static const current_plugin instance;
      return &instance.plugin;
    }
  }
}
