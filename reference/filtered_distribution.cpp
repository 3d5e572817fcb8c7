#include "reference/filtered_distribution.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>

#include "reference/compensated_sum.h"
#include "reference/policy_order.h"
#include "reference/row_validation.h"

namespace samplecheck {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;

// Three-way outcome of one rule for one token.
enum class decision { keep, drop, undecided };

// gamma_n of a float sum of n positive terms (n - 1 roundings, in any order; zero
// terms add no error), optionally capped by a known summation depth (blocked sums).
class sum_gamma {
 public:
  explicit sum_gamma(const reference_options& options) : cap_(options.cumsum_depth) {}
  double operator()(int64_t terms) const {
    const double depth = static_cast<double>(cap_ > 0 ? std::min(terms, cap_) : terms);
    const double nu = depth * kUnitRoundoff;
    return nu < 1 ? nu / (1 - nu) : std::numeric_limits<double>::infinity();
  }

 private:
  int64_t cap_;
};

// Positions [0, positive) of the policy order (zero-probability tokens, always last,
// are never kept) with the interval a float32 kernel may compute for each.
struct sorted_row {
  std::vector<double> p, lo, hi, err;  // source, its float interval, relative error e
  std::vector<double> prefix;          // prefix[r] = mass of positions < r (compensated)
  std::vector<uint32_t> group_start;   // first position of r's exact-tie group
  int64_t positive = 0;
  int64_t group_end(int64_t r) const {
    int64_t end = r + 1;
    while (end < positive && group_start[end] == group_start[r]) ++end;
    return end;
  }
};

sorted_row sort_row(const source_row& row, const policy_order& order) {
  sorted_row s;
  // Zero-probability tokens (-Inf logits, zero probs, exp underflow) form the tail.
  s.positive =
      std::partition_point(order.value_key.begin(), order.value_key.end(),
                           [&](uint32_t key) { return row.source_of(key_value(key)) > 0; }) -
      order.value_key.begin();
  const int64_t m = s.positive;
  s.p.resize(m), s.lo.resize(m), s.hi.resize(m), s.err.resize(m), s.prefix.resize(m + 1),
      s.group_start.resize(m);
  compensated_sum mass;
  for (int64_t r = 0; r < m; ++r) {
    // From the sorted key, not row.source[ids[r]]: source_of reproduces it bit for
    // bit, and a gather in random order was half the run time at V = 151,936.
    const float value = key_value(order.value_key[r]);
    s.p[r] = row.source_of(value);
    // e must not shrink down the order (it grows with the distance from the max), and
    // lo/hi must not grow: the two-pointer scans below rely on both.
    s.err[r] = std::max(r ? s.err[r - 1] : 0.0, row.relative_error(value));
    s.hi[r] = s.p[r] * (1 + s.err[r]);
    s.lo[r] = std::max(0.0, s.p[r] * (1 - s.err[r]));
    if (r) s.hi[r] = std::min(s.hi[r], s.hi[r - 1]), s.lo[r] = std::min(s.lo[r], s.lo[r - 1]);
    s.prefix[r] = mass.value();
    mass.add(s.p[r]);
    const bool tied = r && order.value_key[r] == order.value_key[r - 1];
    s.group_start[r] = tied ? s.group_start[r - 1] : static_cast<uint32_t>(r);
  }
  s.prefix[m] = mass.value();
  return s;
}

// What precedes position r: nominally, at least (must), at most (could).
struct precedence {
  int64_t nominal_count, must_count, could_count;
  int64_t strictly_above;  // tokens certainly above r's value: never decreases down the order
  double nominal_mass, must_mass, could_mass;
  double err;  // largest relative error among the tokens that can precede r, and r
};

// Positions must be visited in increasing order: both pointers only move forward
// because lo and hi do not grow down the order.
class precedence_scan {
 public:
  precedence_scan(const sorted_row& s, tie_policy ties) : s_(s), ties_(ties) {}
  precedence at(int64_t r) {
    const int64_t start = s_.group_start[r];
    if (start != group_start_) group_start_ = start, group_end_ = s_.group_end(r);
    const int64_t end = group_end_;
    const int64_t offset = ties_ == tie_policy::lowest_index ? r - start : 0;
    const double tie_mass = static_cast<double>(offset) * s_.p[r];
    could_ = std::max(could_, end);
    while (could_ < s_.positive && s_.hi[could_] > s_.lo[r]) ++could_;
    while (must_ < start && s_.lo[must_] > s_.hi[r]) ++must_;
    const double below_could = s_.prefix[could_] - s_.prefix[end];
    return precedence{start + offset,
                      must_ + offset,
                      start + (could_ - end) + offset,
                      must_,
                      s_.prefix[start] + tie_mass,
                      s_.prefix[must_] + tie_mass,
                      s_.prefix[start] + below_could + tie_mass,
                      s_.err[std::max(r, could_ - 1)]};
  }

 private:
  const sorted_row& s_;
  tie_policy ties_;
  int64_t could_ = 0, must_ = 0, group_start_ = -1, group_end_ = 0;
};

decision decide(bool certainly_kept, bool certainly_dropped) {
  return certainly_kept ? decision::keep : certainly_dropped ? decision::drop : decision::undecided;
}

filtered_distribution empty_distribution(const source_row& row) {
  const size_t n = row.source.size();
  filtered_distribution d;
  d.vocab_size = static_cast<int64_t>(n);
  d.source = row.source;
  d.status.assign(n, membership::out);
  d.prob.assign(n, 0.0), d.prob_min.assign(n, 0.0), d.prob_max.assign(n, 0.0);
  return d;
}

// Target probabilities over positions [0, reach) of the order (beyond it all is OUT):
// nominal over the exact rule's set, ranges over the resolutions of BOUNDARY tokens.
void fill_targets(filtered_distribution& d, const std::vector<uint32_t>& ids,
                  const std::vector<uint8_t>& nominal_kept) {
  compensated_sum in_mass, boundary_mass, nominal_mass;
  for (size_t r = 0; r < nominal_kept.size(); ++r) {
    const uint32_t i = ids[r];
    if (d.status[i] == membership::in) in_mass.add(d.source[i]), ++d.num_in;
    if (d.status[i] == membership::boundary) boundary_mass.add(d.source[i]), ++d.num_boundary;
    if (nominal_kept[r]) nominal_mass.add(d.source[i]);
  }
  const double in = in_mass.value(), boundary = boundary_mass.value(),
               nominal = nominal_mass.value();
  d.in_source_mass = in;
  d.boundary_source_mass = boundary;
  for (size_t r = 0; r < nominal_kept.size(); ++r) {
    const uint32_t i = ids[r];
    const double s = d.source[i];
    if (nominal_kept[r]) d.prob[i] = s / nominal;
    if (d.status[i] == membership::in) {
      d.prob_min[i] = s / (in + boundary);
      d.prob_max[i] = s / in;
    } else if (d.status[i] == membership::boundary) {
      // With nothing IN, some boundary token is kept: a lone one keeps everything.
      d.prob_min[i] = d.num_in == 0 && d.num_boundary == 1 ? 1.0 : 0.0;
      d.prob_max[i] = s / (in + s);
    }
  }
  d.boundary_target_mass_min = d.num_in == 0 ? 1.0 : 0.0;
  d.boundary_target_mass_max = d.num_in == 0 ? 1.0 : boundary / (in + boundary);
}

filtered_distribution greedy_distribution(const source_row& row, const policy_order& order,
                                          tie_policy ties) {
  filtered_distribution d = empty_distribution(row);
  // The order holds exactly the argmax set (the selection cut is the max).
  const auto winners =
      ties == tie_policy::lowest_index ? int64_t{1} : static_cast<int64_t>(order.ids.size());
  for (int64_t r = 0; r < winners; ++r) d.status[order.ids[r]] = membership::in;
  fill_targets(d, order.ids, std::vector<uint8_t>(static_cast<size_t>(winners), 1));
  return d;
}

// min-p's threshold as a float32 kernel may compute it: [low, high].
std::pair<double, double> min_p_threshold(const source_row& row, double min_p) {
  const double p_max = row.source_of(row.value_max), e_max = row.relative_error(row.value_max);
  return {min_p * p_max * (1 - e_max) * (1 - 2 * kUnitRoundoff),
          min_p * p_max * (1 + e_max) * (1 + 2 * kUnitRoundoff)};
}

// Tokens that top-k or min-p certainly drop never reach the sort. `drop_below`: a token
// whose float value is at most hi < drop_below is certainly OUT (the k tokens of the
// k largest values all have lo >= lo(k-th value) > hi; or hi < min-p's lowest
// threshold). Returns the value cut: the survivors and every token their scans can
// meet (hi above the lowest survivor's lo), a prefix of the policy order.
float selection_cut(const source_row& row, const filter_params& params, bool top_k_on, bool scaled,
                    double& drop_below) {
  drop_below = 0;
  if (row.greedy) return row.value_max;
  if (top_k_on) {
    std::vector<float> copy = row.values;
    const auto kth = copy.begin() + (params.top_k - 1);
    std::nth_element(copy.begin(), kth, copy.end(), std::greater<float>());
    drop_below = row.low_of(*kth);
  }
  // top_k_first needs the whole top-k mass (top-p's denominator), min-p or not.
  if (params.min_p > 0 && !scaled)
    drop_below = std::max(drop_below, min_p_threshold(row, params.min_p).first);
  if (!(drop_below > 0)) return -std::numeric_limits<float>::infinity();
  double lowest_survivor = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < row.values.size(); ++i) {
    if (row.high(i) >= drop_below) lowest_survivor = std::min(lowest_survivor, row.low(i));
  }
  const double reach = std::min(drop_below, lowest_survivor);
  float cut = row.value_max;
  for (size_t i = 0; i < row.values.size(); ++i) {
    if (row.source[i] > 0 && row.high(i) >= reach) cut = std::min(cut, row.values[i]);
  }
  return cut;
}

// Which rules are on for this row.
struct active_rules {
  bool top_k, top_p, min_p;
  bool scaled;  // top-k first: top-p's denominator is the top-k mass
  int64_t k;
};

active_rules active_rules_of(const filter_params& params, int64_t n) {
  active_rules on{};
  on.top_k = params.top_k > 0 && params.top_k < n;
  on.top_p = params.top_p < 1;
  on.min_p = params.min_p > 0;
  on.scaled = params.order == filter_order::top_k_first && on.top_k;
  on.k = params.top_k;
  return on;
}

// Top-k first: its kept mass is top-p's denominator D, an interval over the top-k
// boundary.
struct top_k_mass {
  double nominal = 0, low = 0, high = 0;
  int64_t high_terms = 0;  // terms of the largest D (keep_ties may keep more than k)
};

// Once k tokens are certainly above a value, nothing further down can return
// (must_count itself is not monotone: under lowest_index a tie group's later members
// are out while a close value below the group may still rise above it).
top_k_mass top_k_denominator(const sorted_row& s, tie_policy ties, int64_t k) {
  compensated_sum d_nominal, d_low, d_high;
  top_k_mass d;
  precedence_scan scan(s, ties);
  for (int64_t r = 0; r < s.positive; ++r) {
    const precedence b = scan.at(r);
    if (b.strictly_above >= k) break;
    if (b.nominal_count < k) d_nominal.add(s.p[r]);
    if (b.could_count < k) d_low.add(s.p[r]);
    if (b.must_count < k) d_high.add(s.p[r]), ++d.high_terms;
  }
  d.nominal = d_nominal.value(), d.low = d_low.value(), d.high = d_high.value();
  return d;
}

// The thresholds the rules compare against, widened by a float32 kernel's rounding.
struct rule_bounds {
  double g_common;     // relative error common to every prefix mass
  double denominator;  // top-p's nominal denominator
  double top_p_low, top_p_high, min_p_low, min_p_high;
};

rule_bounds bounds_of(const source_row& row, const filter_params& params, const sorted_row& s,
                      const sum_gamma& gamma, const active_rules& on, double normaliser_error) {
  const top_k_mass d = on.scaled ? top_k_denominator(s, params.ties, on.k) : top_k_mass{};
  // The common factor c (the kernel's normaliser, or an undivided strict row) cancels
  // in top_k_first's ratio M / D; in joint it moves every prefix against top_p.
  const double g_denominator = gamma(d.high_terms) + s.err[s.positive - 1];
  rule_bounds bounds{};
  bounds.g_common = on.scaled ? 0.0 : normaliser_error;
  bounds.denominator = on.scaled ? d.nominal : 1.0;
  bounds.top_p_low =
      params.top_p * (on.scaled ? d.low * (1 - g_denominator) : 1.0) * (1 - 2 * kUnitRoundoff);
  bounds.top_p_high =
      params.top_p * (on.scaled ? d.high * (1 + g_denominator) : 1.0) * (1 + 2 * kUnitRoundoff);
  std::tie(bounds.min_p_low, bounds.min_p_high) = min_p_threshold(row, params.min_p);
  return bounds;
}

// Position r's membership under every active rule; `nominal` says whether the exact
// rule keeps it.
membership classify(const sorted_row& s, int64_t r, const precedence& b, const active_rules& on,
                    const rule_bounds& bounds, const sum_gamma& gamma, const filter_params& params,
                    bool& nominal) {
  decision rules[3] = {decision::keep, decision::keep, decision::keep};
  nominal = true;
  if (on.top_k) {
    rules[0] = decide(b.could_count < on.k, b.must_count >= on.k);
    nominal = b.nominal_count < on.k;
  }
  if (on.top_p) {
    const double g = bounds.g_common + gamma(b.could_count + 1) + b.err;
    rules[1] = decide(b.could_mass * (1 + g) < bounds.top_p_low,
                      b.must_mass * (1 - g) >= bounds.top_p_high);
    nominal = nominal && b.nominal_mass < params.top_p * bounds.denominator;
  }
  if (on.min_p && s.group_start[r] != 0) {
    rules[2] = decide(s.lo[r] >= bounds.min_p_high, false);
    nominal = nominal && s.p[r] >= params.min_p * s.p[0];
  }
  const bool dropped = std::find(rules, rules + 3, decision::drop) != rules + 3;
  const bool open = std::find(rules, rules + 3, decision::undecided) != rules + 3;
  return dropped ? membership::out : open ? membership::boundary : membership::in;
}

filtered_distribution filter(const source_row& row, const filter_params& params,
                             const reference_options& options) {
  const active_rules on = active_rules_of(params, static_cast<int64_t>(row.values.size()));
  double drop_below = 0;
  const policy_order order =
      sort_policy_order(row.values, selection_cut(row, params, on.top_k, on.scaled, drop_below));
  if (row.greedy) return greedy_distribution(row, order, params.ties);
  const sorted_row s = sort_row(row, order);
  const sum_gamma gamma(options);
  const auto positive_tokens =
      std::count_if(row.source.begin(), row.source.end(), [](double p) { return p > 0; });
  const double normaliser_error = gamma(positive_tokens) + row.common_error;
  const rule_bounds bounds = bounds_of(row, params, s, gamma, on, normaliser_error);

  filtered_distribution d = empty_distribution(row);
  d.normaliser_error = normaliser_error;
  std::vector<uint8_t> nominal_kept;
  precedence_scan scan(s, params.ties);
  for (int64_t r = 0; r < s.positive; ++r) {
    const precedence b = scan.at(r);
    // Past k certain tokens above (top-k), below min-p's threshold, or below the
    // selection's: nothing further down can be kept, and all of it stays OUT.
    if (on.top_k && b.strictly_above >= on.k) break;
    // The selection's certain drop (p (1 + running max of e) is at least the raw hi).
    if (s.p[r] * (1 + s.err[r]) < drop_below) break;
    if (on.min_p && s.group_start[r] != 0 && s.hi[r] < bounds.min_p_low) break;
    bool nominal = true;
    const membership m = classify(s, r, b, on, bounds, gamma, params, nominal);
    d.status[order.ids[r]] = m;
    // Rounding in the nominal test cannot contradict a certain decision.
    nominal_kept.push_back(m == membership::in || (m == membership::boundary && nominal));
  }
  fill_targets(d, order.ids, nominal_kept);
  return d;
}

}  // namespace

reference_result compute_filtered_distribution(const row_input& row, const filter_params& params,
                                               const reference_options& options) {
  auto decoded = decode_source(row, params, options);
  if (auto* error = std::get_if<row_error>(&decoded)) return reference_result(std::move(*error));
  return reference_result(filter(std::get<source_row>(decoded), params, options));
}

reference_result compute_filtered_distribution(std::span<const float> values, input_kind kind,
                                               const filter_params& params,
                                               const reference_options& options) {
  const row_input row{values.data(), storage_type::f32, static_cast<int64_t>(values.size()), kind};
  return compute_filtered_distribution(row, params, options);
}

const char* to_string(membership m) {
  switch (m) {
    case membership::in:
      return "IN";
    case membership::out:
      return "OUT";
    default:
      return "BOUNDARY";
  }
}

}  // namespace samplecheck
