// The judge's independent work on the host's cores: fixture rows, their references and
// their statistics from row to row, and a row's null replicates, each on its own stream.
// Each result lands in its own slot, so the outcome is the one a sequential loop gives.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace samplecheck::stats {

namespace detail {
// The cores a parallel_for on this thread may use: all of them on a thread that is not a
// worker; a worker's share of its caller's otherwise. A loop inside a loop (a row's
// replicates inside the rows) so spreads over the cores the outer loop leaves idle, and
// never multiplies the threads beyond them.
inline thread_local size_t cores_here = 0;
inline size_t cores_available() {
  return cores_here != 0 ? cores_here : std::max<size_t>(1, std::thread::hardware_concurrency());
}
}  // namespace detail

// Calls fn(i) once for every i in [0, n), on at most the cores this thread may use.
// The first exception thrown by any call is rethrown after every worker has stopped.
template <class F>
void parallel_for(size_t n, F&& fn) {
  const size_t cores = detail::cores_available();
  const size_t workers = std::min(n, cores);
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  const size_t share = std::max<size_t>(1, cores / workers);
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    const size_t outer = detail::cores_here;
    detail::cores_here = share;
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
    detail::cores_here = outer;
  };
  {
    std::vector<std::jthread> pool;
    for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
    work();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace samplecheck::stats
