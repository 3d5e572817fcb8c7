#include "suites/battery/rows_ahead.h"

#include <chrono>
#include <utility>

namespace samplecheck::battery::rows_ahead {

builder::builder(std::vector<job> jobs, size_t window) : jobs_(std::move(jobs)), window_(window) {
  for (size_t k = 0; k < jobs_.size(); ++k) {
    generation_.push_back(next_generation());
    job_of_[jobs_[k].check] = k;
  }
  if (!jobs_.empty()) helper_ = std::thread([this] { work(); });
}

builder::~builder() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (helper_.joinable()) helper_.join();
  running = 0;
}

void builder::work() {
  for (size_t k = 0; k < jobs_.size(); ++k) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || k <= running_ + window_; });
      if (stopping_) return;
    }
    building = generation_[k];
    try {
      jobs_[k].build();
    } catch (...) {  // the check builds whatever is missing and reports what went wrong
    }
    {
      const std::lock_guard lock(mutex_);
      built_ = k + 1;
    }
    changed_.notify_all();
  }
}

double builder::ready(size_t check) {
  const auto it = job_of_.find(check);
  if (it == job_of_.end()) {
    running = 0;
    return 0.0;
  }
  const size_t k = it->second;
  const auto start = std::chrono::steady_clock::now();
  {
    std::unique_lock lock(mutex_);
    running_ = k;
    changed_.notify_all();
    changed_.wait(lock, [&] { return built_ > k; });
  }
  running = generation_[k];
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace samplecheck::battery::rows_ahead
