// Rows built ahead of their check. While a subject that draws on a device serves one check,
// the host's cores are idle; run_planned then builds the next checks' rows on another thread
// (each check's planned_samples builds the rows the check itself will build: fixtures and
// their references), and each check takes its rows instead of building them again
// (suites/checks/row_cache.h). Each check run that rows are built for has a generation of
// its own, never reused: a row is only ever taken by the run it was built for.
// The same helper counts the battery's plans for the progress line beside the checks (counted
// before the first check, they would hold the main thread for a build of every check's rows):
// a build inside the window brings its count; beyond the window a plan is counted, keeping no
// rows, only while every check inside the window is built.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace samplecheck::battery::rows_ahead {

// The generation the calling thread builds rows for (run_planned's helper thread), and the
// generation of the check the calling thread runs; 0: none.
inline thread_local uint64_t building = 0;
inline thread_local uint64_t running = 0;

inline uint64_t next_generation() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

// One check's plan: its plan row and its planned_samples, which builds the check's rows.
struct job {
  size_t check;
  std::function<uint64_t()> plan;
};

// What the helper does with the jobs. keeps_rows: it builds each job's rows for its check's
// generation (they wait in memory until taken), at most `window` checks ahead of the one
// running. counts_all: it counts every job's plan, the jobs beyond the window keeping no rows.
// Neither: there is nothing to do, and no check waits.
struct schedule {
  bool keeps_rows = false;
  size_t window = 0;
  bool counts_all = false;
};

// run_planned's helper: one thread that runs the jobs in plan order as the schedule says.
class builder {
 public:
  builder(std::vector<job> jobs, schedule s);
  ~builder();
  builder(const builder&) = delete;
  builder& operator=(const builder&) = delete;

  // Waits until plan row `check`'s job (if it has one) has built its rows (keeps_rows) or
  // counted its plan, and, where rows are kept, makes it the check this thread runs. Returns
  // the seconds waited: the check's own (judge) time.
  double ready(size_t check);
  // After ready(check): its planned samples (0 where it has no job).
  uint64_t planned(size_t check);
  // The plans counted so far, summed, and whether every job's plan is counted.
  std::pair<uint64_t, bool> total();

 private:
  struct state {
    bool built = false, counted = false;
    uint64_t planned = 0;
  };
  bool next_job(size_t& k, bool& keep) const;  // under mutex_
  void work();

  std::vector<job> jobs_;
  std::vector<uint64_t> generation_;
  std::map<size_t, size_t> job_of_;  // plan row -> its job
  schedule schedule_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<state> done_;  // per job
  size_t counted_ = 0;       // jobs whose plan is counted
  uint64_t total_ = 0;       // their plans, summed
  size_t running_ = 0;       // the job of the check now running
  bool stopping_ = false;
  std::thread helper_;
};

}  // namespace samplecheck::battery::rows_ahead
