// fit_rows: goodness of fit on a list of rows in group-sequential looks, shared by
// goodness_of_fit and the ties check's ties at the k-th (checks_distribution.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
#include "suites/checks/distribution_tests.h"
#include "suites/checks/report_evidence.h"
#include "suites/stats/combine.h"
#include "suites/stats/parallel_for.h"

namespace samplecheck::checks {

// Goodness of fit on one list of rows; shared by goodness_of_fit and ties.
//
// Group-sequential: row i's planned draws n_i are drawn in looks; look j holds
// min(n_i, kFirstLook * 4^j) draws of every row (the last look: all of them), on the
// same subsequences a one-shot draw would use, so the looks are fixed by the plan and
// a replay stops where the run stopped. Alpha spending: the last look is tested at
// (1 - kEarlyShare) of the check's level, each of the J - 1 earlier looks at
// kEarlyShare / (J - 1); the check's p-value is min over looks of p_j / w_j
// (Bonferroni over the looks, so its false-alarm probability stays <= its level
// whatever the looks' dependence). The last look's p / (1 - kEarlyShare) would pile
// 1% of null runs at exactly 1; above 1/2 it is mapped linearly onto [1/2, 1] instead
// (stats::weighted_share_p), so the bound holds at every level up to 1/2 and the p-values stay
// uniform. A look whose p_j / w_j is at or below the planning
// share (the smallest level Holm can compare the check with) ends the check: Holm
// rejects it whatever the others do, and the remaining draws are not spent. A correct
// subject loses 1% of its level and nothing else; a gross defect fails at the first
// look (kFirstLook draws a row).
namespace {
constexpr double kEarlyShare = 0.01;
}  // namespace

namespace {
const std::vector<judged_row>& judged_rows(const std::vector<judged_row>& rows,
                                           const route_buckets* buckets) {
  return buckets != nullptr ? buckets->rows : rows;
}
}  // namespace

// The rows judged are the buckets where given: the Sidak count is theirs, fixed before any
// draw, and each input row draws the most any of its buckets needs.
fit_plan plan_fit(const battery::check_context& ctx, const std::vector<judged_row>& rows,
                  const route_buckets* buckets) {
  fit_plan plan;
  const auto& judged = judged_rows(rows, buckets);
  if (!reference_errors(judged).empty()) return plan;  // fit_rows reports it; nothing is drawn
  for (const auto& r : judged) plan.testable += gof_testable(r) ? 1 : 0;
  const uint64_t tested = std::max<size_t>(plan.testable, 1);
  const auto support_draws =
      static_cast<uint64_t>(std::ceil(std::log(100.0) / ctx.budget.support_rate));
  // The plan before the looks: the last look's level decides the draws.
  const double level_first = ctx.alpha_share * (1.0 - kEarlyShare);
  plan.draws.assign(rows.size(), support_draws);
  for (size_t b = 0; b < judged.size(); ++b) {
    if (!gof_testable(judged[b])) continue;
    const auto row_plan =
        plan_gof_draws(judged[b], stats::sidak_level(level_first, tested), ctx.budget.gof_tvd,
                       ctx.budget.power, ctx.budget.max_draws_per_row);
    uint64_t& n = plan.draws[input_of(buckets, b)];
    n = std::max(n, row_plan.draws);
    plan.capped |= row_plan.capped;
  }
  return plan;
}

uint64_t fit_plan::samples() const { return total_draws(draws); }

namespace {

// The looks of a plan: the sizes of those before the last, and each look's share of the
// check's level.
struct look_schedule {
  std::vector<uint64_t> sizes_before_last;
  size_t looks = 1;
  double early_weight = 0.0, last_weight = 1.0;

  bool is_last(size_t look) const { return look + 1 == looks; }
  double weight(size_t look) const { return is_last(look) ? last_weight : early_weight; }
  // A row's draws once look `look` is done: all of them at the last.
  uint64_t target(size_t look, uint64_t planned) const {
    return is_last(look) ? planned : std::min(planned, sizes_before_last[look]);
  }
};

look_schedule schedule_looks(uint64_t most_draws) {
  constexpr uint64_t kFirstLook = 256;
  look_schedule s;
  for (uint64_t l = kFirstLook; l < most_draws; l *= 4) s.sizes_before_last.push_back(l);
  s.looks = s.sizes_before_last.size() + 1;
  s.early_weight = s.looks > 1 ? kEarlyShare / static_cast<double>(s.looks - 1) : 0.0;
  s.last_weight = s.looks > 1 ? 1.0 - kEarlyShare : 1.0;
  return s;
}

// One fit_rows in progress: its plan, its looks and what has been drawn so far.
struct fit_run {
  const battery::check_context& ctx;
  const std::vector<judged_row>& rows;  // the input rows, drawn
  const route_buckets* buckets;         // the rows judged where given (else `rows`)
  const std::vector<judged_row>& judged;
  uint64_t seed;
  fit_plan plan;
  uint64_t tested = 1;  // the testable rows, at least 1 (Sidak's count)
  uint64_t most = 0;    // the most draws any row plans
  look_schedule schedule{};
  std::vector<uint64_t> first{}, done{};      // each row's first subsequence and its draws so far
  drawn_counts drawn{};                       // per judged row
  std::vector<std::vector<size_t>> orders{};  // each judged row's q order, sorted once
};

fit_run start_fit(const battery::check_context& ctx, const std::vector<judged_row>& rows,
                  const route_buckets* buckets, uint64_t seed) {
  const auto& judged = judged_rows(rows, buckets);
  fit_run f{ctx, rows, buckets, judged, seed, plan_fit(ctx, rows, buckets)};
  f.tested = std::max<size_t>(f.plan.testable, 1);
  f.most = *std::max_element(f.plan.draws.begin(), f.plan.draws.end());
  f.schedule = schedule_looks(f.most);
  f.done.assign(rows.size(), 0);
  f.first = first_subsequences(f.plan.draws);
  f.drawn = empty_counts(judged);
  f.orders.resize(judged.size());
  stats::parallel_for(judged.size(), [&](size_t i) {
    if (gof_testable(judged[i]) && judged[i].target.distribution().num_in >= 2)
      f.orders[i] = in_probs_order(judged[i]);
  });
  return f;
}

// Draws every row up to its size at `look`; false (`out` failed exactly) when a call
// fails or a row drew an OUT token.
bool draw_look(fit_run& f, size_t look, battery::check_outcome& out,
               const rows_done_fn& rows_done) {
  const size_t n = f.rows.size();
  std::vector<uint64_t> from(n), more(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t target = f.schedule.target(look, f.plan.draws[i]);
    from[i] = f.first[i] + f.done[i];
    more[i] = target - f.done[i];
    f.done[i] = target;
  }
  const uint64_t before = f.drawn.samples;
  draw_more(f.ctx.subj, f.rows, from, more, f.seed, f.drawn, f.buckets, rows_done);
  out.samples += f.drawn.samples - before;
  return !report_support_failure(
      f.judged, f.drawn, f.seed,
      {{"draws_per_row", f.plan.draws},
       {"look", look + 1},
       {"looks", f.schedule.looks},
       {"draws_per_row_at_look", f.done},
       {"subsequences", "row i from the sum of the planned draws of rows < i"}},
      f.first, f.buckets, out);
}

// What one look found: its p-value (p / w), the row with the smallest row p-value and its
// detail, and the largest TVD the rows detect (the last look's only).
struct look_result {
  double p_look = 1.0;
  std::string detail;
  size_t row = 0;
  double worst_power = 0.0;
};

// Judged row i's fit at look `look`; nullopt for a row the fit does not test.
std::optional<row_fit> fit_at_look(const fit_run& f, size_t look, size_t i) {
  // Null replicates per row at the last look (stats/row_tests.h): the row's p-value is
  // exactly uniform above 1 / (B + 1).
  constexpr uint32_t kBodyReplicates = 19;
  if (!gof_testable(f.judged[i])) return std::nullopt;
  const bool last = f.schedule.is_last(look);
  const double alpha_row =
      stats::sidak_level(f.ctx.alpha_share * f.schedule.weight(look), f.tested);
  // Row i's randomisation stream 1 + i: independent rows stay independent (Sidak).
  // The body of the p-value matters at the last look only (an earlier look's p / w
  // is 1 above 1%), so only there is it calibrated by Monte Carlo.
  return fit_row(f.judged[i], f.drawn.counts[i], alpha_row, f.ctx.budget.power, f.seed, 1 + i,
                 last ? kBodyReplicates : 0, f.orders[i]);
}

// A look's row fits, begun on a worker thread as each row's draws are all counted
// (draw_more's rows_done), so the judge fits the first rows while the subject draws the
// later ones. One worker, one fit at a time (a fit's replicates spread over the cores
// themselves); finish() stops it and fits whatever it had not reached on all cores. Each
// fit lands in its own slot: the look's outcome is the one fitting after the draws gives.
class look_fits {
 public:
  look_fits(const fit_run& f, size_t look)
      : f_(f),
        look_(look),
        fits_(f.judged.size()),
        done_(f.judged.size(), 0),
        of_input_(f.rows.size()) {
    for (size_t j = 0; j < f.judged.size(); ++j) of_input_[input_of(f.buckets, j)].push_back(j);
    worker_ = std::thread([this] { work(); });
  }
  look_fits(const look_fits&) = delete;
  look_fits& operator=(const look_fits&) = delete;
  ~look_fits() { stop(); }

  rows_done_fn hook() {
    return [this](size_t from, size_t to) {
      {
        const std::lock_guard lock(mutex_);
        for (size_t i = from; i < to; ++i)
          for (const size_t j : of_input_[i]) queue_.push_back(j);
      }
      wake_.notify_one();
    };
  }

  std::vector<std::optional<row_fit>> finish() {
    stop();
    stats::parallel_for(fits_.size(), [&](size_t j) {
      if (!done_[j]) fits_[j] = fit_at_look(f_, look_, j);  // a fit that threw, thrown here
    });
    return std::move(fits_);
  }

 private:
  void work() {
    for (;;) {
      size_t j = 0;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        j = queue_.front();
        queue_.pop_front();
      }
      try {
        fits_[j] = fit_at_look(f_, look_, j);
        done_[j] = 1;
      } catch (...) {  // left to finish(), which rethrows it
      }
    }
  }

  void stop() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (worker_.joinable()) worker_.join();
  }

  const fit_run& f_;
  size_t look_;
  std::vector<std::optional<row_fit>> fits_;
  std::vector<char> done_;
  std::vector<std::vector<size_t>> of_input_;  // the judged rows of each input row
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<size_t> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

look_result judge_look(const fit_run& f, size_t look,
                       const std::vector<std::optional<row_fit>>& row_fits) {
  const bool last = f.schedule.is_last(look);
  const double weight = f.schedule.weight(look);
  look_result r;
  double p_min = 1.0;
  std::vector<row_fit> fits;
  for (size_t i = 0; i < f.judged.size(); ++i) {
    if (!row_fits[i]) continue;
    const row_fit& fit = *row_fits[i];
    if (last) r.worst_power = std::max(r.worst_power, fit.detectable_tvd);
    if (fit.p_value <= p_min) {
      p_min = fit.p_value;
      r.detail = fit.detail;
      r.row = i;
    }
    fits.push_back(fit);
  }
  // The last look's rows by one Monte Carlo over them all (exactly uniform above
  // 1 / (B + 1)); an earlier look's p / w matters only far below that, so Sidak.
  const double p_rows =
      last ? combine_last_look(fits, f.seed, 0) : stats::sidak_combine(p_min, f.tested);
  r.p_look = last ? stats::weighted_share_p(p_rows, weight) : std::min(1.0, p_rows / weight);
  return r;
}

// The check's verdict over its looks: the smallest p_look, its row, and where it stopped.
struct fit_verdict {
  double p_check = 1.0, worst_power = 0.0;
  std::string worst_detail;
  size_t worst_row = 0, stop_look = 0;
};

battery::check_outcome fit_outcome(const fit_run& f, const fit_verdict& v,
                                   battery::check_outcome out) {
  const size_t looks = f.schedule.looks;
  const auto& rows = f.judged;
  out.p_value = v.p_check;
  if (v.stop_look < looks) {
    out.power = fmt::format("stopped at look {} of {}", v.stop_look, looks);
  } else {
    out.power = fmt::format("TVD {:.3f}{}", v.worst_power, f.plan.capped ? " (draw cap)" : "");
  }
  out.detail = fmt::format(
      "{} rows ({} tested), look {} of {} ({} draws a row at most of {} planned); worst {}",
      rows.size(), f.plan.testable, std::min(v.stop_look, looks), looks,
      *std::max_element(f.done.begin(), f.done.end()), f.most, v.worst_detail);
  out.repro = repro_base(f.seed);
  out.repro.update(
      {{"row", rows[v.worst_row].label},
       {"params", setting_json(rows[v.worst_row].setting)},
       {"seed", f.seed},
       {"offset", 0},
       {"subsequences", "one per draw; row i from the sum of the planned draws of rows < i"},
       {"draws_per_row", f.plan.draws},
       {"look", std::min(v.stop_look, looks)},
       {"looks", looks},
       {"draws_per_row_at_look", f.done}});
  // Indexed by its input row, as draws_per_row and the subsequences are (a route's bucket is not).
  const size_t input = input_of(f.buckets, v.worst_row);
  out.repro["row_data"] = row_data(rows[v.worst_row], input, f.done[input]);
  // A keyed script draws the row's requests from here; a route's bucket judged some of them only.
  if (holds_whole_row(f.buckets, v.worst_row)) out.repro["first_subsequence"] = f.first[input];
  if (v.p_check <= kFitEvidenceBelow)
    out.repro["fit"] =
        fit_evidence(rows[v.worst_row], f.drawn.counts[v.worst_row],
                     stats::sidak_level(f.ctx.alpha_share * f.schedule.last_weight, f.tested));
  return out;
}

}  // namespace

battery::check_outcome fit_rows(const battery::check_context& ctx, uint64_t seed,
                                const std::vector<judged_row>& rows, const route_buckets* buckets) {
  battery::check_outcome out;
  if (auto e = reference_errors(judged_rows(rows, buckets)); !e.empty())
    return battery::harness_failure(e);
  fit_run f = start_fit(ctx, rows, buckets, seed);
  fit_verdict v;
  v.stop_look = f.schedule.looks;
  for (size_t look = 0; look < f.schedule.looks; ++look) {
    look_fits fits(f, look);
    if (!draw_look(f, look, out, fits.hook())) return out;
    const look_result r = judge_look(f, look, fits.finish());
    if (f.schedule.is_last(look)) v.worst_power = r.worst_power;
    if (r.p_look <= v.p_check) {
      v.p_check = r.p_look;
      v.worst_detail = r.detail;
      v.worst_row = r.row;
    }
    if (!f.schedule.is_last(look) && r.p_look <= ctx.alpha_share) {
      v.stop_look = look + 1;
      break;
    }
  }
  return fit_outcome(f, v, std::move(out));
}

}  // namespace samplecheck::checks
