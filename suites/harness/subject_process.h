// samplecheck's side of the subject-process protocol (docs/subject-protocol.md): a
// subject in a child process, started by exec (--exec CMD) or by fork (an in-tree
// subject or a plugin, served by subject_server.h in the child), reached through one
// control socket and one shared region. Every call a check makes on a process subject
// goes through sample(), matmul() or collective(); the child returns outputs only and every
// judgement is made here.
//
// Whatever goes wrong with the child (crash, hang, exit, a malformed reply) throws
// subject_failure, which is deliberately not a std::exception: a check's own error
// handling cannot swallow it, and run_check (isolation.h) makes it the check's FAIL or
// TIMEOUT. The process is then killed, and the next call starts a fresh one.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "suites/harness/call.h"
#include "suites/harness/collective_call.h"
#include "suites/harness/host_call.h"
#include "suites/harness/protocol.h"

namespace samplecheck::harness {

struct subject_failure {
  bool timed_out = false;
  std::string why;  // what happened, the exit status or signal, and the stderr tail
};

// The deadline every call of the running check must meet (protocol::now_seconds()
// scale); kNoDeadline outside a check. Set by run_check for the check's duration.
class call_deadline {
 public:
  explicit call_deadline(double deadline) : previous_(current_) { current_ = deadline; }
  ~call_deadline() { current_ = previous_; }
  call_deadline(const call_deadline&) = delete;
  call_deadline& operator=(const call_deadline&) = delete;
  static double current() { return current_; }

 private:
  double previous_;
  static inline double current_ = protocol::kNoDeadline;
};

class subject_process {
 public:
  // The child's body in fork mode: serves the protocol on the two descriptors and returns
  // the exit status.
  using server = std::function<int(int control_fd, int shm_fd)>;

  // `label` names the subject in messages ("--exec 'python x.py'", "plugin lib.so").
  static std::shared_ptr<subject_process> exec(std::string command, double handshake_timeout_s);
  static std::shared_ptr<subject_process> fork(server body, std::string label,
                                               double handshake_timeout_s);
  // A server reached at an AF_UNIX socket (subject_socket.h), connected anew at each start.
  static std::shared_ptr<subject_process> connect(std::string socket_path,
                                                  double handshake_timeout_s);
  ~subject_process();
  subject_process(const subject_process&) = delete;
  subject_process& operator=(const subject_process&) = delete;

  const std::string& label() const { return label_; }
  const std::string& command() const { return command_; }  // the --exec command, or empty
  // What the first hello said of the process (protocol::environment_from_hello), or null.
  const nlohmann::json& environment() const { return environment_; }

  // Starts the child if it is not running and returns its hello's descriptors. Throws
  // subject_failure (no hello, a bad one, or one unlike the first process's) and
  // std::invalid_argument for a descriptor the ABI's rules refuse.
  const std::vector<std::unique_ptr<protocol::descriptor>>& descriptors();
  // The hello's "unavailable" reason for a subject (the process's or its entry's).
  std::string unavailable(const std::string& name);

  // One sampling call, as run_call makes it in-process: the dtype refusal, the encoded
  // input, sentinels and guard rows, then the outputs judged here (finish_call).
  call_status sample(const std::string& name, sample_call& call);

  // Sampling calls made back to back (battery::call_pipeline) are written into the shared
  // region while the subject still draws the call before, and that call's inputs are
  // compared after it: the region holds two areas, and each call takes the one the call
  // before it did not. The copies then cost the judge's main thread nothing.
  //
  // Where a call may be written ahead: null `subject` when nothing may be (no process yet).
  struct sample_area {
    const protocol::descriptor* subject = nullptr;
    std::shared_ptr<protocol::shared_region> region;  // the running process's
    size_t base = 0, limit = 0;
  };
  // A call as written: what it was sent as, where, and for which process.
  struct staged_sample {
    sample_call* call = nullptr;  // the caller's call, which the outputs go back to
    sample_call expanded;         // its parameters per output row, if the subject takes them so
    bool by_output_row = false, inputs_preserved = true;
    bool unsent = false;         // prepared (written or refused) for its send, not sent yet
    std::vector<uint16_t> bits;  // the input as written (16-bit patterns; empty for f32)
    nlohmann::json arrays;
    size_t num_routes = 0;
    // Where it was written (null: not written); a restarted process has another region.
    std::shared_ptr<protocol::shared_region> region;
    call_status refused;  // not ok: refused here, never sent
    sample_call& sent() { return by_output_row ? expanded : *call; }
    const sample_call& sent() const { return by_output_row ? expanded : *call; }
  };
  // The caller's thread, while no stage() runs: the area the next call may be written to.
  sample_area next_area(const std::string& name);
  // Any one thread at a time, while the caller's thread waits for a reply: writes `call`
  // into `area`. False (nothing written) when it does not fit or there is no area: send()
  // then writes it.
  bool stage(sample_call& call, const sample_area& area, staged_sample& out);
  // The caller's thread, while no stage() runs: writes `call` unless `staged` holds it,
  // written for this process. It takes the area after the last sent call's, the region
  // grown so that each of `areas` (2, or 1 for a call made alone) holds it, over whatever
  // the calls before it left there: compare their inputs first. Not ok: the call is
  // refused here (or cannot be placed) and never sent.
  call_status write(const std::string& name, sample_call& call, staged_sample& staged,
                    int areas = 2);
  // The caller's thread: sends the call (write() first) and judges its outputs. Its inputs
  // are judged by compare_inputs, before the call after next is staged (in the same area).
  call_status send(const std::string& name, sample_call& call, staged_sample& staged);
  // Any thread, once the call's reply came: ok, or the contract fault of a subject that
  // wrote into an array it declares it only reads.
  call_status compare_inputs(const std::string& name, const staged_sample& staged) const;

  struct matmul_request {
    int64_t m = 0, n = 0, k = 0;
    const uint16_t *a = nullptr, *weight = nullptr, *bias = nullptr;
    int32_t launch_config = -1;
    uint64_t operands_generation = 0;  // changes whenever weight or bias does
  };
  struct matmul_reply {
    sc_status status = SC_OK;
    std::string message;
    std::vector<uint16_t> out;  // m * n outputs, then kGuardRows canaries
  };
  matmul_reply matmul(const std::string& name, const matmul_request& request);

  // One all-reduce of `inputs` (world_size ranks of count float32 elements), held to the
  // rules call_collective holds an in-process call to (subject_collective.cpp), and the
  // inputs, which the subject only reads, compared with what was sent.
  collective_reply collective(const std::string& name,
                              const std::vector<std::vector<float>>& inputs, int64_t count);

  // The child's start-ups so far, each from spawning (or connecting to) it to its hello,
  // summed: the subject's own time, wherever in a check it came.
  double start_seconds() const { return start_seconds_; }

  // Sends shutdown and reaps the child (killing it after 5 s); the next call restarts it.
  void stop();

 private:
  subject_process(std::string label, std::string command, server body, double handshake_s);
  // Starts the child (launch) and adds the time to its hello to start_seconds_.
  void start();
  void launch();
  void read_hello();
  // The hello's subjects (at most protocol::kMaxSubjects), or those of the first hello again.
  void accept_subjects(const nlohmann::json& hello);
  const protocol::descriptor& find(const std::string& name);
  // Kills the process group, and throws subject_failure with `what` and the stderr tail.
  [[noreturn]] void fail(bool timed_out, const std::string& what);
  // A frame from the child by `deadline`, stderr drained meanwhile; eof once it ended.
  protocol::frame_status wait_message(double deadline, nlohmann::json& message, std::string& why);
  nlohmann::json request(nlohmann::json message);  // send, then the reply of the same id
  void drain_stderr();
  std::string stderr_tail() const;
  // How the child ended (reaping it), for a message that goes on with `when`.
  std::string what_ended(const std::string& when);

  // The --connect mode's start; its subject is a process of another parent, ended by pid.
  void start_connected();
  bool connected() const { return !socket_path_.empty(); }
  // Ends the subject: its whole group and helpers, or a connected server by its pid.
  void end_process(bool reaped);

  // A call as it will be sent (the refusal, parameters per output row, the encoded
  // input); false: refused here (out.refused says why).
  bool prepare_call(const protocol::descriptor& d, sample_call& call, staged_sample& out);
  // Writes a prepared call into `area`; false when it does not fit (nothing written).
  bool put_call(const sample_area& area, staged_sample& out);
  // Grows the region so that each of its `areas` (1 or 2) holds `bytes`; the area after the
  // last written call's (the whole region for one).
  sample_area area_for(const protocol::descriptor& d, size_t bytes, int areas);

  std::string label_, command_, socket_path_;
  server body_;
  double handshake_s_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int control_ = -1, stderr_fd_ = -1;
  std::shared_ptr<protocol::shared_region> shm_;  // shared: a staged call holds it too
  double start_seconds_ = 0;                      // start_seconds()
  bool upper_area_next_ = false;                  // the next call's area is the second one
  std::string stderr_text_;                       // the last few KiB the child wrote
  uint64_t next_id_ = 1;
  uint64_t weight_generation_ = 0;  // the operands the region holds now, 0 = none
  std::string unavailable_;
  nlohmann::json first_hello_;  // the subjects of the first hello
  nlohmann::json environment_;
  std::vector<std::unique_ptr<protocol::descriptor>> descriptors_;
  input_encoder encoder_;  // the last call's input, encoded to its dtype
};

}  // namespace samplecheck::harness
