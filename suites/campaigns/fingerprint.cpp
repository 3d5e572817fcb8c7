#include "suites/campaigns/fingerprint.h"

#include <fmt/format.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "suites/battery/runner.h"
#include "suites/checks/check_helpers.h"
#include "suites/checks/sampler_batches.h"
#include "suites/matmul/matmul_testbed.h"

#ifndef SAMPLECHECK_VERSION
#define SAMPLECHECK_VERSION "unknown"
#endif

namespace samplecheck::campaigns {
namespace {

constexpr int kManifestVersion = 1;
constexpr int64_t kLargestM = 4096;

// The plugin's path and the hash of its file (which build it was), or the --exec command.
nlohmann::json plugin_json(const battery::subject& s) {
  if (!s.exec.empty()) return {{"exec", s.exec}};
  if (!s.connect.empty()) return {{"connect", s.connect}};
  if (s.plugin.empty()) return nullptr;
  std::ifstream in(s.plugin, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {{"path", s.plugin},
          {"file_xxh3", fmt::format("{:016x}", XXH3_64bits(bytes.data(), bytes.size()))}};
}

std::vector<std::string> filter_names(uint32_t filters) {
  std::vector<std::string> out;
  if (filters & SC_FILTER_TOP_K) out.push_back("top_k");
  if (filters & SC_FILTER_TOP_P) out.push_back("top_p");
  if (filters & SC_FILTER_MIN_P) out.push_back("min_p");
  if (filters & SC_FILTER_TEMPERATURE) out.push_back("temperature");
  return out;
}

nlohmann::json matmul_plan(const battery::subject& s, const fingerprint_options& o) {
  const bool host = s.memory_space() == SC_MEMORY_HOST;
  battery::matmul_selection sel = o.matmul;
  const std::string path =
      sel.fixture_path.empty() ? battery::default_matmul_fixture_path() : sel.fixture_path;
  if (sel.shapes.empty() || sel.batch_sizes.empty()) {
    const auto fixture = matmul_suite::read_matmul_fixture(path);
    if (sel.shapes.empty()) sel.shapes = fixture.shapes;
    if (sel.batch_sizes.empty()) {
      if (host)
        sel.batch_sizes = fixture.sizes("cpu");
      else
        for (int64_t m = 1; m <= kLargestM; ++m) sel.batch_sizes.push_back(m);
    }
  }
  if (sel.columns == 0 && host) sel.columns = matmul_suite::kHostColumns;
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& sh : sel.shapes) shapes.push_back({{"name", sh.name}, {"n", sh.n}, {"k", sh.k}});
  return {{"kind", "matmul"},       {"seed", o.seed},
          {"shapes", shapes},       {"batch_sizes", sel.batch_sizes},
          {"columns", sel.columns},  // 0: every column
          {"bias", {false, true}},  {"launch_configs", {-1}}};
}

nlohmann::json sampler_plan(const battery::subject& s, const fingerprint_options& o) {
  nlohmann::json dtypes = nlohmann::json::array();
  for (const int32_t d : battery::declared_dtypes(s)) dtypes.push_back(harness::dtype_name(d));
  return {{"kind", "sampler"},
          {"seed", o.seed},
          {"vocab_size", o.vocab_size},
          {"input_kind", s.is_logits() ? "logits" : "probs"},
          {"filters", filter_names(s.sampler->filters)},
          {"dtypes", dtypes},
          {"requests", checks::kPoolRequests},
          {"batch_sizes", checks::sampler_batch_sizes()}};
}

// The plan's entries in order, as (outer, m-or-batch, bias, config) indices.
struct entry_key {
  size_t outer;  // matmul: shape; sampler: dtype
  int64_t size;  // M or B
  bool bias = false;
  int32_t launch_config = -1;
};

std::vector<entry_key> entries_of(const nlohmann::json& plan) {
  std::vector<entry_key> keys;
  const auto sizes = plan.at("batch_sizes").get<std::vector<int64_t>>();
  if (plan.at("kind") == "matmul") {
    for (size_t sh = 0; sh < plan.at("shapes").size(); ++sh)
      for (const bool bias : plan.at("bias").get<std::vector<bool>>())
        for (const int32_t c : plan.at("launch_configs").get<std::vector<int32_t>>())
          for (const int64_t m : sizes) keys.push_back({sh, m, bias, c});
  } else {
    for (size_t d = 0; d < plan.at("dtypes").size(); ++d)
      for (const int64_t b : sizes) keys.push_back({d, b});
  }
  return keys;
}

int32_t dtype_by_name(const std::string& name) {
  for (const int32_t d : {SC_DTYPE_F32, SC_DTYPE_BF16, SC_DTYPE_F16})
    if (harness::dtype_name(d) == name) return d;
  throw std::invalid_argument(fmt::format("the plan names dtype '{}'", name));
}

// One testbed's operands (the same generator as the matmul checks) for a plan's shape.
struct matmul_entry_bed {
  std::unique_ptr<matmul_suite::matmul_runner> runner;
  std::unique_ptr<matmul_suite::matmul_testbed> bed;
};

matmul_entry_bed make_bed(const battery::subject& s, const nlohmann::json& plan, size_t shape,
                          bool bias) {
  const auto& sh = plan.at("shapes").at(shape);
  const matmul_suite::matmul_shape ms{sh.at("name").get<std::string>(), sh.at("n").get<int64_t>(),
                                      sh.at("k").get<int64_t>(), "fingerprint"};
  const int64_t columns = plan.at("columns").get<int64_t>();
  const auto sizes = plan.at("batch_sizes").get<std::vector<int64_t>>();
  matmul_entry_bed b;
  b.runner = matmul_suite::make_runner(*s.matmul);
  b.bed = std::make_unique<matmul_suite::matmul_testbed>(
      *b.runner, matmul_suite::testbed_config{ms, columns > 0 ? std::min(columns, ms.n) : ms.n,
                                              bias, plan.at("seed").get<uint64_t>(),
                                              *std::max_element(sizes.begin(), sizes.end())});
  return b;
}

entry_output run_matmul(matmul_entry_bed& b, const entry_key& key) {
  std::vector<int32_t> rows(static_cast<size_t>(key.size));
  for (int64_t r = 0; r < key.size; ++r) rows[r] = static_cast<int32_t>(r);
  const auto bits = b.runner->run(rows, key.launch_config, {});
  return {{bits.begin(), bits.end()}, b.bed->operands().n};
}

checks::sampler_pool pool_for(const battery::subject& s, const nlohmann::json& plan,
                              int32_t dtype) {
  battery::subject as = s;
  as.input_dtype = dtype;
  return checks::make_sampler_pool(
      as, plan.at("vocab_size").get<int64_t>(),
      battery::check_seed(plan.at("seed").get<uint64_t>(), "fingerprint"),
      plan.at("requests").get<int>());
}

entry_output run_sampler(const battery::subject& s, const checks::sampler_pool& pool, int32_t dtype,
                         int64_t B) {
  battery::subject as = s;
  as.input_dtype = dtype;
  harness::sample_call call = batch_call(as, pool, batch_slots(pool, B));
  const harness::call_status st = run_call(as, call);
  if (!st.ok()) throw std::runtime_error(st.describe());
  entry_output out;
  for (size_t slot = 0; slot < call.tokens.size(); ++slot)
    out.values.push_back(static_cast<uint32_t>(checks::slot_token(call, slot)));
  return out;
}

std::string hex(uint16_t bits) { return fmt::format("0x{:04x}", bits); }

}  // namespace

nlohmann::json fingerprint_plan(const battery::subject& s, const fingerprint_options& o) {
  if (s.kind() == battery::subject_kind::collective)
    throw std::invalid_argument(s.name() +
                                " is a collective: fingerprints cover samplers and "
                                "matmuls (a collective's checks are bitwise already)");
  return s.kind() == battery::subject_kind::matmul ? matmul_plan(s, o) : sampler_plan(s, o);
}

std::string hash_output(const entry_output& out) {
  // XXH3 over the values in order: a permutation of rows or slots changes it (an XOR
  // of per-element hashes, torch.hash_tensor's XOR mode, would not).
  const uint64_t h = XXH3_64bits(out.values.data(), out.values.size() * sizeof(uint32_t));
  return fmt::format("{:016x}", h);
}

entry_output run_entry(const battery::subject& s, const nlohmann::json& plan, size_t entry) {
  const auto keys = entries_of(plan);
  if (entry >= keys.size()) throw std::out_of_range("no such entry");
  const entry_key& key = keys[entry];
  if (plan.at("kind") == "matmul") {
    auto bed = make_bed(s, plan, key.outer, key.bias);
    return run_matmul(bed, key);
  }
  const int32_t dtype = dtype_by_name(plan.at("dtypes").at(key.outer).get<std::string>());
  return run_sampler(s, pool_for(s, plan, dtype), dtype, key.size);
}

std::string entry_name(const nlohmann::json& plan, size_t entry) {
  const entry_key key = entries_of(plan).at(entry);
  if (plan.at("kind") == "matmul") {
    const auto& sh = plan.at("shapes").at(key.outer);
    return fmt::format("shape {} (n {}, k {}), M = {}, {}, launch config {}",
                       sh.at("name").get<std::string>(), sh.at("n").get<int64_t>(),
                       sh.at("k").get<int64_t>(), key.size, key.bias ? "bias" : "no bias",
                       key.launch_config);
  }
  return fmt::format("dtype {}, batch size {}", plan.at("dtypes").at(key.outer).get<std::string>(),
                     key.size);
}

nlohmann::json take_fingerprint(const battery::subject& s, const nlohmann::json& plan) {
  const auto keys = entries_of(plan);
  nlohmann::json entries = nlohmann::json::array();
  XXH3_state_t* all = XXH3_createState();
  XXH3_64bits_reset(all);
  auto add = [&](nlohmann::json e, const entry_output& out) {
    const std::string h = hash_output(out);
    XXH3_64bits_update(all, h.data(), h.size());
    e["hash"] = h;
    entries.push_back(std::move(e));
  };
  try {
    if (plan.at("kind") == "matmul") {
      std::optional<matmul_entry_bed> bed;  // one testbed per (shape, bias): operands once
      for (size_t i = 0; i < keys.size(); ++i) {
        const entry_key& k = keys[i];
        if (i == 0 || k.outer != keys[i - 1].outer || k.bias != keys[i - 1].bias)
          bed = make_bed(s, plan, k.outer, k.bias);
        add({{"shape", plan.at("shapes").at(k.outer).at("name")},
             {"m", k.size},
             {"bias", k.bias},
             {"launch_config", k.launch_config}},
            run_matmul(*bed, k));
      }
    } else {
      for (size_t d = 0; d < plan.at("dtypes").size(); ++d) {
        const std::string name = plan.at("dtypes").at(d).get<std::string>();
        const int32_t dtype = dtype_by_name(name);
        const checks::sampler_pool pool = pool_for(s, plan, dtype);
        for (const int64_t B : plan.at("batch_sizes").get<std::vector<int64_t>>())
          add({{"dtype", name}, {"batch_size", B}}, run_sampler(s, pool, dtype, B));
      }
    }
  } catch (const std::exception& e) {
    XXH3_freeState(all);
    throw std::runtime_error(fmt::format("{}: entry {} ({}): {}", s.name(), entries.size(),
                                         entry_name(plan, entries.size()), e.what()));
  }
  const uint64_t total = XXH3_64bits_digest(all);
  XXH3_freeState(all);
  return {{"format", kFingerprintFormat},
          {"version", kManifestVersion},
          {"samplecheck_version", SAMPLECHECK_VERSION},
          {"subject", s.name()},
          {"description", s.description() ? s.description() : ""},
          {"plugin", plugin_json(s)},
          {"platform", battery::platform_json(s)},
          {"plan", plan},
          {"compares",
           "two manifests compare when their plans are equal, entry by entry (XXH3-64 of the "
           "output bits in order); the platform is recorded, not compared: a golden holds "
           "for the platform class it was taken on"},
          {"hash", fmt::format("{:016x}", total)},
          {"entries", entries}};
}

namespace {

// Why integer field `name` of `j` is not in [lo, hi]; empty when it is.
std::string range_error(const nlohmann::json& j, const char* name, int64_t lo, int64_t hi) {
  if (!j.contains(name)) return fmt::format("the plan has no field '{}'", name);
  const auto& f = j.at(name);
  if (!f.is_number_integer() || f.get<int64_t>() < lo || f.get<int64_t>() > hi)
    return fmt::format("field 'plan.{}': {} is not an integer in [{}, {}]", name,
                       f.dump().substr(0, 40), lo, hi);
  return {};
}

// Why a manifest's plan cannot be re-run here: every value that sizes a call in range.
std::string plan_error(const nlohmann::json& plan) {
  if (!plan.is_object()) return "field 'plan' is not an object";
  const std::string kind = plan.value("kind", nlohmann::json()).dump();
  if (kind != "\"sampler\"" && kind != "\"matmul\"")
    return fmt::format("field 'plan.kind' is {}, not \"sampler\" or \"matmul\"", kind);
  if (!plan.contains("seed") || !plan.at("seed").is_number_unsigned())
    return "field 'plan.seed' is not an unsigned integer";
  for (const auto& m : plan.value("batch_sizes", nlohmann::json::array()))
    if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > battery::kMaxBatchSize)
      return fmt::format("field 'plan.batch_sizes': {} is not in [1, {}]", m.dump().substr(0, 40),
                         battery::kMaxBatchSize);
  if (plan.at("kind") == "sampler") {
    if (auto why = range_error(plan, "vocab_size", battery::kMinVocabSize, battery::kMaxVocabSize);
        !why.empty())
      return why;
    for (const auto& d : plan.value("dtypes", nlohmann::json::array()))
      if (d != "f32" && d != "bf16" && d != "f16")
        return fmt::format("field 'plan.dtypes': {} is not f32, bf16 or f16", d.dump());
    return range_error(plan, "requests", 1, checks::kPoolRequests);
  }
  for (const auto& sh : plan.value("shapes", nlohmann::json::array()))
    for (const char* side : {"n", "k"})
      if (auto why = range_error(sh, side, 1, battery::kMaxShapeDim); !why.empty())
        return "field 'plan.shapes': " + why;
  return range_error(plan, "columns", 0, battery::kMaxShapeDim);
}

}  // namespace

std::string manifest_error(const nlohmann::json& m) {
  if (!m.is_object() || m.value("format", nlohmann::json()) != kFingerprintFormat)
    return fmt::format("field 'format' is not \"{}\"", kFingerprintFormat);
  if (!m.contains("version") || m.at("version") != kManifestVersion)
    return fmt::format("field 'version' is {}; this samplecheck reads version {}",
                       m.contains("version") ? m.at("version").dump() : "missing",
                       kManifestVersion);
  for (const char* f : {"subject", "plan", "entries", "plugin"})
    if (!m.contains(f)) return fmt::format("the manifest has no field '{}'", f);
  if (!m.at("subject").is_string()) return "field 'subject' is not a string";
  if (m.contains("hash") && !m.at("hash").is_string()) return "field 'hash' is not a string";
  if (const auto& p = m.at("plugin"); !p.is_null()) {
    const bool fields_are_text =
        p.is_object() && std::all_of(p.begin(), p.end(), [](auto& v) { return v.is_string(); });
    if (!fields_are_text) return "field 'plugin' is not null or an object of strings";
  }
  if (const std::string why = plan_error(m.at("plan")); !why.empty()) return why;
  try {
    const size_t n = entries_of(m.at("plan")).size();
    if (!m.at("entries").is_array() || n != m.at("entries").size())
      return fmt::format("the plan has {} entries but field 'entries' lists {}", n,
                         m.at("entries").is_array() ? m.at("entries").size() : 0);
    for (const auto& e : m.at("entries")) e.at("hash").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return fmt::format("field 'plan' or 'entries': {}", e.what());
  }
  return {};
}

fingerprint_comparison compare_manifests(const nlohmann::json& a, const nlohmann::json& b) {
  fingerprint_comparison c;
  const auto& pa = a.at("plan");
  const auto& pb = b.at("plan");
  if (pa != pb) {
    c.comparable = false;
    for (const auto& [key, value] : pa.items())
      if (!pb.contains(key) || pb.at(key) != value) {
        c.why_not =
            fmt::format("their plans differ in '{}': {} vs {}", key, value.dump().substr(0, 120),
                        pb.contains(key) ? pb.at(key).dump().substr(0, 120) : "absent");
        break;
      }
    if (c.why_not.empty()) c.why_not = "their plans differ";
    return c;
  }
  c.entries = a.at("entries").size();
  for (size_t i = 0; i < c.entries; ++i)
    if (a.at("entries").at(i).at("hash") != b.at("entries").at(i).at("hash"))
      c.differing.push_back(i);
  return c;
}

std::string first_difference(const nlohmann::json& plan, size_t entry, const entry_output& a,
                             const entry_output& b) {
  const size_t n = std::min(a.values.size(), b.values.size());
  for (size_t i = 0; i < n; ++i) {
    if (a.values[i] == b.values[i]) continue;
    if (plan.at("kind") == "matmul") {
      const auto x = static_cast<uint16_t>(a.values[i]), y = static_cast<uint16_t>(b.values[i]);
      return fmt::format("row {}, column {}: {} vs {} ({} ULP)", i / a.columns, i % a.columns,
                         hex(x), hex(y), matmul_suite::bf16_ulp_distance(x, y));
    }
    const entry_key key = entries_of(plan).at(entry);
    const int32_t q = checks::batch_slots(
        checks::sampler_pool{
            {}, std::vector<checks::sampler_request>(plan.at("requests").get<size_t>())},
        key.size)[i];
    auto token = [](uint32_t v) {
      return static_cast<int32_t>(v) < 0 ? std::string("valid 0")
                                         : fmt::format("token {}", static_cast<int32_t>(v));
    };
    return fmt::format("slot {} (request {}): {} vs {}", i, q, token(a.values[i]),
                       token(b.values[i]));
  }
  if (a.values.size() != b.values.size())
    return fmt::format("{} vs {} outputs", a.values.size(), b.values.size());
  return "the outputs are equal now (the subjects did not reproduce the manifests' hashes)";
}

}  // namespace samplecheck::campaigns
