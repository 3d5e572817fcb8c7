// The one subject model: a sampler, a matmul or a collective, in-tree, from a plugin or a
// process (--exec). Checks say which kind they apply to and make every call through
// run_call / make_matmul_runner / run_collective, which go through the subject's process
// (subject_process.h): the subject returns outputs only, and this process judges them.
// In-tree subjects can also be called in-process (--in-process, and the harness's own tests).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/registry/registry.h"
#include "kernels/samplecheck_plugin.h"
#include "suites/harness/collective_call.h"
#include "suites/harness/sampler_call.h"
#include "suites/harness/subject_process.h"
#include "suites/matmul/matmul_runner.h"

namespace samplecheck::battery {

using harness::call_status;
using harness::kUnwrittenToken;
using harness::kUnwrittenValid;
using harness::sample_call;

enum class subject_kind { sampler, matmul, collective };
// "sampler", "matmul", "collective": reports, listings and repro records.
const char* to_string(subject_kind kind);

struct subject {
  const sc_sampler* sampler = nullptr;  // exactly one of sampler, matmul and collective is set
  const sc_matmul* matmul = nullptr;
  const sc_collective* collective = nullptr;
  // The process that serves it, where every call goes; null: called in this process
  // (an in-tree subject only: sampler / matmul are then its own descriptors).
  std::shared_ptr<harness::subject_process> process;
  std::string plugin = {};   // the plugin's absolute path, or empty
  std::string exec = {};     // the --exec command, or empty
  std::string connect = {};  // the --connect socket path, or empty
  // Samplers: the dtype the battery sends (one the subject declares; the runner makes
  // one copy of the subject per declared dtype).
  int32_t input_dtype = SC_DTYPE_F32;

  subject_kind kind() const {
    return sampler != nullptr  ? subject_kind::sampler
           : matmul != nullptr ? subject_kind::matmul
                               : subject_kind::collective;
  }
  std::string name() const {
    return sampler != nullptr ? sampler->name : matmul != nullptr ? matmul->name : collective->name;
  }
  const char* description() const {
    return sampler != nullptr  ? sampler->description
           : matmul != nullptr ? matmul->description
                               : collective->description;
  }
  int32_t memory_space() const {
    return sampler != nullptr  ? sampler->memory_space
           : matmul != nullptr ? matmul->memory_space
                               : collective->memory_space;
  }
  bool is_logits() const { return sampler != nullptr && sampler->input_kind == SC_INPUT_LOGITS; }
  bool declares(uint32_t filter) const {
    return sampler != nullptr && (sampler->filters & filter) != 0;
  }
  // The plugin's path, or empty for an in-tree subject (repro files record it).
  std::string plugin_path() const { return plugin; }
  // Its descriptors are this process's own, so it can be called here (--in-process).
  bool in_tree() const { return plugin.empty() && exec.empty() && connect.empty(); }
};

// Where a running check's time goes: each call of its subject, from sending the request
// to its reply (or an in-process subject's call), is added to the open clock, with the
// samples (sampler outputs) it returned, and counted with the input rows it was sent (a
// call's fixed cost and its per-row cost then show apart from its per-draw cost); the
// rest of the check's wall time is the judge's.
// run_check opens one per check (one check runs at a time); the progress line reads
// samples_now() from its own thread while the check draws.
class subject_clock {
 public:
  subject_clock();
  ~subject_clock();
  subject_clock(const subject_clock&) = delete;
  subject_clock& operator=(const subject_clock&) = delete;
  double seconds() const;
  uint64_t calls() const;
  uint64_t input_rows() const;
  // Called around every subject call; nothing is counted while no clock is open.
  static void add(double seconds, uint64_t samples, uint64_t input_rows);
  static uint64_t samples_now();
};

// One sampling call through the subject's process (or in-process without one). A dead,
// hung or lying process throws harness::subject_failure, which run_check reports.
// A subject that declares rng_policy batch_slot keys its stream on (seed[r], slot r,
// offset[r]) and ignores subsequence[r], while the battery's plans address streams by
// (seed, subsequence): so it is sent slot_stream_seed(seed[r], subsequence[r]) instead of
// seed[r]. Distinct planned streams stay distinct across calls (the 65,536-output calls
// of one row reuse slots), and the same request in the same slot gets the same stream.
// A request_keyed subject hashes (seed[r], offset[r]) only, offset[r] its position: it is
// sent the same folded seed, so distinct planned requests keep distinct keys.
call_status run_call(const subject& s, sample_call& call);

// Sampling calls one check makes back to back (checks::draw_more), each through run_call's
// rules. With a subject process, while the subject draws one call another thread writes the
// next one into the region's other area and compares the last one's inputs, so that the
// copies and comparisons cost the check no wall time. Without one (an in-process subject)
// run() is run_call and the rest do nothing. Slots name the caller's call objects: a call is
// made ready, run and checked in one slot, and the slots are taken in turn.
class call_pipeline {
 public:
  static constexpr size_t kSlots = 3;
  explicit call_pipeline(const subject& s) : s_(s) {}
  // Main thread, before the other thread starts on this round: makes `call` ready to send
  // (written here unless stage_ahead wrote it) and finds the area stage_ahead may use.
  // Not ok: the call cannot be sent (refused, or no room); run() then answers so.
  call_status ready(size_t slot, sample_call& call);
  // The other thread: writes `call` into the area ready() found, if it fits.
  void stage_ahead(size_t slot, sample_call& call);
  // Main thread: sends the call ready() made ready and judges its outputs, on the clock.
  call_status run(size_t slot, sample_call& call);
  // Either thread, after run(slot), before the slot after next is staged: ok, or the fault
  // of a subject that wrote into an input it only reads. The call's planned seeds are back.
  call_status check_inputs(size_t slot);

 private:
  struct slot_state {
    harness::subject_process::staged_sample staged;
    std::vector<uint64_t> planned;  // the call's seeds before the slot-stream seeds
    bool ahead = false;             // stage_ahead wrote it
    bool pending = false;           // sent, inputs not compared yet
    call_status inputs;             // the comparison's outcome, once made
  };
  // The slot-stream seeds of a batch_slot or request_keyed subject in place of the planned.
  void use_stream_seeds(slot_state& slot, sample_call& call) const;

  const subject& s_;
  harness::subject_process::sample_area area_;
  std::array<slot_state, kSlots> slots_;
};

// The seed a batch_slot subject is sent for the planned stream (seed, subsequence).
uint64_t slot_stream_seed(uint64_t seed, uint64_t subsequence);
// The seed the request (seed, subsequence) reaches `s` with: slot_stream_seed for a
// batch_slot or request_keyed sampler (run_call), else `seed` itself.
uint64_t sent_seed(const subject& s, uint64_t seed, uint64_t subsequence);

// The matmul runner for the subject: through its process, or in-process without one.
std::unique_ptr<matmul_suite::matmul_runner> make_matmul_runner(const subject& s);

// One all-reduce of `inputs` (world_size ranks of count float32 elements) on the subject
// clock, through the subject's process (or in-process without one); both hold it to the
// ABI's rules (harness::call_collective). A dead, hung or lying process throws
// harness::subject_failure, which run_check reports.
harness::collective_reply run_collective(const subject& s,
                                         const std::vector<std::vector<float>>& inputs,
                                         int64_t count);

// The dtypes a sampler declares, in the order the battery judges them (f32, bf16, f16);
// empty for a matmul.
std::vector<int32_t> declared_dtypes(const subject& s);
using harness::dtype_name;

// A process subject's availability is what its hello said (its process initialises the
// device, never this one); an in-process subject's is asked here.
inline bool memory_space_available(const subject& s, std::string* why) {
  if (!s.process) return harness::memory_space_available(s.memory_space(), why);
  const std::string reason = s.process->unavailable(s.name());
  if (why != nullptr) *why = reason;
  return reason.empty();
}

}  // namespace samplecheck::battery
