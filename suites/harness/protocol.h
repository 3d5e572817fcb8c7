// The subject-process protocol, version 1 (docs/subject-protocol.md): frames on the
// control socket, the shared region, and descriptors as they travel in the hello. Both
// ends use it: subject_process.h (samplecheck's side) and subject_server.h (a subject
// served from an sc_sampler / sc_matmul / sc_collective).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::protocol {

inline constexpr int kVersion = 1;
inline constexpr uint32_t kMaxFrame = 1u << 20;
inline constexpr size_t kAlignment = 64;  // every array's offset in the shared region
// A hello describes at most this many subjects: each is a battery run of its own.
inline constexpr size_t kMaxSubjects = 256;
// A subject's name: at most this many bytes, printable (printable() leaves it unchanged).
inline constexpr size_t kMaxNameBytes = 128;

// Environment variables the subject reads (section 1).
inline constexpr const char* kEnvProtocol = "SAMPLECHECK_PROTOCOL";
inline constexpr const char* kEnvControlFd = "SAMPLECHECK_CONTROL_FD";
inline constexpr const char* kEnvShmFd = "SAMPLECHECK_SHM_FD";

// Seconds on the steady clock; the deadlines below are in it. kNoDeadline waits forever.
double now_seconds();
inline constexpr double kNoDeadline = -1;

enum class frame_status { ok, eof, timeout, malformed, io_error };

// Writes one frame (4-byte little-endian length + JSON). False on a write error.
bool send_frame(int fd, const nlohmann::json& message);
// Reads one frame. `why` says what was wrong when the status is not ok.
frame_status recv_frame(int fd, double deadline, nlohmann::json& message, std::string& why);

// The shared region as one side maps it: a memfd mapped MAP_SHARED. Owns the descriptor.
class shared_region {
 public:
  explicit shared_region(int fd) : fd_(fd) {}
  ~shared_region();
  shared_region(const shared_region&) = delete;
  shared_region& operator=(const shared_region&) = delete;
  // Owner side: grows the file to at least `bytes` and maps it all. False on failure.
  bool reserve(size_t bytes);
  // Subject side: maps at least `bytes` (the request's shm_size). False on failure.
  bool map(size_t bytes);
  uint8_t* data() const { return base_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }

 private:
  bool remap(size_t bytes);
  int fd_;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

// Where each array of a request goes: offsets handed out in order, 64-byte aligned.
struct region_layout {
  size_t used = 0;
  // {"at": offset, "count": count}; reserves count * element_size bytes.
  nlohmann::json place(size_t count, size_t element_size);
};

enum class subject_kind { sampler, matmul, collective };

// A descriptor received in a hello, behind an sc_sampler, sc_matmul or sc_collective whose
// strings and arrays it owns. Its call pointer refuses: a process subject is called through
// its process. Not movable: the descriptor points into itself.
struct descriptor {
  subject_kind kind = subject_kind::sampler;
  sc_sampler sampler{};
  sc_matmul matmul{};
  sc_collective collective{};
  std::string name, description, unavailable;
  std::vector<std::string> launch_config_names;
  std::vector<int64_t> batch_thresholds;
  std::vector<std::string> route_names;  // sampler.routes points into these two
  std::vector<sc_route> routes;
  nlohmann::json source;  // as it came, for comparing the hello of a restarted subject

  descriptor() = default;
  descriptor(const descriptor&) = delete;
  descriptor& operator=(const descriptor&) = delete;
};

// The hello's entry for an sc_sampler / sc_matmul / sc_collective (section 3).
// `unavailable`: why it cannot run in this process, or empty.
nlohmann::json to_json(const sc_sampler& s, const std::string& unavailable);
nlohmann::json to_json(const sc_matmul& m, const std::string& unavailable);
nlohmann::json to_json(const sc_collective& c, const std::string& unavailable);
// Parses one entry; throws std::invalid_argument naming the subject and the field, for a
// missing or mistyped field and for every refusal of the plugin loader (registry.h).
std::unique_ptr<descriptor> from_json(const nlohmann::json& entry);
// The hello's optional "environment" ({"python": "3.11.2", "packages": {"numpy": "1.24.2"}}):
// what a subject process reports about itself, recorded in report.json, never trusted for
// anything else. Null when absent; throws std::invalid_argument naming the field when
// malformed (not strings, more than kMaxEnvironmentPackages packages, a text over 128 bytes).
inline constexpr size_t kMaxEnvironmentPackages = 64;
nlohmann::json environment_from_hello(const nlohmann::json& hello);

// Text from a subject (a description, a message, its stderr) as samplecheck shows it anywhere:
// C0 and C1 control characters, DEL and bytes that are not UTF-8 written as \xNN, so a
// subject cannot move a terminal's cursor, recolour it, or break a report file. Every such
// text passes through it where it enters samplecheck (subject_process.cpp, from_json).
std::string printable(std::string_view text);

// The dtype of "f32" / "bf16" / "f16" (dtype_name's words), 0 when unknown.
int32_t dtype_from_word(const std::string& word);

}  // namespace samplecheck::protocol
