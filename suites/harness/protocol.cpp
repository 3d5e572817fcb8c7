#include "suites/harness/protocol.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "kernels/registry/registry.h"
#include "suites/harness/dtype.h"

namespace samplecheck::protocol {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

bool write_all(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    // send(): a subject that has gone must not kill samplecheck with SIGPIPE.
    const ssize_t w = ::send(fd, p, size, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= static_cast<size_t>(w);
  }
  return true;
}

// Reads exactly `size` bytes by `deadline`.
frame_status read_exact(int fd, double deadline, void* data, size_t size, size_t& got) {
  auto* p = static_cast<uint8_t*>(data);
  got = 0;
  while (got < size) {
    int wait_ms = -1;
    if (deadline != kNoDeadline) {
      const double left = deadline - now_seconds();
      if (left <= 0) return frame_status::timeout;
      wait_ms = static_cast<int>(left * 1000) + 1;
    }
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return frame_status::io_error;
    if (ready == 0) continue;  // the deadline check above ends the wait
    const ssize_t n = ::read(fd, p + got, size - got);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return frame_status::io_error;
    if (n == 0) return frame_status::eof;
    got += static_cast<size_t>(n);
  }
  return frame_status::ok;
}

}  // namespace

bool send_frame(int fd, const nlohmann::json& message) {
  const std::string text = message.dump();
  const auto n = static_cast<uint32_t>(text.size());
  const uint8_t header[4] = {static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8),
                             static_cast<uint8_t>(n >> 16), static_cast<uint8_t>(n >> 24)};
  return write_all(fd, header, sizeof header) && write_all(fd, text.data(), text.size());
}

frame_status recv_frame(int fd, double deadline, nlohmann::json& message, std::string& why) {
  uint8_t header[4];
  size_t got = 0;
  frame_status st = read_exact(fd, deadline, header, sizeof header, got);
  if (st == frame_status::eof && got > 0) {
    why = fmt::format("the control socket closed after {} of a frame's 4 length bytes", got);
    return frame_status::malformed;
  }
  if (st != frame_status::ok) return st;
  const uint32_t n = header[0] | header[1] << 8 | header[2] << 16 | uint32_t{header[3]} << 24;
  if (n == 0 || n > kMaxFrame) {
    why = fmt::format("a frame of length {} (bytes {:02x} {:02x} {:02x} {:02x}), outside [1, {}]",
                      n, header[0], header[1], header[2], header[3], kMaxFrame);
    return frame_status::malformed;
  }
  std::string text(n, '\0');
  st = read_exact(fd, deadline, text.data(), n, got);
  if (st == frame_status::eof) {
    why = fmt::format("the control socket closed after {} of a frame's {} bytes", got, n);
    return frame_status::malformed;
  }
  if (st != frame_status::ok) return st;
  try {
    message = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    why = fmt::format("a frame that is not JSON ({}): {:.80}", e.what(), text);
    return frame_status::malformed;
  }
  if (!message.is_object() || !message.contains("type") || !message["type"].is_string()) {
    why = fmt::format("a frame that is not a JSON object with a string \"type\": {:.80}", text);
    return frame_status::malformed;
  }
  return frame_status::ok;
}

shared_region::~shared_region() {
  if (base_ != nullptr) ::munmap(base_, size_);
  if (fd_ >= 0) ::close(fd_);
}

bool shared_region::remap(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return false;
  if (base_ != nullptr) ::munmap(base_, size_);
  base_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  return true;
}

bool shared_region::reserve(size_t bytes) {
  if (bytes <= size_) return true;
  const size_t grown = std::max(bytes, 2 * size_);
  if (::ftruncate(fd_, static_cast<off_t>(grown)) != 0) return false;
  return remap(grown);
}

bool shared_region::map(size_t bytes) {
  if (bytes <= size_) return true;
  return remap(bytes);
}

nlohmann::json region_layout::place(size_t count, size_t element_size) {
  const size_t at = (used + kAlignment - 1) / kAlignment * kAlignment;
  used = at + count * element_size;
  return {{"at", at}, {"count", count}};
}

namespace {

// The length of the UTF-8 sequence at text[i] that encodes a character other than a C1
// control (U+0080..U+009F), or 0.
size_t printable_utf8(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  const size_t n = b >= 0xF5 ? 0 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  const uint32_t lead = b & (0xFF >> (n + 1));
  uint32_t cp = lead;
  for (size_t k = 1; k < n; ++k) cp = cp << 6 | (byte(i + k) & 0x3F);
  const uint32_t least[] = {0, 0, 0xA0, 0x800, 0x10000};  // overlong forms, C1 controls below
  if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0x20 && b < 0x7F) {
      out += text[i++];
    } else if (const size_t n = b >= 0x80 ? printable_utf8(text, i) : 0; n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\x{:02x}", b);
      ++i;
    }
  }
  return out;
}

int32_t dtype_from_word(const std::string& word) {
  for (const int32_t d : {SC_DTYPE_F32, SC_DTYPE_BF16, SC_DTYPE_F16})
    if (word == harness::dtype_name(d)) return d;
  return 0;
}

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
  if (kind != "sampler" && kind != "matmul")
    r.refuse("kind", "is \"" + kind + "\", not \"sampler\" or \"matmul\"");
  d->is_sampler = kind == "sampler";
  d->name = r.text("name", true);
  if (d->name.empty()) r.refuse("name", "is empty");
  if (d->name.size() > kMaxNameBytes)
    r.refuse("name", fmt::format("is {} bytes long, more than {}", d->name.size(), kMaxNameBytes));
  if (printable(d->name) != d->name)
    r.refuse("name", "holds a control character or a byte that is not UTF-8");
  d->description = printable(r.text("description", false));
  d->unavailable = printable(r.text("unavailable", false));
  if (d->is_sampler)
    read_sampler(r, *d);
  else
    read_matmul(r, *d);
  return d;
}

}  // namespace samplecheck::protocol
