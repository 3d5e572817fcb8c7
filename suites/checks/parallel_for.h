// The judge's per-row work on the host's cores: fixture rows, their references and
// their statistics are independent from row to row, and each result lands in its own
// slot, so the outcome is the one a sequential loop gives.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace samplecheck::checks {

// Calls fn(i) once for every i in [0, n), on at most the host's hardware threads.
// The first exception thrown by any call is rethrown after every worker has stopped.
template <class F>
void parallel_for(size_t n, F&& fn) {
  const size_t workers =
      std::min<size_t>(n, std::max<unsigned>(1, std::thread::hardware_concurrency()));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
    work();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace samplecheck::checks
