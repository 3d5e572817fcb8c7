// Rows built ahead of their check. While a subject that draws on a device serves one check,
// the host's cores are idle; run_planned then builds the next checks' rows on another thread
// (each check's planned_samples builds the rows the check itself will build: fixtures and
// their references), and each check takes its rows instead of building them again
// (suites/checks/row_cache.h). Each check run that rows are built for has a generation of
// its own, never reused: a row is only ever taken by the run it was built for.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
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

// run_planned's helper: builds the jobs' rows in order on its own thread, at most `window`
// checks ahead of the one running (the rows wait in memory until taken).
class builder {
 public:
  builder(std::vector<job> jobs, size_t window);
  ~builder();
  builder(const builder&) = delete;
  builder& operator=(const builder&) = delete;

  // Waits until plan row `check`'s rows (if it has a job) are built, and makes it the check
  // this thread runs. Returns the seconds waited: the check's own (judge) time.
  double ready(size_t check);

 private:
  void work();

  std::vector<job> jobs_;
  std::vector<uint64_t> generation_;
  std::map<size_t, size_t> job_of_;  // plan row -> its job
  size_t window_;
  std::mutex mutex_;
  std::condition_variable changed_;
  size_t built_ = 0;    // jobs done
  size_t running_ = 0;  // the job of the check now running
  bool stopping_ = false;
  std::thread helper_;
};

}  // namespace samplecheck::battery::rows_ahead
