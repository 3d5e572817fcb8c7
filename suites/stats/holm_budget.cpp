#include "suites/stats/holm_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

holm_budget::holm_budget(double total_alpha) : total_alpha_(total_alpha) {
  detail::check_level("holm_budget", "total_alpha", total_alpha);
}

int holm_budget::declare(std::string name, double weight) {
  if (!(std::isfinite(weight) && weight > 0.0))
    throw std::invalid_argument("holm_budget::declare: check '" + name + "' has weight " +
                                std::to_string(weight) + ", expected finite and > 0");
  for (const check& c : checks_)
    if (c.name == name)
      throw std::invalid_argument("holm_budget::declare: check '" + name + "' declared twice");
  check declared;
  declared.name = std::move(name);
  declared.weight = weight;
  declared.p_value = std::numeric_limits<double>::quiet_NaN();
  checks_.push_back(std::move(declared));
  return static_cast<int>(checks_.size()) - 1;
}

const holm_budget::check& holm_budget::at(int id, const char* where) const {
  if (id < 0 || id >= size())
    throw std::out_of_range(std::string("holm_budget::") + where + ": no check with id " +
                            std::to_string(id));
  return checks_[static_cast<size_t>(id)];
}

double holm_budget::planning_alpha(int id) const {
  const double weight = at(id, "planning_alpha").weight;
  double total_weight = 0.0;
  for (const check& c : checks_) total_weight += c.weight;
  return weight / total_weight * total_alpha_;
}

void holm_budget::record(int id, double p_value) {
  const check& c = at(id, "record");
  if (c.recorded || c.skipped)
    throw std::logic_error("holm_budget::record: check '" + c.name + "' already decided");
  if (!(p_value >= 0.0 && p_value <= 1.0))
    throw std::invalid_argument("holm_budget::record: check '" + c.name + "' has p-value " +
                                std::to_string(p_value) + ", expected in [0, 1]");
  checks_[static_cast<size_t>(id)].p_value = p_value;
  checks_[static_cast<size_t>(id)].recorded = true;
}

void holm_budget::skip(int id, std::string reason) {
  const check& c = at(id, "skip");
  if (c.recorded || c.skipped)
    throw std::logic_error("holm_budget::skip: check '" + c.name + "' already decided");
  checks_[static_cast<size_t>(id)].skipped = true;
  checks_[static_cast<size_t>(id)].skip_reason = std::move(reason);
}

std::vector<holm_budget::decision> holm_budget::decide() const {
  std::vector<decision> out;
  std::vector<size_t> active;
  for (size_t i = 0; i < checks_.size(); ++i) {
    const check& c = checks_[i];
    if (!c.recorded && !c.skipped)
      throw std::logic_error("holm_budget::decide: check '" + c.name +
                             "' was neither recorded nor skipped");
    out.push_back(decision{c.name, c.p_value, 0.0, false, c.skipped, c.skip_reason});
    if (c.recorded) active.push_back(i);
  }
  // Order by p / w; ties broken by declaration order so the outcome is reproducible.
  std::stable_sort(active.begin(), active.end(), [&](size_t a, size_t b) {
    return checks_[a].p_value * checks_[b].weight < checks_[b].p_value * checks_[a].weight;
  });
  double remaining_weight = 0.0;
  for (size_t i : active) remaining_weight += checks_[i].weight;
  bool stopped = false;
  double level_per_weight = total_alpha_ / remaining_weight;
  for (size_t i : active) {
    const check& c = checks_[i];
    out[i].alpha_share = c.weight * level_per_weight;
    if (stopped) continue;
    if (c.p_value <= out[i].alpha_share) {
      out[i].rejected = true;
      remaining_weight -= c.weight;
      if (remaining_weight > 0.0) level_per_weight = total_alpha_ / remaining_weight;
    } else {
      stopped = true;  // the remaining checks keep the level of this step
    }
  }
  return out;
}

}  // namespace samplecheck::stats
