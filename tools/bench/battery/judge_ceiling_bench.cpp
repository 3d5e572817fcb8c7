// The judge's own speed: the whole battery against a null subject, one that answers
// each call at once with tokens drawn from the reference distribution itself (computed
// once per input row and parameters, then inverse CDF on the caller's Philox stream).
// The judge's samples per second (samples / judge_seconds, both from the battery's
// report) is the ceiling of any qualification: no subject, however fast, is judged
// faster. Prints one line per check and the total. --process serves the same subject from
// a forked subject process, as samplecheck qualifies every in-tree subject: the judge's
// side of the protocol (writing each call into the shared region, comparing it after the
// reply, reading the tokens) then counts too, the ceiling of a GPU subject's qualification.
//
// --rows-ahead on builds each check's rows while the check before it runs (a host subject's
// default is off: suites/battery/rows_ahead.h).
//
//   judge_ceiling_bench [--budget standard] [--seed N] [--checks a,b] [--dtype f32] [--process]
//                       [--rows-ahead auto|on|off]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/sampler_core.h"
#include "reference/filtered_distribution.h"
#include "reference/uniform.h"
#include "suites/battery/process_memory.h"
#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/checks.h"

namespace sb = samplecheck::battery;
namespace cpu = samplecheck::cpu;

namespace {

// Draws from the exact target distribution of the reference (joint order, ties kept:
// cpu.dual_pivot's declaration). The distribution of a row is kept across calls: the
// battery sends the same rows many times, and the subject should cost next to nothing.
class reference_draws final : public cpu::row_sampler {
 public:
  bool prepare(std::vector<float>& row, const cpu::row_params& p) override {
    using key_type = std::tuple<std::vector<float>, int64_t, float, float>;
    static std::map<key_type, std::vector<double>> cache;
    key_type key{row, p.top_k, p.top_p, p.min_p};
    auto it = cache.find(key);
    if (it == cache.end()) {
      if (cache.size() > 512) cache.clear();
      samplecheck::filter_params f;
      f.top_k = p.top_k;
      f.top_p = p.top_p;
      f.min_p = p.min_p;
      f.order = samplecheck::filter_order::joint;
      f.ties = samplecheck::tie_policy::keep_ties;
      samplecheck::reference_options o;
      o.normalisation = samplecheck::probs_normalisation::renormalise;
      const auto r =
          samplecheck::compute_filtered_distribution(row, samplecheck::input_kind::probs, f, o);
      std::vector<double> cdf;
      if (r.ok()) {
        double sum = 0;
        for (const double q : r.distribution().prob) cdf.push_back(sum += q);
      }
      it = cache.emplace(std::move(key), std::move(cdf)).first;
    }
    cdf_ = &it->second;
    return !cdf_->empty() && cdf_->back() > 0;
  }
  cpu::draw_result draw(samplecheck::philox_stream& stream) override {
    const uint32_t hi = stream.next(), lo = stream.next();
    const double u = samplecheck::uniform_double(hi, lo) * cdf_->back();
    auto hit = std::upper_bound(cdf_->begin(), cdf_->end(), u);
    if (hit == cdf_->end()) --hit;
    while (hit != cdf_->begin() && *hit == *(hit - 1)) --hit;  // never a zero-mass token
    return {static_cast<int32_t>(hit - cdf_->begin()), true};
  }

 private:
  const std::vector<double>* cdf_ = nullptr;
};

std::unique_ptr<cpu::row_sampler> make_reference_draws(samplecheck::defect) {
  return std::make_unique<reference_draws>();
}

constexpr uint32_t kFilters = SC_FILTER_TOP_K | SC_FILTER_TOP_P | SC_FILTER_MIN_P;
const cpu::subject_context kContext{
    {"bench.reference_draws", SC_INPUT_PROBS, kFilters, SC_ORDER_JOINT, SC_TIE_KEEP_TIES, 2, 0},
    samplecheck::defect::none,
    make_reference_draws};

sc_status sample(void*, const sc_sample_batch* b, char* error, size_t size) {
  return cpu::run_batch(kContext, b, error, size);
}

sc_sampler descriptor() {
  sc_sampler s{};
  s.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  s.name = kContext.spec.name;
  s.description = "tokens drawn from the reference distribution (the judge's ceiling)";
  s.memory_space = SC_MEMORY_HOST;
  s.input_kind = SC_INPUT_PROBS;
  s.input_dtypes =
      SC_DTYPE_BIT(SC_DTYPE_F32) | SC_DTYPE_BIT(SC_DTYPE_BF16) | SC_DTYPE_BIT(SC_DTYPE_F16);
  s.filters = kFilters;
  s.filter_order = SC_ORDER_JOINT;
  s.tie_policy = SC_TIE_KEEP_TIES;
  s.philox_outputs_per_call = 2;
  s.sample = sample;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  samplecheck::battery::keep_freed_memory();
  CLI::App app{"the judge's ceiling: the battery against a subject that draws from the reference"};
  std::string budget_name = "standard", dtype;
  uint64_t seed = sb::kDefaultSeed;
  std::vector<std::string> checks;
  bool process = false;
  app.add_option("--budget", budget_name, "quick or standard");
  app.add_option("--seed", seed, "run seed");
  app.add_option("--checks", checks, "checks (default: all)")->delimiter(',');
  app.add_option("--dtype", dtype, "one dtype (default: f32, bf16 and f16)");
  app.add_flag("--process", process, "serve the subject from a forked subject process");
  std::string ahead = "auto";
  app.add_option("--rows-ahead", ahead, "build the next check's rows while one runs")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  CLI11_PARSE(app, argc, argv);
  const auto budget = sb::budget_by_name(budget_name);
  if (!budget) {
    std::fprintf(stderr, "judge_ceiling_bench: --budget %s: quick or standard\n",
                 budget_name.c_str());
    return 2;
  }
  const sc_sampler d = descriptor();
  sb::subject s;
  s.sampler = &d;
  if (process) s = sb::hosted(d);
  sb::subject_roster catalog;
  catalog.add_in_tree();
  samplecheck::checks::register_checks();
  sb::run_options o;
  o.budget = *budget;
  o.seed = seed;
  o.checks = checks;
  o.dtype = dtype;
  if (ahead != "auto") o.rows_ahead = ahead == "on";
  const sb::battery_report r = sb::run_battery(s, o, catalog.lookup());
  std::printf("%-28s %-8s %12s %10s %10s %14s\n", "check", "verdict", "samples", "subject s",
              "judge s", "judge samples/s");
  double subject = 0, judge = 0;
  for (const auto& c : r.checks) {
    if (c.result == sb::verdict::not_applicable) continue;
    subject += c.subject_seconds, judge += c.judge_seconds;
    const std::string name = c.dtype.empty() ? c.check : c.check + " [" + c.dtype + "]";
    std::printf("%-28s %-8s %12llu %10.2f %10.2f %14.0f\n", name.c_str(), sb::to_string(c.result),
                static_cast<unsigned long long>(c.samples), c.subject_seconds, c.judge_seconds,
                c.judge_seconds > 0 ? static_cast<double>(c.samples) / c.judge_seconds : 0.0);
  }
  std::printf(
      "total (%s): %llu samples, wall %.1f s, subject %.1f s, judge %.1f s: %.0f samples/s\n",
      process ? "forked subject process" : "in process", static_cast<unsigned long long>(r.samples),
      r.seconds, subject, judge, judge > 0 ? static_cast<double>(r.samples) / judge : 0.0);
  return r.passed() ? 0 : 1;
}
