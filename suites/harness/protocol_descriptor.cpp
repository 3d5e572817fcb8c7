// The hello's descriptors (docs/subject-protocol.md, section 3): each subject kind's entry
// written from its C ABI struct (to_json) and read back into one (from_json) by the rules
// the plugin loader applies (registry.h), and the hello's environment.
#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>

#include "kernels/registry/registry.h"
#include "suites/harness/dtype.h"
#include "suites/harness/protocol.h"

namespace samplecheck::protocol {

namespace {

// One enum field's spellings: the SC_* values and their words, in the header's order.
struct spelling {
  int32_t value;
  const char* word;
};
constexpr spelling kMemory[] = {
    {SC_MEMORY_HOST, "host"}, {SC_MEMORY_CUDA, "cuda"}, {SC_MEMORY_HIP, "hip"}};
constexpr spelling kInput[] = {{SC_INPUT_PROBS, "probs"}, {SC_INPUT_LOGITS, "logits"}};
constexpr spelling kOrder[] = {{SC_ORDER_TOP_K_FIRST, "top_k_first"}, {SC_ORDER_JOINT, "joint"}};
constexpr spelling kTie[] = {{SC_TIE_KEEP_TIES, "keep_ties"},
                             {SC_TIE_LOWEST_INDEX, "lowest_index"}};
constexpr spelling kRng[] = {{SC_RNG_PER_REQUEST, "per_request"},
                             {SC_RNG_BATCH_SLOT, "batch_slot"},
                             {SC_RNG_SUBJECT_GENERATOR, "subject_generator"},
                             {SC_RNG_REQUEST_KEYED, "request_keyed"}};
constexpr spelling kParams[] = {{SC_PARAMS_BY_INPUT_ROW, "input_row"},
                                {SC_PARAMS_BY_OUTPUT_ROW, "output_row"}};
constexpr spelling kDegenerate[] = {{SC_DEGENERATE_VALID_FLAG, "valid_flag"},
                                    {SC_DEGENERATE_ERROR, "error"},
                                    {SC_DEGENERATE_UNDEFINED, "undefined"},
                                    {SC_DEGENERATE_TREAT_AS_ZERO, "treat_as_zero"}};
constexpr spelling kNormalisation[] = {{SC_PROBS_RENORMALISE, "renormalise"},
                                       {SC_PROBS_ASSUME_SUM_ONE, "assume_sum_one"}};
constexpr spelling kUniformRule[] = {{SC_RULE_UNDECLARED, "undeclared"},
                                     {SC_RULE_INVERSE_CDF_U53, "inverse_cdf_u53"}};
constexpr spelling kInputs[] = {{SC_INPUTS_PRESERVED, "preserved"}, {SC_INPUTS_MUTATED, "mutated"}};
constexpr spelling kInvariants[] = {{static_cast<int32_t>(SC_INVARIANT_SIZE), "size"},
                                    {static_cast<int32_t>(SC_INVARIANT_RUN), "run"},
                                    {static_cast<int32_t>(SC_INVARIANT_TREE), "tree"}};
constexpr spelling kReduce[] = {{SC_REDUCE_SUM, "sum"}};
constexpr spelling kFilters[] = {{SC_FILTER_TOP_K, "top_k"},
                                 {SC_FILTER_TOP_P, "top_p"},
                                 {SC_FILTER_MIN_P, "min_p"},
                                 {SC_FILTER_TEMPERATURE, "temperature"}};

template <size_t N>
const char* word_of(const spelling (&table)[N], int32_t value) {
  for (const auto& s : table)
    if (s.value == value) return s.word;
  return table[0].word;  // 0 (a contract's default) reads as the first value
}

// Reads entry[field] as one of the table's words; absent: `fallback` (0 = required).
class entry_reader {
 public:
  explicit entry_reader(const nlohmann::json& e) : e_(e) {
    if (!e.is_object()) throw std::invalid_argument("a subject descriptor that is not an object");
    name_ = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    name_ = printable(name_.substr(0, kMaxNameBytes));
  }
  [[noreturn]] void refuse(const std::string& field, const std::string& why) const {
    throw std::invalid_argument(
        fmt::format("subject {}: field {} {}", name_.empty() ? "(unnamed)" : name_, field, why));
  }
  const nlohmann::json* find(const char* field) const {
    return e_.contains(field) && !e_[field].is_null() ? &e_[field] : nullptr;
  }
  std::string text(const char* field, bool required) const {
    const nlohmann::json* v = find(field);
    if (v == nullptr) {
      if (required) refuse(field, "is missing");
      return {};
    }
    if (!v->is_string()) refuse(field, "is not a string: " + v->dump());
    return v->get<std::string>();
  }
  template <size_t N>
  int32_t word(const char* field, const spelling (&table)[N], bool required) const {
    const std::string w = text(field, required);
    if (w.empty() && !required) return 0;
    for (const auto& s : table)
      if (w == s.word) return s.value;
    std::string known;
    for (const auto& s : table) known += fmt::format("{}\"{}\"", known.empty() ? "" : ", ", s.word);
    refuse(field, fmt::format("is \"{}\", not one of {}", w, known));
  }
  int64_t integer(const char* field, bool required, int64_t fallback) const {
    const nlohmann::json* v = find(field);
    if (v == nullptr) {
      if (required) refuse(field, "is missing");
      return fallback;
    }
    if (!v->is_number_integer()) refuse(field, "is not an integer: " + v->dump());
    return v->get<int64_t>();
  }
  const nlohmann::json& array(const char* field, bool required) const {
    static const nlohmann::json empty = nlohmann::json::array();
    const nlohmann::json* v = find(field);
    if (v == nullptr) {
      if (required) refuse(field, "is missing");
      return empty;
    }
    if (!v->is_array()) refuse(field, "is not an array: " + v->dump());
    return *v;
  }

 private:
  const nlohmann::json& e_;
  std::string name_;
};

sc_status called_in_the_parent(void*, const sc_sample_batch*, char* error, size_t size) {
  std::snprintf(error, size, "a process subject is called through its process");
  return SC_ERR_INTERNAL;
}
sc_status run_in_the_parent(void*, const sc_matmul_problem*, char* error, size_t size) {
  std::snprintf(error, size, "a process subject is called through its process");
  return SC_ERR_INTERNAL;
}
sc_status reduced_in_the_parent(void*, const sc_collective_problem*, char* error, size_t size) {
  std::snprintf(error, size, "a process subject is called through its process");
  return SC_ERR_INTERNAL;
}
const char* launch_name(void* context, int32_t index) {
  const auto* d = static_cast<const descriptor*>(context);
  if (index < 0 || static_cast<size_t>(index) >= d->launch_config_names.size()) return nullptr;
  return d->launch_config_names[static_cast<size_t>(index)].c_str();
}

// The fields sc_sampler and sc_matmul share, read alike (common_json writes them alike).
template <typename Subject>
void read_common(const entry_reader& r, const descriptor& d, Subject& s) {
  s.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  s.name = d.name.c_str();
  s.description = d.description.c_str();
  s.memory_space = r.word("memory_space", kMemory, false);
  if (s.memory_space == 0) s.memory_space = SC_MEMORY_HOST;
}

// The routes (ABI 1.5): [{"name": ..., "tie_policy": ...}, ...]; the table's rules are
// registry::validate_sampler's, which read_sampler applies after.
void read_routes(const entry_reader& r, descriptor& d) {
  const nlohmann::json& routes = r.array("routes", false);
  if (routes.size() > SC_MAX_ROUTES)
    r.refuse("routes", fmt::format("holds {} routes, more than {}", routes.size(), SC_MAX_ROUTES));
  for (size_t i = 0; i < routes.size(); ++i) {
    const nlohmann::json& e = routes[i];
    const std::string field = fmt::format("routes[{}]", i);
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string())
      r.refuse(field, "is not an object with a string name: " + e.dump());
    d.route_names.push_back(printable(e["name"].get<std::string>()));
    const std::string policy = e.value("tie_policy", nlohmann::json()).is_string()
                                   ? e["tie_policy"].get<std::string>()
                                   : std::string();
    int32_t tie = 0;
    for (const auto& t : kTie)
      if (policy == t.word) tie = t.value;
    if (tie == 0)
      r.refuse(field + ".tie_policy",
               fmt::format("is {}, not \"keep_ties\" or \"lowest_index\"",
                           e.contains("tie_policy") ? e["tie_policy"].dump() : "missing"));
    d.routes.push_back({nullptr, tie, 0});
  }
  for (size_t i = 0; i < d.routes.size(); ++i) d.routes[i].name = d.route_names[i].c_str();
  d.sampler.num_routes = static_cast<int32_t>(d.routes.size());
  d.sampler.routes = d.routes.empty() ? nullptr : d.routes.data();
}

void read_sampler(const entry_reader& r, descriptor& d) {
  sc_sampler& s = d.sampler;
  read_common(r, d, s);
  s.input_kind = r.word("input_kind", kInput, true);
  const nlohmann::json& dtypes = r.array("input_dtypes", true);
  for (const auto& w : dtypes) {
    const int32_t dt = w.is_string() ? dtype_from_word(w.get<std::string>()) : 0;
    if (dt == 0)
      r.refuse("input_dtypes", fmt::format("holds {}, not \"f32\", \"bf16\" or \"f16\"", w.dump()));
    s.input_dtypes |= SC_DTYPE_BIT(dt);
  }
  for (const auto& w : r.array("filters", true)) {
    uint32_t bit = 0;
    for (const auto& f : kFilters)
      if (w.is_string() && w.get<std::string>() == f.word) bit = static_cast<uint32_t>(f.value);
    if (bit == 0)
      r.refuse("filters",
               fmt::format("holds {}, not \"top_k\", \"top_p\", \"min_p\" or \"temperature\"",
                           w.dump()));
    s.filters |= bit;
  }
  const bool both = (s.filters & SC_FILTER_TOP_K) && (s.filters & SC_FILTER_TOP_P);
  s.filter_order = r.word("filter_order", kOrder, both);
  if (s.filter_order == 0) s.filter_order = SC_ORDER_TOP_K_FIRST;
  s.tie_policy = r.word("tie_policy", kTie, (s.filters & SC_FILTER_TOP_K) != 0);
  if (s.tie_policy == 0) s.tie_policy = SC_TIE_KEEP_TIES;
  const int64_t outputs = r.integer("philox_outputs_per_call", true, 0);
  if (outputs < 1) r.refuse("philox_outputs_per_call", fmt::format("is {}, must be >= 1", outputs));
  s.philox_outputs_per_call = static_cast<uint64_t>(outputs);
  s.rng_policy = r.word("rng_policy", kRng, false);
  s.parameter_indexing = r.word("parameter_indexing", kParams, false);
  s.degenerate_rows = r.word("degenerate_rows", kDegenerate, false);
  s.probs_normalisation = r.word("probs_normalisation", kNormalisation, false);
  s.uniform_rule = r.word("uniform_rule", kUniformRule, false);
  s.inputs = r.word("inputs", kInputs, false);
  read_routes(r, d);
  s.context = &d;
  s.sample = called_in_the_parent;
  if (std::string why = registry::validate_sampler(s); !why.empty())
    throw std::invalid_argument(why);
}

void read_matmul(const entry_reader& r, descriptor& d) {
  sc_matmul& m = d.matmul;
  read_common(r, d, m);
  for (const auto& w : r.array("launch_configs", false)) {
    if (!w.is_string()) r.refuse("launch_configs", "holds a non-string: " + w.dump());
    d.launch_config_names.push_back(printable(w.get<std::string>()));
  }
  for (const auto& t : r.array("batch_thresholds", false)) {
    if (!t.is_number_integer()) r.refuse("batch_thresholds", "holds a non-integer: " + t.dump());
    d.batch_thresholds.push_back(t.get<int64_t>());
  }
  m.num_launch_configs = static_cast<int32_t>(d.launch_config_names.size());
  m.num_batch_thresholds = static_cast<int32_t>(d.batch_thresholds.size());
  m.batch_thresholds = d.batch_thresholds.empty() ? nullptr : d.batch_thresholds.data();
  m.context = &d;
  m.run = run_in_the_parent;
  m.launch_config_name = launch_name;
  if (std::string why = registry::validate_matmul(m); !why.empty())
    throw std::invalid_argument(why);
}

// A collective (ABI 1.6): its dtypes and invariants as words, max_world_size; the rules are
// registry::validate_collective's, which names the field.
void read_collective(const entry_reader& r, descriptor& d) {
  sc_collective& c = d.collective;
  read_common(r, d, c);
  for (const auto& w : r.array("dtypes", false)) {
    const int32_t dt = w.is_string() ? dtype_from_word(w.get<std::string>()) : 0;
    if (dt == 0) r.refuse("dtypes", fmt::format("holds {}, not \"f32\" or \"bf16\"", w.dump()));
    c.dtypes |= SC_DTYPE_BIT(dt);
  }
  if (c.dtypes == 0) c.dtypes = SC_DTYPE_BIT(SC_DTYPE_F32);
  if ((c.dtypes & SC_DTYPE_BIT(SC_DTYPE_F32)) == 0)
    r.refuse("dtypes", "does not hold \"f32\" (the battery sends float32 messages)");
  c.reduce_op = r.word("reduce_op", kReduce, false);
  if (c.reduce_op == 0) c.reduce_op = SC_REDUCE_SUM;
  const int64_t world = r.integer("max_world_size", true, 0);
  if (world < 1 || world > INT32_MAX)
    r.refuse("max_world_size", fmt::format("is {}, must be 1..{}", world, INT32_MAX));
  c.max_world_size = static_cast<int32_t>(world);
  for (const auto& w : r.array("invariants", true)) {
    uint32_t bit = 0;
    for (const auto& i : kInvariants)
      if (w.is_string() && w.get<std::string>() == i.word) bit = static_cast<uint32_t>(i.value);
    if (bit == 0 || (c.invariants & bit) != 0)
      r.refuse(
          "invariants",
          fmt::format("holds {}, not one of \"size\", \"run\", \"tree\" named once", w.dump()));
    c.invariants |= bit;
  }
  c.context = &d;
  c.run = reduced_in_the_parent;
  if (std::string why = registry::validate_collective(c); !why.empty())
    throw std::invalid_argument(why);
}

nlohmann::json common_json(const char* kind, const char* name, const char* description,
                           int32_t memory_space, const std::string& unavailable) {
  nlohmann::json j{{"kind", kind},
                   {"name", name != nullptr ? name : ""},
                   {"description", description != nullptr ? description : ""},
                   {"memory_space", word_of(kMemory, memory_space)}};
  if (!unavailable.empty()) j["unavailable"] = unavailable;
  return j;
}

}  // namespace

nlohmann::json to_json(const sc_sampler& s, const std::string& unavailable) {
  nlohmann::json j = common_json("sampler", s.name, s.description, s.memory_space, unavailable);
  j["input_kind"] = word_of(kInput, s.input_kind);
  j["input_dtypes"] = nlohmann::json::array();
  for (const int32_t d : {SC_DTYPE_F32, SC_DTYPE_BF16, SC_DTYPE_F16})
    if (s.input_dtypes & SC_DTYPE_BIT(d)) j["input_dtypes"].push_back(harness::dtype_name(d));
  j["filters"] = nlohmann::json::array();
  for (const auto& f : kFilters)
    if (s.filters & static_cast<uint32_t>(f.value)) j["filters"].push_back(f.word);
  j["filter_order"] = word_of(kOrder, s.filter_order);
  j["tie_policy"] = word_of(kTie, s.tie_policy);
  j["philox_outputs_per_call"] = s.philox_outputs_per_call;
  const registry::sampler_contracts c = registry::contracts_of(s);
  j["rng_policy"] = word_of(kRng, c.rng_policy);
  j["parameter_indexing"] = word_of(kParams, c.parameter_indexing);
  j["degenerate_rows"] = word_of(kDegenerate, c.degenerate_rows);
  j["probs_normalisation"] = word_of(kNormalisation, c.probs_normalisation);
  j["uniform_rule"] = word_of(kUniformRule, c.uniform_rule);
  j["inputs"] = word_of(kInputs, c.inputs);
  for (const sc_route& route : registry::routes_of(s))
    j["routes"].push_back({{"name", route.name}, {"tie_policy", word_of(kTie, route.tie_policy)}});
  return j;
}

nlohmann::json to_json(const sc_matmul& m, const std::string& unavailable) {
  nlohmann::json j = common_json("matmul", m.name, m.description, m.memory_space, unavailable);
  j["launch_configs"] = nlohmann::json::array();
  for (int32_t i = 0; i < m.num_launch_configs; ++i) {
    const char* n = m.launch_config_name ? m.launch_config_name(m.context, i) : nullptr;
    j["launch_configs"].push_back(n != nullptr ? n : fmt::format("config {}", i));
  }
  j["batch_thresholds"] = registry::batch_thresholds(m);
  return j;
}

nlohmann::json to_json(const sc_collective& c, const std::string& unavailable) {
  nlohmann::json j = common_json("collective", c.name, c.description, c.memory_space, unavailable);
  j["dtypes"] = nlohmann::json::array();
  for (const int32_t d : {SC_DTYPE_F32, SC_DTYPE_BF16})
    if (c.dtypes & SC_DTYPE_BIT(d)) j["dtypes"].push_back(harness::dtype_name(d));
  j["reduce_op"] = word_of(kReduce, c.reduce_op);
  j["max_world_size"] = c.max_world_size;
  j["invariants"] = nlohmann::json::array();
  for (const auto& i : kInvariants)
    if (c.invariants & static_cast<uint32_t>(i.value)) j["invariants"].push_back(i.word);
  return j;
}

nlohmann::json environment_from_hello(const nlohmann::json& hello) {
  if (!hello.contains("environment")) return nullptr;
  const auto& e = hello["environment"];
  auto text = [](const nlohmann::json& v, const std::string& field) {
    if (!v.is_string() || v.get<std::string>().size() > 128)
      throw std::invalid_argument("field " + field + " is not a string of at most 128 bytes");
    return printable(v.get<std::string>());
  };
  if (!e.is_object()) throw std::invalid_argument("field environment is not an object");
  nlohmann::json out = nlohmann::json::object();
  if (e.contains("python")) out["python"] = text(e["python"], "environment.python");
  if (!e.contains("packages")) return out;
  const auto& packages = e["packages"];
  if (!packages.is_object() || packages.size() > kMaxEnvironmentPackages)
    throw std::invalid_argument(
        fmt::format("field environment.packages is not an object of at most {} entries",
                    kMaxEnvironmentPackages));
  for (const auto& [name, version] : packages.items()) {
    if (name.size() > 128) throw std::invalid_argument("a package name over 128 bytes");
    out["packages"][printable(name)] = text(version, "environment.packages." + printable(name));
  }
  return out;
}

std::unique_ptr<descriptor> from_json(const nlohmann::json& entry) {
  const entry_reader r(entry);
  auto d = std::make_unique<descriptor>();
  d->source = entry;
  const std::string kind = r.text("kind", true);
  if (kind != "sampler" && kind != "matmul" && kind != "collective")
    r.refuse("kind", "is \"" + kind + "\", not \"sampler\", \"matmul\" or \"collective\"");
  d->kind = kind == "sampler"  ? subject_kind::sampler
            : kind == "matmul" ? subject_kind::matmul
                               : subject_kind::collective;
  d->name = r.text("name", true);
  if (d->name.empty()) r.refuse("name", "is empty");
  if (d->name.size() > kMaxNameBytes)
    r.refuse("name", fmt::format("is {} bytes long, more than {}", d->name.size(), kMaxNameBytes));
  if (printable(d->name) != d->name)
    r.refuse("name", "holds a control character or a byte that is not UTF-8");
  d->description = printable(r.text("description", false));
  d->unavailable = printable(r.text("unavailable", false));
  if (d->kind == subject_kind::sampler)
    read_sampler(r, *d);
  else if (d->kind == subject_kind::matmul)
    read_matmul(r, *d);
  else
    read_collective(r, *d);
  return d;
}

}  // namespace samplecheck::protocol
