#include "suites/harness/subject_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "kernels/registry/registry.h"
#include "suites/harness/collective_call.h"
#include "suites/harness/guard.h"
#include "suites/harness/host_call.h"
#include "suites/harness/matmul_call.h"
#include "suites/harness/protocol.h"
#include "suites/harness/sampler_call.h"
#ifdef SAMPLECHECK_HAVE_CUDA
#include "suites/harness/device_call.h"
#endif

namespace samplecheck::harness {
namespace {

// A request this server cannot read: answered with an error frame.
struct bad_frame : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

class request_reader {
 public:
  request_reader(const nlohmann::json& q, protocol::shared_region& shm) : q_(q), shm_(shm) {
    if (!q.contains("shm_size") || !q["shm_size"].is_number_unsigned())
      throw bad_frame("request: field shm_size is missing or not an unsigned integer");
    if (!shm.map(q["shm_size"].get<size_t>()))
      throw bad_frame(
          fmt::format("cannot map {} bytes of the shared region", q["shm_size"].dump()));
  }
  int64_t integer(const char* field) const {
    if (!q_.contains(field) || !q_[field].is_number_integer())
      throw bad_frame(fmt::format("request: field {} is missing or not an integer", field));
    return q_[field].get<int64_t>();
  }
  // The array's address in the region (NULL for null), after checking it lies inside it.
  // `extra`: elements past count the server may touch (the guard rows of an output).
  template <class T>
  T* array(const char* field, bool required, size_t extra = 0) const {
    const nlohmann::json& arrays = all_arrays();
    if (!arrays.contains(field) || arrays[field].is_null()) {
      if (required) throw bad_frame(fmt::format("request: array {} is missing", field));
      return nullptr;
    }
    return place<T>(field, arrays[field], extra);
  }
  size_t count(const char* field) const { return q_["arrays"][field]["count"].get<size_t>(); }
  // A list of one array a rank (a collective's inputs / outputs): `ranks` entries of `count`
  // elements each, every one inside the region.
  template <class T>
  std::vector<T*> rank_arrays(const char* field, int64_t ranks, int64_t count, size_t extra) const {
    const nlohmann::json& arrays = all_arrays();
    if (!arrays.contains(field) || !arrays[field].is_array() ||
        static_cast<int64_t>(arrays[field].size()) != ranks)
      throw bad_frame(
          fmt::format("request: array {} is not a list of world_size = {} arrays", field, ranks));
    std::vector<T*> out;
    for (size_t r = 0; r < arrays[field].size(); ++r) {
      const std::string name = fmt::format("{}[{}]", field, r);
      const nlohmann::json& a = arrays[field][r];
      if (!a.is_object() || !a.contains("count") || a["count"] != count)
        throw bad_frame(
            fmt::format("request: array {} does not hold count = {} elements", name, count));
      out.push_back(place<T>(name, a, extra));
    }
    return out;
  }

 private:
  const nlohmann::json& all_arrays() const {
    if (!q_.contains("arrays") || !q_["arrays"].is_object())
      throw bad_frame("request: field arrays is missing or not an object");
    return q_["arrays"];
  }
  template <class T>
  T* place(const std::string& field, const nlohmann::json& a, size_t extra) const {
    if (!a.is_object() || !a.contains("at") || !a["at"].is_number_unsigned() ||
        !a.contains("count") || !a["count"].is_number_unsigned())
      throw bad_frame(fmt::format("request: array {} has no unsigned at and count", field));
    const size_t at = a["at"].get<size_t>(), count = a["count"].get<size_t>() + extra;
    if (at % alignof(T) != 0 || at > shm_.size() || count > (shm_.size() - at) / sizeof(T))
      throw bad_frame(
          fmt::format("request: array {} ({} elements at {}) is not inside the {} "
                      "byte region",
                      field, count, at, shm_.size()));
    return reinterpret_cast<T*>(shm_.data() + at);
  }

  const nlohmann::json& q_;
  protocol::shared_region& shm_;
};

#ifdef SAMPLECHECK_HAVE_CUDA
// A host array copied into `buffer` (NULL stays NULL). The buffers outlive the request,
// so memory moves only when a request needs more: a cudaFree waits for the whole device,
// and a battery makes thousands of calls.
template <class T>
T* device_copy(device_buffer<T>& buffer, const T* host, size_t count) {
  if (host == nullptr) return nullptr;
  buffer.resize(count);
  buffer.upload(host, count);
  return or_null(buffer);
}

// The shared region page-locked for the device's copies, which then run at the bus's
// speed instead of through the driver's staging buffer. Released before the region may
// move (a request that needs a larger mapping); where it cannot be locked, copies stay
// pageable and work as before.
class pinned_region {
 public:
  pinned_region() = default;
  ~pinned_region() { release(); }
  pinned_region(const pinned_region&) = delete;
  pinned_region& operator=(const pinned_region&) = delete;
  void pin(uint8_t* base, size_t size) {
    if (base == base_ && size == size_) return;
    release();
    if (cudaHostRegister(base, size, cudaHostRegisterDefault) == cudaSuccess)
      base_ = base, size_ = size;
    else
      (void)cudaGetLastError();  // not sticky: clear it so the next call does not see it
  }
  void release() {
    if (base_ != nullptr) (void)cudaHostUnregister(base_);
    (void)cudaGetLastError();
    base_ = nullptr, size_ = 0;
  }

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

// A sampling request on the device: its arrays copied into `d` (kept from one request to
// the next), the subject called there, the outputs and their guard rows copied back.
sc_status sample_on_device(const sc_sampler& s, const batch_shape& shape, const batch_arrays& h,
                           size_t input_count, device_call& d, char* error, size_t size) {
  const bool by_output = registry::contracts_of(s).parameter_indexing == SC_PARAMS_BY_OUTPUT_ROW;
  const auto params = static_cast<size_t>(by_output ? shape.num_output_rows : shape.num_input_rows);
  sc_status returned = SC_OK;
  try {
    d.load(shape, h, input_count, params);
    call_on_device(s, d, returned, error, size);
    d.download(h);
    return returned;
  } catch (const std::exception& e) {
    std::snprintf(error, size, "the subject host's CUDA copies failed: %s", e.what());
    return SC_ERR_DEVICE;
  }
}

// Device copies of the operands, kept while the request's operands_generation stays.
struct device_operands {
  uint64_t generation = 0;
  device_buffer<uint16_t> weight, bias, a, out;  // a and out: the last request's
};

sc_status matmul_on_device(const sc_matmul& m, sc_matmul_problem p, uint64_t generation,
                           device_operands& ops, char* error, size_t size) {
  try {
    const auto cells = static_cast<size_t>(p.m * p.n);
    if (generation == 0 || generation != ops.generation) {
      ops.weight.resize(static_cast<size_t>(p.n * p.k));
      ops.weight.upload(p.weight, static_cast<size_t>(p.n * p.k));
      ops.bias.resize(p.bias != nullptr ? static_cast<size_t>(p.n) : 0);
      if (p.bias != nullptr) ops.bias.upload(p.bias, static_cast<size_t>(p.n));
      ops.generation = generation;
    }
    uint16_t* host_out = p.out;
    p.a = device_copy(ops.a, p.a, static_cast<size_t>(p.m * p.k));
    p.out = device_copy(ops.out, static_cast<const uint16_t*>(p.out), cells + kGuardRows);
    p.weight = ops.weight.get(), p.bias = p.bias ? ops.bias.get() : nullptr;
    const sc_status st = m.run(m.context, &p, error, size);
    error[size - 1] = '\0';
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize after run");
    ops.out.download(host_out, cells + kGuardRows);
    return st;
  } catch (const std::exception& e) {
    std::snprintf(error, size, "the subject host's CUDA copies failed: %s", e.what());
    return SC_ERR_DEVICE;
  }
}
#endif

class server {
 public:
  server(int control, int shm, served_subjects subjects)
      : control_(control),
        shm_(shm),
        samplers_(std::move(subjects.samplers)),
        matmuls_(std::move(subjects.matmuls)),
        collectives_(std::move(subjects.collectives)) {}

  int run() {
    nlohmann::json subjects = nlohmann::json::array();
    for (const sc_sampler* s : samplers_)
      subjects.push_back(protocol::to_json(*s, why_not(s->memory_space)));
    for (const sc_matmul* m : matmuls_)
      subjects.push_back(protocol::to_json(*m, why_not(m->memory_space)));
    for (const sc_collective* c : collectives_)
      subjects.push_back(protocol::to_json(*c, why_not(c->memory_space)));
    if (!protocol::send_frame(
            control_,
            {{"type", "hello"}, {"protocol", protocol::kVersion}, {"subjects", subjects}}))
      return 3;
    for (;;) {
      nlohmann::json q;
      std::string why;
      const protocol::frame_status st =
          protocol::recv_frame(control_, protocol::kNoDeadline, q, why);
      if (st == protocol::frame_status::eof) return 0;
      if (st != protocol::frame_status::ok) return error_frame("unreadable request: " + why);
      const std::string type = q["type"].get<std::string>();
      if (type == "shutdown") return 0;
      unpin_if_moving(q);
      nlohmann::json reply;
      try {
        reply = type == "sample"       ? sample(q)
                : type == "matmul"     ? matmul(q)
                : type == "collective" ? collective(q)
                                       : throw bad_frame("unknown request type " + type);
      } catch (const std::exception& e) {
        return error_frame(e.what());
      }
      reply["type"] = "result";
      reply["id"] = q.value("id", nlohmann::json());
      if (!protocol::send_frame(control_, reply)) return 3;
    }
  }

 private:
  // A request that needs a larger mapping moves the region: it is unpinned first.
  void unpin_if_moving(const nlohmann::json& q) {
#ifdef SAMPLECHECK_HAVE_CUDA
    const auto size = q.find("shm_size");
    if (size != q.end() && size->is_number_unsigned() && size->get<size_t>() > shm_.size())
      pinned_.release();
#else
    (void)q;
#endif
  }

  static std::string why_not(int32_t memory_space) {
    std::string why;
    return memory_space_available(memory_space, &why) ? std::string() : why;
  }

  int error_frame(const std::string& message) {
    protocol::send_frame(control_, {{"type", "error"}, {"message", message}});
    return 3;
  }

  template <class T>
  static const T* by_name(const std::vector<const T*>& all, const nlohmann::json& q) {
    const std::string name = q.value("subject", std::string());
    for (const T* s : all)
      if (name == s->name) return s;
    throw bad_frame(fmt::format("no subject named '{}' here", name));
  }

  nlohmann::json sample(const nlohmann::json& q) {
    const sc_sampler& s = *by_name(samplers_, q);
    const request_reader r(q, shm_);
    const int32_t dtype = protocol::dtype_from_word(q.value("input_dtype", std::string()));
    if (dtype == 0) throw bad_frame("request: field input_dtype is not f32, bf16 or f16");
    const batch_shape shape{r.integer("vocab_size"), r.integer("num_input_rows"),
                            r.integer("num_output_rows"), dtype};
    batch_arrays a;
    a.input = dtype == SC_DTYPE_F32 ? static_cast<const void*>(r.array<float>("input", true))
                                    : r.array<uint16_t>("input", true);
    a.row_index = r.array<int32_t>("row_index", false), a.top_k = r.array<int32_t>("top_k", false);
    a.top_p = r.array<float>("top_p", false), a.min_p = r.array<float>("min_p", false);
    a.temperature = r.array<float>("temperature", false);
    a.seed = r.array<uint64_t>("seed", true),
    a.subsequence = r.array<uint64_t>("subsequence", false);
    a.offset = r.array<uint64_t>("offset", true);
    const bool device = s.memory_space != SC_MEMORY_HOST;
    a.out_token = r.array<int32_t>("out_token", true, device ? kGuardRows : 0);
    a.out_valid = r.array<uint8_t>("out_valid", true, device ? kGuardRows : 0);
    a.out_route = r.array<uint8_t>("out_route", false, device ? kGuardRows : 0);
    char error[1024] = {0};
    sc_status st = SC_ERR_INTERNAL;
    if (!device) {
      const sc_sample_batch b = make_batch(shape, a, nullptr);
      st = s.sample(s.context, &b, error, sizeof error);
    } else {
#ifdef SAMPLECHECK_HAVE_CUDA
      pinned_.pin(shm_.data(), shm_.size());
      st = sample_on_device(s, shape, a, r.count("input"), device_call_, error, sizeof error);
#else
      std::snprintf(error, sizeof error, "this subject host was built without CUDA");
#endif
    }
    error[sizeof error - 1] = '\0';
    return {{"status", st}, {"message", error}};
  }

  nlohmann::json matmul(const nlohmann::json& q) {
    const sc_matmul& m = *by_name(matmuls_, q);
    const request_reader r(q, shm_);
    const bool device = m.memory_space != SC_MEMORY_HOST;
    const sc_matmul_problem p =
        make_problem({r.integer("m"), r.integer("n"), r.integer("k"), r.array<uint16_t>("a", true),
                      r.array<uint16_t>("weight", true), r.array<uint16_t>("bias", false),
                      r.array<uint16_t>("out", true, device ? kGuardRows : 0),
                      static_cast<int32_t>(r.integer("launch_config"))});
    char error[1024] = {0};
    sc_status st = SC_ERR_INTERNAL;
    if (!device) {
      st = m.run(m.context, &p, error, sizeof error);
    } else {
#ifdef SAMPLECHECK_HAVE_CUDA
      const uint64_t generation = q.value("operands_generation", uint64_t{0});
      st = matmul_on_device(m, p, generation, device_operands_, error, sizeof error);
#else
      std::snprintf(error, sizeof error, "this subject host was built without CUDA");
#endif
    }
    error[sizeof error - 1] = '\0';
    return {{"status", st}, {"message", error}};
  }

  // The fields of a collective request (section 4), each checked; a problem the header makes
  // the collective refuse is refused here for it, so a plugin is never handed one.
  nlohmann::json collective(const nlohmann::json& q) {
    const sc_collective& c = *by_name(collectives_, q);
    const request_reader r(q, shm_);
    const int64_t world = r.integer("world_size"), count = r.integer("count");
    if (!q.contains("dtype") || q["dtype"] != "f32")
      throw bad_frame(
          fmt::format("request: field dtype is {}, not \"f32\" (a collective request carries "
                      "float32 messages)",
                      q.contains("dtype") ? protocol::printable(q["dtype"].dump()) : "missing"));
    const auto ranks = static_cast<int32_t>(std::clamp<int64_t>(world, 0, INT32_MAX));
    if (std::string why = problem_violation(c, ranks, count, SC_DTYPE_F32); !why.empty())
      return {{"status", SC_ERR_INVALID_ARGUMENT}, {"message", why}};
    // A device collective gets device copies of the ranks (run_ranks), guard rows included.
    if (std::string why = why_not(c.memory_space); !why.empty())
      return {{"status", SC_ERR_UNSUPPORTED}, {"message", why}};
    const size_t guards = c.memory_space != SC_MEMORY_HOST ? kGuardRows : 0;
    const std::vector<float*> in = r.rank_arrays<float>("inputs", world, count, 0);
    const std::vector<float*> out = r.rank_arrays<float>("outputs", world, count, guards);
    char error[1024] = {0};
    const sc_status st = run_ranks(c, in, out, count, error, sizeof error);
    return {{"status", st}, {"message", error}};
  }

  int control_;
  protocol::shared_region shm_;
  std::vector<const sc_sampler*> samplers_;
  std::vector<const sc_matmul*> matmuls_;
  std::vector<const sc_collective*> collectives_;
#ifdef SAMPLECHECK_HAVE_CUDA
  device_operands device_operands_;
  device_call device_call_;  // the last sampling request's device arrays
  pinned_region pinned_;     // after the arrays: released first, before the device memory
#endif
};

int refuse(int control_fd, const std::string& message) {
  protocol::send_frame(control_fd, {{"type", "error"}, {"message", message}});
  return 2;
}

}  // namespace

int serve(int control_fd, int shm_fd, const served_subjects& subjects) {
  return server(control_fd, shm_fd, subjects).run();
}

int serve_plugin(int control_fd, int shm_fd, const std::string& path) {
  const registry::plugin_load_result loaded = registry::load_plugin(path);
  if (!loaded.ok()) return refuse(control_fd, loaded.error);
  return serve(
      control_fd, shm_fd,
      {loaded.library->samplers(), loaded.library->matmuls(), loaded.library->collectives()});
}

int serve_in_tree(int control_fd, int shm_fd, const std::vector<std::string>& names) {
  const auto asked = [&](const char* name) {
    return names.empty() || std::find(names.begin(), names.end(), name) != names.end();
  };
  served_subjects subjects;
  for (const sc_sampler* s : registry::in_tree_samplers())
    if (asked(s->name)) subjects.samplers.push_back(s);
  for (const sc_matmul* m : registry::in_tree_matmuls())
    if (asked(m->name)) subjects.matmuls.push_back(m);
  for (const sc_collective* c : registry::in_tree_collectives())
    if (asked(c->name)) subjects.collectives.push_back(c);
  const size_t found =
      subjects.samplers.size() + subjects.matmuls.size() + subjects.collectives.size();
  if (found < std::max<size_t>(names.size(), 1))
    return refuse(control_fd, "an unknown in-tree subject name among the ones asked for");
  return serve(control_fd, shm_fd, subjects);
}

bool descriptors_from_environment(int& control_fd, int& shm_fd, std::string& why) {
  const char* control = std::getenv(protocol::kEnvControlFd);
  const char* shm = std::getenv(protocol::kEnvShmFd);
  if (control == nullptr || shm == nullptr) {
    why = fmt::format("{} and {} are not set: samplecheck starts this program (--exec)",
                      protocol::kEnvControlFd, protocol::kEnvShmFd);
    return false;
  }
  char* end = nullptr;
  control_fd = static_cast<int>(std::strtol(control, &end, 10));
  const bool control_ok = *end == '\0';
  shm_fd = static_cast<int>(std::strtol(shm, &end, 10));
  if (!control_ok || *end != '\0') {
    why = "SAMPLECHECK_CONTROL_FD / SAMPLECHECK_SHM_FD are not numbers";
    return false;
  }
  return true;
}

}  // namespace samplecheck::harness
