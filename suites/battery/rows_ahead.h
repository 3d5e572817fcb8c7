// Rows built ahead of their check. While a subject that draws on a device serves one check,
// the host's cores are idle; run_planned then builds the next checks' rows on another thread
// (each check's planned_samples builds the rows the check itself will build: fixtures and
// their references), and each check takes its rows instead of building them again
// (suites/checks/row_cache.h). Each check run that rows are built for has a generation of
// its own, never reused: a row is only ever taken by the run it was built for.
// The same helper, keeping no rows and with no window, counts the battery's plans for the
// progress line beside the checks: counted before the first check, they would hold the main
// thread for a build of every check's rows.
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

// One check's rows to build: its plan row and its planned_samples.
struct job {
  size_t check;
  std::function<void()> build;
};

// run_planned's helper: runs the jobs in order on its own thread, at most `window` checks
// ahead of the one running. keeps_rows: each job builds rows for its check's generation
// (they wait in memory until taken); else a job leaves no rows (it counts a plan).
class builder {
 public:
  builder(std::vector<job> jobs, size_t window, bool keeps_rows = true);
  ~builder();
  builder(const builder&) = delete;
  builder& operator=(const builder&) = delete;

  // Waits until plan row `check`'s job (if it has one) is done and, where the jobs keep rows,
  // makes it the check this thread runs. Returns the seconds waited: the check's own (judge)
  // time.
  double ready(size_t check);

 private:
  void work();

  std::vector<job> jobs_;
  std::vector<uint64_t> generation_;
  std::map<size_t, size_t> job_of_;  // plan row -> its job
  size_t window_;
  bool keeps_rows_;
  std::mutex mutex_;
  std::condition_variable changed_;
  size_t built_ = 0;    // jobs done
  size_t running_ = 0;  // the job of the check now running
  bool stopping_ = false;
  std::thread helper_;
};

// The battery's plans for the progress line, counted by a builder that keeps no rows and has
// no window: a check's start waits only for its own count (long done for all but the first),
// and the line's total grows to the battery's as the counts come in.
class plan_counter {
 public:
  struct count {
    size_t check;                   // plan row
    std::function<uint64_t()> run;  // its planned samples
  };
  plan_counter(std::vector<count> counts, size_t rows);

  // Waits for plan row `check`'s count; returns the seconds waited (the check's judge time).
  double ready(size_t check) { return counter_.ready(check); }
  // After ready(check): its count.
  uint64_t planned(size_t check) const { return planned_[check]; }
  // The counts done so far, summed, and whether every count is done.
  std::pair<uint64_t, bool> total();

 private:
  std::vector<job> jobs(std::vector<count> counts);

  std::vector<uint64_t> planned_;  // written by the counter's thread before its job is done
  std::atomic<size_t> done_{0};
  size_t counts_ = 0;
  std::atomic<uint64_t> total_{0};
  builder counter_;
};

}  // namespace samplecheck::battery::rows_ahead
