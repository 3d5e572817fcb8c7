#include "suites/battery/subject.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <type_traits>

#include "suites/harness/guard.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace samplecheck::battery {

const char* to_string(subject_kind kind) {
  return kind == subject_kind::sampler  ? "sampler"
         : kind == subject_kind::matmul ? "matmul"
                                        : "collective";
}

std::vector<int32_t> declared_dtypes(const subject& s) {
  std::vector<int32_t> dtypes;
  if (s.sampler == nullptr) return dtypes;
  for (const int32_t d : {SC_DTYPE_F32, SC_DTYPE_BF16, SC_DTYPE_F16})
    if (s.sampler->input_dtypes & SC_DTYPE_BIT(d)) dtypes.push_back(d);
  return dtypes;
}

uint64_t slot_stream_seed(uint64_t seed, uint64_t subsequence) {
  return XXH3_64bits_withSeed(&subsequence, sizeof subsequence, seed);
}

namespace {
std::atomic<bool> clock_open{false};
std::atomic<uint64_t> clock_nanoseconds{0}, clock_samples{0}, clock_calls{0}, clock_rows{0};

// Runs one subject call on the open clock; input_rows: the rows (or ranks) it was sent.
// A sampling call's status carries the subject's own time (from the request to its reply),
// which leaves the judge's encoding, copies and output checks on the judge's side; other
// calls, and a call that throws, count their whole wall time, less the start-up of
// `process` (run_check counts every start-up in a check).
template <typename Call>
auto timed(uint64_t samples, uint64_t input_rows, const harness::subject_process* process,
           Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  struct stop {
    std::chrono::steady_clock::time_point start;
    uint64_t samples, input_rows;
    const harness::subject_process* process;
    double started = process != nullptr ? process->start_seconds() : 0;
    double measured = -1;
    ~stop() {
      const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
      const double start_up = process != nullptr ? process->start_seconds() - started : 0;
      subject_clock::add(measured >= 0 ? measured : std::max(wall.count() - start_up, 0.0), samples,
                         input_rows);
    }
  } on_return{start, samples, input_rows, process};
  auto result = call();
  if constexpr (std::is_same_v<decltype(result), harness::call_status>)
    on_return.measured = result.subject_seconds;
  return result;
}
}  // namespace

subject_clock::subject_clock() {
  clock_nanoseconds = 0;
  clock_samples = 0;
  clock_calls = 0;
  clock_rows = 0;
  clock_open = true;
}
subject_clock::~subject_clock() { clock_open = false; }
double subject_clock::seconds() const { return static_cast<double>(clock_nanoseconds) * 1e-9; }
uint64_t subject_clock::calls() const { return clock_calls; }
uint64_t subject_clock::input_rows() const { return clock_rows; }
void subject_clock::add(double seconds, uint64_t samples, uint64_t input_rows) {
  if (!clock_open) return;
  clock_nanoseconds += static_cast<uint64_t>(seconds * 1e9);
  clock_samples += samples;
  clock_calls += 1;
  clock_rows += input_rows;
}
uint64_t subject_clock::samples_now() { return clock_open ? clock_samples.load() : 0; }

namespace {

// A batch_slot or request_keyed sampler: its requests go out with slot-stream seeds.
bool folds_seeds(const subject& s) {
  if (s.sampler == nullptr) return false;
  const int32_t rng = registry::contracts_of(*s.sampler).rng_policy;
  return rng == SC_RNG_BATCH_SLOT || rng == SC_RNG_REQUEST_KEYED;
}

// Whether the call goes out with slot-stream seeds in place of its planned ones (run_call).
bool sends_stream_seeds(const subject& s, const sample_call& call) {
  return folds_seeds(s) && call.subsequence.size() == call.seed.size();
}

// Puts the slot-stream seeds in call.seed and returns the planned ones.
std::vector<uint64_t> stream_seeds_into(sample_call& call) {
  std::vector<uint64_t> planned = call.seed;
  for (size_t r = 0; r < planned.size(); ++r)
    call.seed[r] = slot_stream_seed(planned[r], call.subsequence[r]);
  return planned;
}

call_status timed_call(const subject& s, sample_call& call,
                       const std::function<call_status()>& body) {
  return timed(call.seed.size(), static_cast<uint64_t>(call.num_input_rows), s.process.get(), body);
}

}  // namespace

uint64_t sent_seed(const subject& s, uint64_t seed, uint64_t subsequence) {
  return folds_seeds(s) ? slot_stream_seed(seed, subsequence) : seed;
}

call_status run_call(const subject& s, sample_call& call) {
  const auto call_subject = [&] {
    return timed_call(s, call, [&] {
      if (s.process) return s.process->sample(s.name(), call);
      return harness::run_call(*s.sampler, call);
    });
  };
  if (!sends_stream_seeds(s, call)) return call_subject();
  struct restore_seeds {
    sample_call& call;
    std::vector<uint64_t> planned;
    ~restore_seeds() { call.seed = std::move(planned); }
  } restore{call, stream_seeds_into(call)};
  return call_subject();
}

void call_pipeline::use_stream_seeds(slot_state& slot, sample_call& call) const {
  slot.planned.clear();
  if (sends_stream_seeds(s_, call)) slot.planned = stream_seeds_into(call);
}

call_status call_pipeline::ready(size_t k, sample_call& call) {
  slot_state& slot = slots_.at(k);
  call_status st;
  if (s_.process && !slot.ahead) {
    // Written here, where the calls before it may still lie (a grown region moves the
    // areas): their inputs are compared first, and the other thread keeps the outcome.
    for (size_t j = 0; j < kSlots; ++j)
      if (j != k) check_inputs(j);
    use_stream_seeds(slot, call);
    st = s_.process->write(s_.name(), call, slot.staged);
  }
  slot.ahead = false;
  area_ = s_.process ? s_.process->next_area(s_.name()) : harness::subject_process::sample_area{};
  return st;
}

void call_pipeline::stage_ahead(size_t k, sample_call& call) {
  slot_state& slot = slots_.at(k);
  if (area_.subject == nullptr) return;
  use_stream_seeds(slot, call);
  slot.ahead = s_.process->stage(call, area_, slot.staged);
  if (slot.ahead) return;
  if (!slot.planned.empty()) call.seed = std::move(slot.planned);  // ready() writes it afresh
  slot.planned.clear();
}

call_status call_pipeline::run(size_t k, sample_call& call) {
  slot_state& slot = slots_.at(k);
  if (!s_.process) return run_call(s_, call);
  slot.pending = true, slot.inputs = {};
  return timed_call(s_, call, [&] { return s_.process->send(s_.name(), call, slot.staged); });
}

call_status call_pipeline::check_inputs(size_t k) {
  slot_state& slot = slots_.at(k);
  if (!slot.pending) return slot.inputs;
  slot.pending = false;
  slot.inputs = s_.process->compare_inputs(s_.name(), slot.staged);
  if (!slot.planned.empty()) slot.staged.call->seed = std::move(slot.planned);
  slot.planned.clear();
  return slot.inputs;
}

namespace {

// A matmul in its subject process: the batch assembled here from the pool, the outputs
// (and the guard rows after them) judged here, as the host runner judges its own.
class process_runner final : public matmul_suite::matmul_runner {
 public:
  explicit process_runner(const battery::subject& s)
      : subject_(*s.matmul), process_(s.process), name_(s.name()) {}
  const sc_matmul& subject() const override { return subject_; }
  void load(const matmul_suite::matmul_operands& operands) override {
    static std::atomic<uint64_t> generations{0};
    operands_ = &operands;
    generation_ = ++generations;
  }

  std::vector<uint16_t> run(const std::vector<int32_t>& rows, int32_t launch_config,
                            const std::vector<int64_t>& keep) override {
    if (operands_ == nullptr) throw std::logic_error("process runner: run() before load()");
    const auto& ops = *operands_;
    const int64_t m = static_cast<int64_t>(rows.size()), n = ops.n, k = ops.k;
    batch_.resize(static_cast<size_t>(m * k));
    for (int64_t r = 0; r < m; ++r) {
      if (rows[r] < 0 || rows[r] >= ops.pool_rows)
        throw std::out_of_range("process runner: pool row " + std::to_string(rows[r]) +
                                " out of range");
      std::copy_n(ops.pool.begin() + rows[r] * k, k, batch_.begin() + r * k);
    }
    harness::subject_process::matmul_reply reply =
        timed(0, static_cast<uint64_t>(m), process_.get(), [&] {
          return process_->matmul(
              name_, {m, n, k, batch_.data(), ops.weight.data(),
                      ops.bias.empty() ? nullptr : ops.bias.data(), launch_config, generation_});
        });
    const auto cells = static_cast<size_t>(m * n);
    if (reply.out.size() != cells + harness::kGuardRows)
      throw std::runtime_error(name_ + " failed: " + reply.message);
    const std::string touched =
        harness::touched_guard(reply.out, cells, harness::kGuardBf16, "out");
    if (!touched.empty()) throw std::runtime_error(name_ + ": " + touched);
    if (reply.status != SC_OK) throw std::runtime_error(name_ + " failed: " + reply.message);
    reply.out.resize(cells);
    if (keep.empty()) return std::move(reply.out);
    std::vector<uint16_t> kept;
    kept.reserve(keep.size() * static_cast<size_t>(n));
    for (const int64_t r : keep)
      kept.insert(kept.end(), reply.out.begin() + r * n, reply.out.begin() + (r + 1) * n);
    return kept;
  }

 private:
  const sc_matmul& subject_;
  std::shared_ptr<harness::subject_process> process_;
  std::string name_;
  const matmul_suite::matmul_operands* operands_ = nullptr;
  uint64_t generation_ = 0;
  std::vector<uint16_t> batch_;
};

}  // namespace

namespace {
// An in-process matmul runner whose calls run on the subject clock.
class timed_runner final : public matmul_suite::matmul_runner {
 public:
  explicit timed_runner(std::unique_ptr<matmul_suite::matmul_runner> inner)
      : inner_(std::move(inner)) {}
  const sc_matmul& subject() const override { return inner_->subject(); }
  void load(const matmul_suite::matmul_operands& operands) override { inner_->load(operands); }
  std::vector<uint16_t> run(const std::vector<int32_t>& rows, int32_t launch_config,
                            const std::vector<int64_t>& keep) override {
    return timed(0, rows.size(), nullptr, [&] { return inner_->run(rows, launch_config, keep); });
  }

 private:
  std::unique_ptr<matmul_suite::matmul_runner> inner_;
};
}  // namespace

harness::collective_reply run_collective(const subject& s,
                                         const std::vector<std::vector<float>>& inputs,
                                         int64_t count) {
  if (s.collective == nullptr) throw std::logic_error(s.name() + " is not a collective");
  return timed(static_cast<uint64_t>(count), inputs.size(), s.process.get(), [&] {
    return s.process ? s.process->collective(s.name(), inputs, count)
                     : harness::call_collective(*s.collective, inputs, count);
  });
}

std::unique_ptr<matmul_suite::matmul_runner> make_matmul_runner(const subject& s) {
  if (s.process) return std::make_unique<process_runner>(s);
  return std::make_unique<timed_runner>(matmul_suite::make_runner(*s.matmul));
}

}  // namespace samplecheck::battery
