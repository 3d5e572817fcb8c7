#include "suites/battery/rows_ahead.h"

#include <chrono>
#include <utility>

namespace samplecheck::battery::rows_ahead {

builder::builder(std::vector<job> jobs, schedule s)
    : jobs_(s.keeps_rows || s.counts_all ? std::move(jobs) : std::vector<job>{}),
      schedule_(s),
      done_(jobs_.size()) {
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
  if (schedule_.keeps_rows) running = 0;
}

// A build inside the window comes first: the checks wait for those. A count beyond it runs
// only while the window is built, and never runs a job twice at once with its build.
bool builder::next_job(size_t& k, bool& keep) const {
  if (schedule_.keeps_rows)
    for (size_t j = running_; j < jobs_.size() && j <= running_ + schedule_.window; ++j)
      if (!done_[j].built) {
        k = j;
        keep = true;
        return true;
      }
  if (schedule_.counts_all)
    for (size_t j = 0; j < jobs_.size(); ++j)
      if (!done_[j].counted) {
        k = j;
        keep = false;
        return true;
      }
  return false;
}

void builder::work() {
  for (;;) {
    size_t k = 0;
    bool keep = false;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || next_job(k, keep); });
      if (stopping_) return;
    }
    building = keep ? generation_[k] : 0;
    uint64_t planned = 0;
    try {
      planned = jobs_[k].plan();
    } catch (...) {  // the check builds whatever is missing and reports what went wrong
    }
    {
      const std::lock_guard lock(mutex_);
      state& d = done_[k];
      d.built = d.built || keep;
      if (!d.counted) {
        d.counted = true;
        d.planned = planned;
        ++counted_;
        total_ += planned;
      }
    }
    changed_.notify_all();
  }
}

double builder::ready(size_t check) {
  const auto it = job_of_.find(check);
  if (it == job_of_.end()) {
    if (schedule_.keeps_rows) running = 0;
    return 0.0;
  }
  const size_t k = it->second;
  const auto start = std::chrono::steady_clock::now();
  {
    std::unique_lock lock(mutex_);
    running_ = k;
    changed_.notify_all();
    changed_.wait(lock, [&] { return schedule_.keeps_rows ? done_[k].built : done_[k].counted; });
  }
  if (schedule_.keeps_rows) running = generation_[k];
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

uint64_t builder::planned(size_t check) {
  const auto it = job_of_.find(check);
  const std::lock_guard lock(mutex_);
  return it == job_of_.end() ? 0 : done_[it->second].planned;
}

std::pair<uint64_t, bool> builder::total() {
  const std::lock_guard lock(mutex_);
  return {total_, counted_ == jobs_.size()};
}

}  // namespace samplecheck::battery::rows_ahead
