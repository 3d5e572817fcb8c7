#include "suites/battery/rows_ahead.h"

#include <chrono>
#include <utility>

namespace samplecheck::battery::rows_ahead {

builder::builder(std::vector<job> jobs, size_t window, bool keeps_rows)
    : jobs_(std::move(jobs)), window_(window), keeps_rows_(keeps_rows) {
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
  if (keeps_rows_) running = 0;
}

void builder::work() {
  for (size_t k = 0; k < jobs_.size(); ++k) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || k <= running_ + window_; });
      if (stopping_) return;
    }
    building = keeps_rows_ ? generation_[k] : 0;
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
    if (keeps_rows_) running = 0;
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
  if (keeps_rows_) running = generation_[k];
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

plan_counter::plan_counter(std::vector<count> counts, size_t rows)
    : planned_(rows, 0), counts_(counts.size()), counter_(jobs(std::move(counts)), rows, false) {}

std::vector<job> plan_counter::jobs(std::vector<count> counts) {
  std::vector<job> out;
  for (auto& c : counts)
    out.push_back({c.check, [this, c = std::move(c)] {
                     planned_[c.check] = c.run();
                     total_ += planned_[c.check];
                     ++done_;
                   }});
  return out;
}

std::pair<uint64_t, bool> plan_counter::total() {
  // done_ before total_: a count done after the first read is at most added to the total.
  const bool all = done_.load() == counts_;
  return {total_.load(), all};
}

}  // namespace samplecheck::battery::rows_ahead
