// The matmul checks of the battery: every comparison bitwise (memcmp of bf16 bits),
// through the testbeds of suites/matmul, on the selected shapes and batch sizes.
//
// Default batch sizes: every M = 1..4096 on a device; on the host (CI) the fixture's
// "cpu" list (every tile edge and split threshold of the in-tree launch table), the
// subject's own declared thresholds and their neighbours, and every power of two 2..4096
// with its neighbours (undeclared thresholds: B07).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>

#include "kernels/registry/registry.h"
#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
#include "suites/matmul/matmul_testbed.h"

namespace samplecheck::checks {
namespace {

using matmul_suite::check_result;
using matmul_suite::kHostColumns;
using matmul_suite::matmul_shape;
using matmul_suite::matmul_testbed;

constexpr int64_t kLargestM = 4096;

bool on_host(const battery::check_context& ctx) {
  return ctx.subj.memory_space() == SC_MEMORY_HOST;
}

const matmul_suite::matmul_fixture& fixture(const battery::check_context& ctx) {
  static const std::string path = ctx.matmul.fixture_path.empty()
                                      ? battery::default_matmul_fixture_path()
                                      : ctx.matmul.fixture_path;
  static const matmul_suite::matmul_fixture f = matmul_suite::read_matmul_fixture(path);
  return f;
}

bool is_short_or_odd(const matmul_shape& s) { return s.tag == "short_k" || s.k % 8 != 0; }

// The shapes a check runs on: --shape when given, else the fixture's shapes of one
// family (short / odd K apart, for short_odd_k).
std::vector<matmul_shape> shapes_for(const battery::check_context& ctx, bool short_or_odd) {
  if (!ctx.matmul.shapes.empty()) return ctx.matmul.shapes;
  std::vector<matmul_shape> out;
  for (const auto& s : fixture(ctx).shapes)
    if (is_short_or_odd(s) == short_or_odd) out.push_back(s);
  if (short_or_odd)
    for (const int64_t k : {1, 3, 7, 31, 33})
      out.push_back({fmt::format("tiny_k{}", k), 4096, k, "tiny_k"});
  return out;
}

std::vector<int64_t> with_thresholds(const battery::check_context& ctx,
                                     std::vector<int64_t> sizes) {
  for (const int64_t t : registry::batch_thresholds(*ctx.subj.matmul))
    for (const int64_t m : {t - 1, t, t + 1})
      if (m >= 1 && m <= kLargestM) sizes.push_back(m);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// The batch sizes of batch_invariance: --m, every M on a device, the CPU subset on the host.
std::vector<int64_t> invariance_sizes(const battery::check_context& ctx) {
  if (!ctx.matmul.batch_sizes.empty()) return ctx.matmul.batch_sizes;
  std::vector<int64_t> sizes;
  if (!on_host(ctx)) {
    for (int64_t m = 1; m <= kLargestM; ++m) sizes.push_back(m);
    return sizes;
  }
  sizes = fixture(ctx).sizes("cpu");
  // Every power of two and its neighbours, declared or not: a kernel that switches its
  // tile at a threshold it does not declare (B07) switches at one of these in practice.
  for (int64_t p = 2; p <= kLargestM; p *= 2)
    for (const int64_t m : {p - 1, p, p + 1})
      if (m <= kLargestM) sizes.push_back(m);
  return with_thresholds(ctx, sizes);
}

// The sizes of the checks that compare several launches of one batch (configurations,
// short / odd K): --m, else the fixture's "configs" list and the thresholds.
std::vector<int64_t> config_sizes(const battery::check_context& ctx) {
  if (!ctx.matmul.batch_sizes.empty()) return ctx.matmul.batch_sizes;
  return with_thresholds(ctx, fixture(ctx).sizes("configs"));
}

int64_t columns_for(const battery::check_context& ctx, const matmul_shape& s) {
  if (ctx.matmul.columns > 0) return std::min(ctx.matmul.columns, s.n);
  return on_host(ctx) ? std::min(kHostColumns, s.n) : s.n;
}

// Runs `body` on one testbed per (shape, bias) and folds the results into an outcome:
// the first failure's summary and evidence, and how many cases failed.
template <class Body>
battery::check_outcome over_testbeds(const battery::check_context& ctx,
                                     const std::vector<matmul_shape>& shapes,
                                     const std::vector<bool>& biases, int64_t max_m, Body body) {
  battery::check_outcome out;
  auto runner = battery::make_matmul_runner(ctx.subj);
  const uint64_t seed = ctx.check_seed;
  int64_t cases = 0, failed = 0, trials = 0;
  for (const auto& shape : shapes)
    for (const bool bias : biases) {
      check_result r;
      try {
        matmul_testbed bed(*runner, {shape, columns_for(ctx, shape), bias, seed, max_m});
        r = body(bed);
      } catch (const std::exception& e) {
        r.check = std::string(ctx.check);
        r.failures = 1;
        r.summary = fmt::format("{} {} ({}): the subject failed: {}", ctx.subj.name(), shape.name,
                                bias ? "bias" : "no bias", e.what());
        r.evidence = {{"shape", shape.name}, {"n", shape.n}, {"k", shape.k}, {"bias", bias}};
      }
      ++cases;
      trials += r.trials;
      if (r.failures == 0 && r.trials > 0) continue;
      if (++failed == 1) {
        out.detail = r.summary;
        out.repro = r.evidence;
      }
    }
  out.samples = static_cast<uint64_t>(trials);
  out.exact_failure = failed > 0;
  out.power = "exact (bitwise)";
  if (failed > 1) out.detail += fmt::format(" (and {} more of {} cases)", failed - 1, cases);
  if (failed == 0)
    out.detail =
        fmt::format("{} cases ({} shapes, with and without bias as listed), {} comparisons", cases,
                    shapes.size(), trials);
  return out;
}

int64_t largest(const std::vector<int64_t>& sizes) {
  return *std::max_element(sizes.begin(), sizes.end());
}

// The batch sizes run_to_run repeats: the smallest, M = 64 and the largest up to 1024
// (split launches, where partials can race; 1024 is the largest). A race flips a bf16
// output about once in 10^4 outputs, so on the host the repeats compare 256 columns.
constexpr int64_t kRaceColumns = 256;

std::vector<int64_t> repeat_sizes(const battery::check_context& ctx,
                                  const std::vector<int64_t>& sizes) {
  const int64_t lo = sizes.front(), hi = std::max(lo, std::min<int64_t>(largest(sizes), 1024));
  std::vector<int64_t> ms{lo, std::clamp<int64_t>(64, lo, hi), hi};
  ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
  return ms;
}

// A matmul check's plan: one testbed per (shape, bias), each comparing per_bed times at
// most (batch sizes, configurations or repeats: check_result::trials).
struct testbed_plan {
  std::vector<matmul_shape> shapes;
  std::vector<bool> biases;
  std::vector<int64_t> sizes;
  uint64_t per_bed = 0;
  uint64_t samples() const { return shapes.size() * biases.size() * per_bed; }
};

uint64_t configs(const battery::check_context& ctx) {
  return static_cast<uint64_t>(std::max(ctx.subj.matmul->num_launch_configs, 0));
}

testbed_plan plan_batch_invariance(const battery::check_context& ctx) {
  const auto sizes = invariance_sizes(ctx);
  return {shapes_for(ctx, false), {false, true}, sizes, sizes.size()};
}

constexpr int kHostRepeats = 8, kDeviceRepeats = 30;  // arrival-order races need repeats to show

// Every repeat after the first is compared with it, at each M until one differs.
testbed_plan plan_run_to_run(const battery::check_context& ctx) {
  const auto ms = repeat_sizes(ctx, config_sizes(ctx));
  const int repeats = on_host(ctx) ? kHostRepeats : kDeviceRepeats;
  return {shapes_for(ctx, false), {false}, ms, ms.size() * static_cast<uint64_t>(repeats - 1)};
}

testbed_plan plan_launch_configs(const battery::check_context& ctx) {
  const auto sizes = config_sizes(ctx);
  // Every shape, short K included: split and unsplit launches part most easily there.
  std::vector<matmul_shape> shapes = shapes_for(ctx, false);
  if (ctx.matmul.shapes.empty())
    for (const auto& s : shapes_for(ctx, true)) shapes.push_back(s);
  return {shapes, {true}, sizes, sizes.size() * configs(ctx)};
}

constexpr int64_t kAccuracyM = 33;
testbed_plan plan_one_launch(const battery::check_context& ctx) {
  return {shapes_for(ctx, false), {false, true}, {kAccuracyM}, 1};
}

// Batch invariance over the sizes, then accuracy and the configurations at the first.
testbed_plan plan_short_odd_k(const battery::check_context& ctx) {
  const auto sizes = config_sizes(ctx);
  return {shapes_for(ctx, true), {false, true}, sizes, sizes.size() + 1 + configs(ctx)};
}

}  // namespace

uint64_t planned_matmul_batch_invariance(const battery::check_context& ctx) {
  return plan_batch_invariance(ctx).samples();
}
uint64_t planned_matmul_run_to_run(const battery::check_context& ctx) {
  return plan_run_to_run(ctx).samples();
}
uint64_t planned_matmul_launch_configs(const battery::check_context& ctx) {
  return plan_launch_configs(ctx).samples();
}
uint64_t planned_matmul_one_launch(const battery::check_context& ctx) {
  return plan_one_launch(ctx).samples();
}
uint64_t planned_matmul_short_odd_k(const battery::check_context& ctx) {
  return plan_short_odd_k(ctx).samples();
}

battery::check_outcome run_matmul_batch_invariance(const battery::check_context& ctx) {
  const testbed_plan plan = plan_batch_invariance(ctx);
  const auto& sizes = plan.sizes;
  // Every row is compared (each computed alone once) when the rows fit 2^16 in all: a
  // bf16 output hides most order changes, so probes alone can miss a defect. The
  // device's default sweep (8.4 M rows over M = 1..4096) compares the probes.
  int64_t rows = 0;
  for (const int64_t m : sizes) rows += m;
  const bool every_row = on_host(ctx) || rows <= (int64_t{1} << 16);
  auto out = over_testbeds(ctx, plan.shapes, plan.biases, largest(sizes), [&](matmul_testbed& bed) {
    return bed.batch_invariance(sizes, -1, every_row);
  });
  out.power = fmt::format("exact (bitwise, {} batch sizes {}-{})", sizes.size(), sizes.front(),
                          sizes.back());
  out.repro["batch_sizes"] = sizes;
  return out;
}

battery::check_outcome run_matmul_run_to_run(const battery::check_context& ctx) {
  const testbed_plan plan = plan_run_to_run(ctx);
  const auto& ms = plan.sizes;
  const int repeats = on_host(ctx) ? kHostRepeats : kDeviceRepeats;
  battery::matmul_selection selection = ctx.matmul;
  if (on_host(ctx) && selection.columns == 0) selection.columns = kRaceColumns;
  const battery::check_context race_ctx{ctx.subj,   ctx.budget, ctx.seed,  ctx.alpha_share,
                                        ctx.lookup, selection,  ctx.check, ctx.check_seed};
  auto out = over_testbeds(race_ctx, plan.shapes, plan.biases, ms.back(), [&](matmul_testbed& bed) {
    check_result r;
    int64_t trials = 0;  // every M's repeats count (the plan's sum)
    for (const int64_t m : ms) {
      trials += (r = bed.run_to_run(m, repeats)).trials;
      if (!r.passed) break;
    }
    r.trials = trials;
    return r;
  });
  out.power = fmt::format("exact (bitwise, {} repeats at M = {})", repeats, fmt::join(ms, ", "));
  return out;
}

std::string launch_configs_not_applicable(const battery::subject& s,
                                          const battery::subject_lookup&) {
  return s.matmul->num_launch_configs > 0 ? ""
                                          : "the subject declares a single launch configuration";
}

battery::check_outcome run_matmul_launch_configs(const battery::check_context& ctx) {
  const testbed_plan plan = plan_launch_configs(ctx);
  const auto& sizes = plan.sizes;
  auto out = over_testbeds(ctx, plan.shapes, plan.biases, largest(sizes), [&](matmul_testbed& bed) {
    return bed.launch_config_independence(sizes);
  });
  out.power = fmt::format("exact (bitwise, {} configs x {} sizes)",
                          ctx.subj.matmul->num_launch_configs, sizes.size());
  return out;
}

namespace {

// accuracy and all_ones: one launch at M = kAccuracyM on every testbed, judged by `judge`.
battery::check_outcome run_one_launch(const battery::check_context& ctx,
                                      check_result (matmul_testbed::*judge)(int64_t),
                                      std::string power) {
  const testbed_plan plan = plan_one_launch(ctx);
  auto out = over_testbeds(ctx, plan.shapes, plan.biases, kAccuracyM,
                           [&](matmul_testbed& bed) { return (bed.*judge)(kAccuracyM); });
  out.power = std::move(power);
  return out;
}

}  // namespace

battery::check_outcome run_matmul_accuracy(const battery::check_context& ctx) {
  return run_one_launch(ctx, &matmul_testbed::accuracy, "relative Frobenius error < 1% vs fp64");
}

battery::check_outcome run_matmul_all_ones(const battery::check_context& ctx) {
  return run_one_launch(ctx, &matmul_testbed::all_ones, "exact (every output bf16(K + bias))");
}

// Short and odd K: tile and vector-load edges (K <= 512, K not a multiple of 8, K < 8).
battery::check_outcome run_matmul_short_odd_k(const battery::check_context& ctx) {
  const testbed_plan plan = plan_short_odd_k(ctx);
  const auto& sizes = plan.sizes;
  const auto& shapes = plan.shapes;
  auto out = over_testbeds(ctx, shapes, plan.biases, largest(sizes), [&](matmul_testbed& bed) {
    // Each part's comparisons count (the plan's sum of the three).
    check_result r = bed.batch_invariance(sizes, -1, on_host(ctx));
    int64_t trials = r.trials;
    if (r.passed) trials += (r = bed.accuracy(sizes.front())).trials;
    if (r.passed && configs(ctx) > 0)
      trials += (r = bed.launch_config_independence({sizes.front()})).trials;
    r.trials = trials;
    return r;
  });
  out.power =
      fmt::format("exact (bitwise, {} shapes x {} sizes) + accuracy", shapes.size(), sizes.size());
  return out;
}

}  // namespace samplecheck::checks
