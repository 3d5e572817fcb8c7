// A subject written from docs/subject-protocol.md alone (no samplecheck code but a JSON
// parser), and its faulty twins, for the protocol's tests:
//
//   protocol_subject ok             a correct probs sampler (inverse CDF, per-request streams)
//   protocol_subject matmul         a correct bf16 matmul (fp32 in a fixed order)
//   protocol_subject slot           ok, but its stream is keyed by the output row (its
//                                   subsequence is r), as it declares: rng_policy batch_slot
//   protocol_subject output_params  ok, but declares parameter_indexing output_row
//   protocol_subject sum_one        compares u in [0, 1) with the raw running sum (a row
//                                   short of 1 gives the rest to its last positive token),
//                                   as it declares: probs_normalisation assume_sum_one
//   protocol_subject no_renorm      the same, undeclared: a defect under the default contract
//   protocol_subject crash | hang | exit0 | garbage   at every process's 3rd request
//   protocol_subject bad_token      a valid row's token is V
//   protocol_subject never_samples  status 0, outputs never written (a forged pass)
//   protocol_subject wrong_version  says hello in protocol 2
//   protocol_subject bad_descriptor philox_outputs_per_call 0
//   protocol_subject rule           ok, but on cuRAND's Philox stream as it declares:
//                                   uniform_rule inverse_cdf_u53 (u from outputs 0 and 1)
//   protocol_subject rule_slot      rule, keyed by the output row: rng_policy batch_slot
//   protocol_subject truncate       ok, then truncates the shared region to 0 bytes before
//                                   each reply (a read of it would be samplecheck's SIGBUS);
//                                   where the region's seal refuses, it replies status 4
//                                   with the error, as a subject that checks its calls does
//   protocol_subject scribble       ok, but adds 1 to seed[0] after sampling (writes an array it
//                                   only reads)
//   protocol_subject in_place       ok, but zeroes its input rows after sampling, as it
//                                   declares: inputs mutated
//   protocol_subject loud           its description and every reply's message (status 4) hold
//                                   terminal escape codes; the message is ~1 MB
//   protocol_subject bad_name       a name holding an escape code
//   protocol_subject long_name      a name of 200 bytes
//   protocol_subject many           5,000 subjects in its hello
//   protocol_subject setsid         ok, but first starts a helper in a session of its own that
//                                   writes its pid to $SAMPLECHECK_TEST_HELPER_PID and sleeps
//   protocol_subject allreduce      a correct float32 all-reduce in host memory: every element
//                                   summed in rank order 0..w-1, declaring size and run invariance
//   protocol_subject allreduce_size_switch  the same, but from 2,048 elements up its sum starts
//                                   at the last rank, while declaring size invariance (a lie)
//   protocol_subject allreduce_disagree     rank 0 gets the rank-order sum, the others the
//                                   reverse order's (ranks whose bits differ)
//
// Its stream is not cuRAND's but in the rule modes: u = mix(seed, subsequence, offset), one
// draw per call, which is all the battery's stream checks ask of a per-request subject.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using json = nlohmann::json;

// Philox4x32-10 (Salmon et al., SC'11) as curand_init(seed, subsequence, offset) sets it up
// (docs/subject-protocol.md section 6, uniform_rule): key = seed, counter = {offset / 4 (64
// bits), subsequence (64 bits)}, the first output word offset % 4 of that block.
uint32_t philox_output(uint64_t seed, uint64_t subsequence, uint64_t index) {
  const uint64_t block = index / 4;
  uint32_t c[4] = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                   static_cast<uint32_t>(subsequence), static_cast<uint32_t>(subsequence >> 32)};
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0], p1 = uint64_t{0xCD9E8D57u} * c[2];
    const uint32_t n[4] = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
                           static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<uint32_t>(p0)};
    for (int i = 0; i < 4; ++i) c[i] = n[i];
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c[index % 4];
}

// inverse_cdf_u53's u: ((out0 << 21) ^ (out1 >> 11)) mod 2^53, times 2^-53.
double rule_uniform(uint64_t seed, uint64_t subsequence, uint64_t offset) {
  const uint64_t out0 = philox_output(seed, subsequence, offset);
  const uint64_t out1 = philox_output(seed, subsequence, offset + 1);
  return static_cast<double>(((out0 << 21) ^ (out1 >> 11)) & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53;
}

int control = -1, shm_fd = -1;
uint8_t* shm = nullptr;
size_t mapped = 0;

bool read_exact(void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = ::read(control, b, n);
    if (r <= 0) return false;
    b += r, n -= static_cast<size_t>(r);
  }
  return true;
}

void write_exact(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t w = ::write(control, b, n);
    if (w <= 0) std::exit(3);
    b += w, n -= static_cast<size_t>(w);
  }
}

void send(const json& j) {
  const std::string s = j.dump();
  const uint32_t n = static_cast<uint32_t>(s.size());
  const uint8_t header[4] = {uint8_t(n), uint8_t(n >> 8), uint8_t(n >> 16), uint8_t(n >> 24)};
  write_exact(header, 4);
  write_exact(s.data(), s.size());
}

bool receive(json& j) {
  uint8_t h[4];
  if (!read_exact(h, 4)) return false;
  std::string s(h[0] | h[1] << 8 | h[2] << 16 | uint32_t(h[3]) << 24, '\0');
  if (!read_exact(s.data(), s.size())) return false;
  j = json::parse(s);
  return true;
}

template <class T>
T* at(const json& arrays, const char* name) {
  const json& a = arrays[name];
  return a.is_null() ? nullptr : reinterpret_cast<T*>(shm + a["at"].get<size_t>());
}

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The refusal of a request's parameters (status 1 out of range, 2 a filter switched on), or
// null when they are all in range and off.
json refuse_parameters(const json& q, const std::string& mode) {
  const json& a = q["arrays"];
  const int64_t V = q["vocab_size"];
  const int64_t param_rows = q[mode == "output_params" ? "num_output_rows" : "num_input_rows"];
  const auto* top_k = at<int32_t>(a, "top_k");
  const auto *top_p = at<float>(a, "top_p"), *min_p = at<float>(a, "min_p"),
             *temperature = at<float>(a, "temperature");
  for (int64_t i = 0; i < param_rows; ++i) {
    if ((top_k && top_k[i] < 0) || (top_p && !(top_p[i] > 0 && top_p[i] <= 1)) ||
        (min_p && !(min_p[i] >= 0 && min_p[i] <= 1)) || (temperature && !(temperature[i] >= 0)))
      return {{"status", 1},
              {"message", "row " + std::to_string(i) + ": a parameter out of range"}};
    if ((top_k && top_k[i] > 0 && top_k[i] < V) || (top_p && top_p[i] < 1) ||
        (min_p && min_p[i] > 0) || (temperature && temperature[i] != 1))
      return {{"status", 2}, {"message", "row " + std::to_string(i) + ": no filter is declared"}};
  }
  return nullptr;
}

// One sampling call: status and message.
json sample(const json& q, const std::string& mode) {
  const int64_t V = q["vocab_size"], in_rows = q["num_input_rows"], out_rows = q["num_output_rows"];
  const json& a = q["arrays"];
  if (V <= 0) return {{"status", 1}, {"message", "vocab_size must be positive"}};
  if (q["input_dtype"] != "f32") return {{"status", 2}, {"message", "only f32 is declared"}};
  const auto* input = at<float>(a, "input");
  const auto* row_index = at<int32_t>(a, "row_index");
  const auto *seed = at<uint64_t>(a, "seed"), *sub = at<uint64_t>(a, "subsequence"),
             *offset = at<uint64_t>(a, "offset");
  auto* token = at<int32_t>(a, "out_token");
  auto* valid = at<uint8_t>(a, "out_valid");
  if (json refused = refuse_parameters(q, mode); !refused.is_null()) return refused;
  if (row_index == nullptr && out_rows != in_rows)
    return {{"status", 1}, {"message", "row_index is null but the row counts differ"}};
  for (int64_t r = 0; r < out_rows; ++r) {
    const int64_t i = row_index ? row_index[r] : r;
    if (i < 0 || i >= in_rows)
      return {{"status", 1},
              {"message", "output row " + std::to_string(r) + ": row_index out of range"}};
  }
  if (mode == "never_samples") return {{"status", 0}, {"message", ""}};
  if (mode == "loud")
    return {{"status", 4}, {"message", "\x1b[31mred\x1b[2J" + std::string(1000000, 'x')}};
  for (int64_t r = 0; r < out_rows; ++r) {
    const float* row = input + (row_index ? row_index[r] : r) * V;
    double sum = 0;
    bool bad = false;
    for (int64_t t = 0; t < V; ++t) {
      bad |= !std::isfinite(row[t]) || row[t] < 0;
      sum += row[t];
    }
    if (bad || sum <= 0) {
      valid[r] = 0, token[r] = -1;
      continue;
    }
    const bool slot = mode == "slot" || mode == "rule_slot";
    const uint64_t subsequence = slot ? static_cast<uint64_t>(r) : sub ? sub[r] : 0;
    const uint64_t h = mix(seed[r] ^ mix(subsequence ^ mix(offset[r])));
    const bool raw = mode == "sum_one" || mode == "no_renorm";
    const double u = mode.rfind("rule", 0) == 0 ? rule_uniform(seed[r], subsequence, offset[r])
                                                : static_cast<double>(h >> 11) * 0x1.0p-53;
    const double target = u * (raw ? 1.0 : sum);
    double cum = 0;
    int64_t pick = -1;
    for (int64_t t = 0; t < V && pick < 0; ++t)
      if (row[t] > 0 && (cum += row[t]) > target) pick = t;
    if (pick < 0)  // rounding left the target above the sum: the last token with mass
      for (int64_t t = V - 1; t >= 0 && pick < 0; --t)
        if (row[t] > 0) pick = t;
    token[r] = static_cast<int32_t>(mode == "bad_token" && r == 0 ? V : pick);
    valid[r] = 1;
  }
  if (mode == "scribble") const_cast<uint64_t*>(seed)[0] += 1;
  if (mode == "in_place") std::memset(const_cast<float*>(input), 0, sizeof(float) * in_rows * V);
  return {{"status", 0}, {"message", ""}};
}

float bf16_to_float(uint16_t b) {
  const uint32_t u = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return 0x7FC0;
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);  // nearest, ties to even
}

json matmul(const json& q) {
  const int64_t m = q["m"], n = q["n"], k = q["k"];
  const json& a = q["arrays"];
  const auto *x = at<uint16_t>(a, "a"), *w = at<uint16_t>(a, "weight"),
             *bias = at<uint16_t>(a, "bias");
  auto* out = at<uint16_t>(a, "out");
  if (q["launch_config"] != -1) return {{"status", 1}, {"message", "no launch configurations"}};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t l = 0; l < k; ++l)
        acc += bf16_to_float(x[i * k + l]) * bf16_to_float(w[j * k + l]);
      if (bias) acc += bf16_to_float(bias[j]);
      out[i * n + j] = float_to_bf16(acc);
    }
  return {{"status", 0}, {"message", ""}};
}

// Element i summed over the ranks from rank `first` round to the one before it, or
// (`backwards`) from the last rank down to rank 0.
float rank_sum(const std::vector<const float*>& in, int64_t i, size_t first, bool backwards) {
  const size_t w = in.size();
  float acc = in[backwards ? w - 1 : first][i];
  for (size_t s = 1; s < w; ++s) acc += in[backwards ? w - 1 - s : (first + s) % w][i];
  return acc;
}

json collective(const json& q, const std::string& mode) {
  const int64_t world = q["world_size"], count = q["count"];
  if (world < 1 || world > 8 || count < 1)
    return {{"status", 1}, {"message", "field world_size or count is out of range"}};
  if (q["dtype"] != "f32") return {{"status", 2}, {"message", "field dtype: only f32 is declared"}};
  std::vector<const float*> in;
  std::vector<float*> out;
  for (int64_t r = 0; r < world; ++r) {
    in.push_back(
        reinterpret_cast<const float*>(shm + q["arrays"]["inputs"][r]["at"].get<size_t>()));
    out.push_back(reinterpret_cast<float*>(shm + q["arrays"]["outputs"][r]["at"].get<size_t>()));
  }
  const bool late_first = mode == "allreduce_size_switch" && count >= 2048;
  for (int64_t i = 0; i < count; ++i) {
    const float sum = rank_sum(in, i, late_first ? in.size() - 1 : 0, false);
    for (size_t r = 0; r < out.size(); ++r)
      out[r][i] = mode == "allreduce_disagree" && r > 0 ? rank_sum(in, i, 0, true) : sum;
  }
  return {{"status", 0}, {"message", ""}};
}

json descriptor(const std::string& mode) {
  if (mode == "matmul")
    return {{"kind", "matmul"}, {"name", "protocol.matmul"}, {"description", "fp32 in k order"}};
  if (mode.rfind("allreduce", 0) == 0)
    return {{"kind", "collective"},
            {"name", "protocol." + mode},
            {"description", "float32 sum over the ranks in the shared region"},
            {"max_world_size", 8},
            {"invariants", {"size", "run"}}};
  json d{
      {"kind", "sampler"},
      {"name", mode == "bad_name"    ? "protocol.\x1b[2Jbad"
               : mode == "long_name" ? std::string(200, 'n')
                                     : "protocol." + mode},
      {"description", mode == "loud" ? "\x1b]0;owned\x07\x1b[2J" : "inverse CDF over the protocol"},
      {"input_kind", "probs"},
      {"input_dtypes", {"f32"}},
      {"filters", json::array()},
      {"philox_outputs_per_call", mode == "bad_descriptor" ? 0 : 1}};
  if (mode == "slot" || mode == "rule_slot") d["rng_policy"] = "batch_slot";
  if (mode == "rule" || mode == "rule_slot") d["uniform_rule"] = "inverse_cdf_u53";
  if (mode == "rule" || mode == "rule_slot") d["philox_outputs_per_call"] = 2;
  if (mode == "output_params") d["parameter_indexing"] = "output_row";
  if (mode == "sum_one") d["probs_normalisation"] = "assume_sum_one";
  if (mode == "in_place") d["inputs"] = "mutated";
  // ABI 1.5's values in pairings the host refuses, each naming its field.
  if (mode == "keyed_rule") d["rng_policy"] = "request_keyed";
  if (mode == "keyed_rule") d["uniform_rule"] = "inverse_cdf_u53";
  if (mode == "zero_logits") d["degenerate_rows"] = "treat_as_zero";
  if (mode == "zero_logits") d["input_kind"] = "logits";
  if (mode == "bad_rng") d["rng_policy"] = "request_hashed";
  if (mode == "routes_no_top_k")
    d["routes"] = {{{"name", "a"}, {"tie_policy", "keep_ties"}},
                   {{"name", "b"}, {"tie_policy", "lowest_index"}}};
  if (mode == "bad_route_policy") d["routes"] = {{{"name", "a"}, {"tie_policy", "highest"}}};
  return d;
}

// A helper that leaves the subject's process group and session (setsid), as a daemonising
// child does, and outlives the subject unless samplecheck ends it.
void start_escapee() {
  if (::fork() != 0) return;
  ::setsid();
  if (const char* path = std::getenv("SAMPLECHECK_TEST_HELPER_PID")) {
    if (FILE* f = std::fopen(path, "w")) {
      std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
      std::fclose(f);
    }
  }
  for (int fd = 0; fd < 256; ++fd) ::close(fd);
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ok";
  const char* c = std::getenv("SAMPLECHECK_CONTROL_FD");
  const char* s = std::getenv("SAMPLECHECK_SHM_FD");
  if (c == nullptr || s == nullptr) {
    std::fprintf(stderr, "protocol_subject: start me with samplecheck --exec\n");
    return 2;
  }
  control = std::atoi(c), shm_fd = std::atoi(s);
  if (mode == "setsid") start_escapee();
  json subjects = {descriptor(mode)};
  for (int i = 1; mode == "many" && i < 5000; ++i)  // small entries: the hello fits one frame
    subjects.push_back({{"kind", "sampler"},
                        {"name", "m" + std::to_string(i)},
                        {"input_kind", "probs"},
                        {"input_dtypes", {"f32"}},
                        {"filters", json::array()},
                        {"philox_outputs_per_call", 1}});
  json hello{
      {"type", "hello"}, {"protocol", mode == "wrong_version" ? 2 : 1}, {"subjects", subjects}};
  if (mode == "environment")
    hello["environment"] = {{"python", "3.11.2"}, {"packages", {{"numpy", "1.24.2"}}}};
  if (mode == "bad_environment") hello["environment"] = {{"packages", {{"numpy", 1}}}};
  send(hello);
  for (int requests = 1;; ++requests) {
    json q;
    if (!receive(q) || q["type"] == "shutdown") return 0;
    const size_t size = q["shm_size"];
    if (size > mapped) {
      if (shm != nullptr) ::munmap(shm, mapped);
      shm = static_cast<uint8_t*>(
          ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0));
      mapped = size;
    }
    if (requests == 3) {
      std::fprintf(stderr, "protocol_subject: %s at request %d\n", mode.c_str(), requests);
      if (mode == "crash") ::raise(SIGSEGV);
      if (mode == "hang") ::pause();
      if (mode == "exit0") std::exit(0);
      if (mode == "garbage") {
        write_exact("\x05\x00\x00\x00hello", 9);
        continue;
      }
    }
    json reply = q["type"] == "matmul"       ? matmul(q)
                 : q["type"] == "collective" ? collective(q, mode)
                                             : sample(q, mode);
    if (mode == "truncate" && ::ftruncate(shm_fd, 0) != 0)
      reply = {{"status", 4},
               {"message", std::string("ftruncate of the shared region: ") + std::strerror(errno)}};
    reply["type"] = "result";
    reply["id"] = q["id"];
    send(reply);
  }
}
