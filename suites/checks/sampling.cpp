#include "suites/checks/sampling.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <exception>
#include <future>
#include <map>

#include "suites/checks/row_cache.h"
#include "suites/stats/parallel_for.h"

namespace samplecheck::checks {

filter_params reference_params(const battery::subject& s, const fixtures::filter_setting& f) {
  filter_params p;
  const auto* d = s.sampler;
  if (d->filters & SC_FILTER_TOP_K) p.top_k = f.top_k;
  if (d->filters & SC_FILTER_TOP_P) p.top_p = f.top_p;
  if (d->filters & SC_FILTER_MIN_P) p.min_p = f.min_p;
  if (s.is_logits() && (d->filters & SC_FILTER_TEMPERATURE)) p.temperature = f.temperature;
  p.order = d->filter_order == SC_ORDER_JOINT ? filter_order::joint : filter_order::top_k_first;
  p.ties = d->tie_policy == SC_TIE_LOWEST_INDEX ? tie_policy::lowest_index : tie_policy::keep_ties;
  return p;
}

reference_result reference_for(const battery::subject& s, const std::vector<float>& values,
                               const fixtures::filter_setting& setting, bool renormalise) {
  reference_options options;
  // A row rounded to bf16 / fp16 no longer sums to 1 within the strict tolerance;
  // a sampler must divide out whatever the row sums to, as the reference then does.
  if (renormalise || s.input_dtype != SC_DTYPE_F32)
    options.normalisation = probs_normalisation::renormalise;
  return compute_filtered_distribution(std::span<const float>(values),
                                       s.is_logits() ? input_kind::logits : input_kind::probs,
                                       reference_params(s, setting), options);
}

namespace {
judged_row fixture_row(const battery::subject& s, fixtures::shape shape,
                       const fixtures::shape_options& options,
                       const fixtures::filter_setting& setting) {
  judged_row row;
  row.label = fmt::format("{} {}", fixtures::shape_name(shape), setting.label());
  // The subnormal shape's tail must be subnormal in the dtype the subject is sent.
  fixtures::shape_options stored = options;
  if (s.input_dtype == SC_DTYPE_BF16) stored.mantissa_bits = 7;
  if (s.input_dtype == SC_DTYPE_F16) stored.min_normal = 6.103515625e-05, stored.mantissa_bits = 10;
  row.values = fixtures::make_probs(shape, stored);
  if (s.is_logits()) row.values = fixtures::probs_to_logits(row.values);
  // The subject sees the row in its dtype; the reference sees the same values decoded.
  row.values = harness::round_to_dtype(std::move(row.values), s.input_dtype);
  row.setting = setting;
  return row;
}
}  // namespace

namespace {
judged_row build_row(const battery::subject& s, const row_spec& r) {
  if (!r.with_reference) return fixture_row(s, r.shape, r.options, r.setting);
  judged_row row = fixture_row(s, r.shape, r.options, r.setting);
  row.renormalise = r.shape == fixtures::shape::subnormal;
  row.target = reference_for(s, row.values, r.setting, row.renormalise);
  return row;
}
}  // namespace

judged_row make_row(const battery::subject& s, fixtures::shape shape,
                    const fixtures::shape_options& options,
                    const fixtures::filter_setting& setting) {
  return std::move(make_rows(s, {{shape, options, setting}}).front());
}

namespace {
const char* policy_name(int32_t tie) {
  return tie == SC_TIE_LOWEST_INDEX ? "lowest_index" : "keep_ties";
}

// Two references that judge every draw alike: the same membership and probabilities.
bool same_target(const reference_result& a, const reference_result& b) {
  if (!a.ok() || !b.ok()) return false;
  const auto &x = a.distribution(), &y = b.distribution();
  return x.status == y.status && x.prob == y.prob && x.prob_min == y.prob_min &&
         x.prob_max == y.prob_max;
}

// What a bucket's label adds: its routes (or "every route") and their policies ("lowest_index
// = keep_ties" where both give the row this reference).
std::string bucket_suffix(const std::vector<sc_route>& routes, const std::vector<size_t>& members) {
  std::string names, policies;
  for (const size_t r : members) {
    names += fmt::format("{}{} '{}'", names.empty() ? "" : ", ", r, routes[r].name);
    const char* p = policy_name(routes[r].tie_policy);
    if (policies.find(p) == std::string::npos)
      policies += fmt::format("{}{}", policies.empty() ? "" : " = ", p);
  }
  if (members.size() == 1) names = "route " + names;
  if (members.size() > 1)
    names = members.size() == routes.size() ? "every route" : "routes " + names;
  return fmt::format(" ({}, {})", names, policies);
}

// Input row `input`'s buckets, appended to `out`: its reference under each tie policy its
// routes state, one bucket per distinct reference.
void add_buckets(const battery::subject& s, const std::vector<sc_route>& routes,
                 const judged_row& row, size_t input, route_buckets& out) {
  const size_t first = out.rows.size();
  auto& of = out.of_route.emplace_back(routes.size());
  std::vector<std::vector<size_t>> members;
  std::map<int32_t, size_t> of_policy;  // a policy's bucket, its reference computed once
  for (size_t r = 0; r < routes.size(); ++r) {
    auto known = of_policy.find(routes[r].tie_policy);
    if (known == of_policy.end()) {
      sc_sampler as_routed = *s.sampler;
      as_routed.tie_policy = routes[r].tie_policy;
      battery::subject routed = s;
      routed.sampler = &as_routed;
      reference_result t = reference_for(routed, row.values, row.setting, row.renormalise);
      size_t b = first;
      while (b < out.rows.size() && !same_target(out.rows[b].target, t)) ++b;
      if (b == out.rows.size()) {
        out.rows.push_back(row);
        out.rows.back().target = std::move(t);
        out.input.push_back(input);
        members.emplace_back();
      }
      known = of_policy.emplace(routes[r].tie_policy, b).first;
    }
    members[known->second - first].push_back(r);
    of[r] = known->second;
  }
  for (size_t b = first; b < out.rows.size(); ++b)
    out.rows[b].label += bucket_suffix(routes, members[b - first]);
}
}  // namespace

route_buckets bucket_by_route(const battery::subject& s, const std::vector<judged_row>& inputs) {
  route_buckets out;
  const std::vector<sc_route> routes = registry::routes_of(*s.sampler);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!routes.empty()) {
      add_buckets(s, routes, inputs[i], i, out);
      continue;
    }
    out.rows.push_back(inputs[i]);
    out.input.push_back(i);
  }
  return out;
}

std::vector<judged_row> make_rows(const battery::subject& s, const std::vector<row_spec>& specs) {
  std::vector<judged_row> rows(specs.size());
  std::vector<char> built_ahead(specs.size(), 0);
  for (size_t i = 0; i < specs.size(); ++i)
    if (auto row = take_row_ahead(s, specs[i])) rows[i] = std::move(*row), built_ahead[i] = 1;
  stats::parallel_for(specs.size(), [&](size_t i) {
    if (!built_ahead[i]) rows[i] = build_row(s, specs[i]);
  });
  for (size_t i = 0; i < specs.size(); ++i)
    if (!built_ahead[i]) keep_row_ahead(s, specs[i], rows[i]);
  return rows;
}

harness::sample_call call_for_rows(const battery::subject& s,
                                   const std::vector<const judged_row*>& rows) {
  harness::sample_call call;
  call.input_dtype = s.input_dtype;
  call.vocab_size = rows.empty() ? 0 : static_cast<int64_t>(rows.front()->values.size());
  call.num_input_rows = static_cast<int64_t>(rows.size());
  call.input.reserve(rows.size() * static_cast<size_t>(call.vocab_size));
  for (const judged_row* r : rows) {
    call.input.insert(call.input.end(), r->values.begin(), r->values.end());
    if (s.declares(SC_FILTER_TOP_K)) call.top_k.push_back(r->setting.top_k);
    if (s.declares(SC_FILTER_TOP_P)) call.top_p.push_back(r->setting.top_p);
    if (s.declares(SC_FILTER_MIN_P)) call.min_p.push_back(r->setting.min_p);
    if (s.is_logits() && s.declares(SC_FILTER_TEMPERATURE))
      call.temperature.push_back(r->setting.temperature);
  }
  return call;
}

void add_output(harness::sample_call& call, int32_t input_row, uint64_t seed, uint64_t subsequence,
                uint64_t offset) {
  call.row_index.push_back(input_row);
  call.seed.push_back(seed);
  call.subsequence.push_back(subsequence);
  call.offset.push_back(offset);
}

nlohmann::json setting_json(const fixtures::filter_setting& f) {
  return {
      {"top_k", f.top_k}, {"top_p", f.top_p}, {"min_p", f.min_p}, {"temperature", f.temperature}};
}

drawn_counts empty_counts(const std::vector<judged_row>& rows) {
  drawn_counts out;
  const int64_t V = rows.empty() ? 0 : static_cast<int64_t>(rows.front().values.size());
  out.counts.assign(rows.size(), std::vector<uint64_t>(static_cast<size_t>(V), 0));
  out.first_out.assign(rows.size(), {});
  return out;
}

std::vector<uint64_t> first_subsequences(const std::vector<uint64_t>& draws, uint64_t base) {
  std::vector<uint64_t> first;
  for (const uint64_t n : draws) {
    first.push_back(base);
    base += n;
  }
  return first;
}

drawn_counts draw_counts(const battery::subject& s, const std::vector<judged_row>& rows,
                         const std::vector<uint64_t>& draws, uint64_t seed,
                         uint64_t subsequence_base, const route_buckets* buckets) {
  drawn_counts out = empty_counts(buckets != nullptr ? buckets->rows : rows);
  draw_more(s, rows, first_subsequences(draws, subsequence_base), draws, seed, out, buckets);
  return out;
}

namespace {

// The bucket output j of `call` counts in: its row's, or (buckets) its reported route's.
size_t bucket_of(const route_buckets* buckets, const harness::sample_call& call, size_t j,
                 size_t row) {
  if (buckets == nullptr || buckets->of_route.empty()) return row;
  return buckets->of_route[row].at(call.route.at(j));  // read_routes judged every valid row's
}

// Counts one call's outputs into their rows (or buckets); false (out.failure says why) at an
// output no correct subject gives: valid = 0 on a valid row, or a token outside [0, V).
bool count_outputs(const std::vector<judged_row>& rows, const harness::sample_call& call,
                   const std::vector<size_t>& owner, uint64_t seed, drawn_counts& out,
                   const route_buckets* buckets) {
  const int64_t V = rows.empty() ? 0 : static_cast<int64_t>(rows.front().values.size());
  for (size_t j = 0; j < owner.size(); ++j) {
    const judged_row& jr = rows[owner[j]];
    const int32_t t = call.tokens[j];
    const bool in_range = t >= 0 && t < V;
    if (!call.valid[j] || !in_range) {
      out.failure =
          !call.valid[j]
              ? fmt::format(
                    "row '{}' (valid per the reference) came back valid = 0 at seed {} "
                    "subsequence {}",
                    jr.label, seed, call.subsequence[j])
              : fmt::format("row '{}': token {} outside [0, {}) at seed {} subsequence {} offset 0",
                            jr.label, t, V, seed, call.subsequence[j]);
      out.repro = {{"seed", seed}, {"subsequence", call.subsequence[j]},
                   {"offset", 0},  {"row", jr.label},
                   {"token", t},   {"params", setting_json(jr.setting)}};
      return false;
    }
    // A token is IN or OUT by the reference its bucket holds: its own route's tie policy.
    const size_t b = bucket_of(buckets, call, j, owner[j]);
    const judged_row& judged = buckets != nullptr ? buckets->rows[b] : jr;
    if (judged.target.ok() &&
        judged.target.distribution().status[static_cast<size_t>(t)] == membership::out &&
        out.first_out[b].token < 0)
      out.first_out[b] = {t, call.subsequence[j], call.offset[j]};
    ++out.counts[b][static_cast<size_t>(t)];
  }
  return true;
}

}  // namespace

namespace {

// Where the next call's outputs continue: the row, and the draws of it already asked for.
struct draw_cursor {
  size_t row = 0;
  uint64_t done_in_row = 0;
};

// Refills `call`'s outputs with up to `per_call` draws from `at` on; `owner`: each
// output's row (of `rows`).
void next_outputs(harness::sample_call& call, std::vector<size_t>& owner, draw_cursor& at,
                  const std::vector<uint64_t>& first, const std::vector<uint64_t>& draws,
                  uint64_t seed, uint64_t per_call) {
  for (auto* v : {&call.seed, &call.subsequence, &call.offset}) v->clear();
  call.row_index.clear();
  owner.clear();
  while (at.row < draws.size() && call.seed.size() < per_call) {
    if (at.done_in_row == draws[at.row]) {
      ++at.row;
      at.done_in_row = 0;
      continue;
    }
    add_output(call, static_cast<int32_t>(at.row), seed, first[at.row] + at.done_in_row, 0);
    owner.push_back(at.row);
    ++at.done_in_row;
  }
}

// A call object that carries only the input rows its outputs draw from: the cursor walks
// the rows in order, so a call's outputs span a run of rows [lo, hi), and the next call
// mostly the same run. A subject does per-row work for every row it is sent (a sort, a
// scan), and the judge copies every row into the request; rows nobody draws from cost
// both for nothing. The input is rebuilt only when the run changes.
struct row_run_call {
  harness::sample_call call;
  size_t lo = 0, hi = 0;  // the run of rows call.input holds; empty before the first call

  // Points the outputs' row_index (absolute rows of `owner`) into the run's input.
  void carry_rows(const battery::subject& s, const std::vector<const judged_row*>& rows,
                  const std::vector<size_t>& owner) {
    const size_t first = owner.front(), last = owner.back() + 1;
    if (first != lo || last != hi) {  // [0, 0) before the first call: never a run
      harness::sample_call fresh =
          call_for_rows(s, {rows.begin() + static_cast<std::ptrdiff_t>(first),
                            rows.begin() + static_cast<std::ptrdiff_t>(last)});
      fresh.row_index = std::move(call.row_index);
      fresh.seed = std::move(call.seed), fresh.subsequence = std::move(call.subsequence);
      fresh.offset = std::move(call.offset);
      call = std::move(fresh);
      lo = first, hi = last;
    }
    for (size_t j = 0; j < owner.size(); ++j)
      call.row_index[j] = static_cast<int32_t>(owner[j] - lo);
  }
};

}  // namespace

namespace {

// A call's failure as the check's finding: what went wrong, and where to replay it.
void record_call_failure(drawn_counts& out, const harness::call_status& st,
                         const harness::sample_call& call, const judged_row& row, uint64_t seed) {
  out.failure = fmt::format("on a valid batch: {}", st.describe());
  out.repro = {{"seed", seed},
               {"subsequence_first", call.subsequence.front()},
               {"offset", 0},
               {"row", row.label},
               {"params", setting_json(row.setting)}};
}

}  // namespace

void draw_more(const battery::subject& s, const std::vector<judged_row>& rows,
               const std::vector<uint64_t>& first, const std::vector<uint64_t>& draws,
               uint64_t seed, drawn_counts& out, const route_buckets* buckets,
               const rows_done_fn& rows_done) {
  // Calls hold at most this many outputs, so a large budget never needs a giant buffer.
  constexpr uint64_t kOutputsPerCall = 1u << 16;
  std::vector<const judged_row*> row_ptrs;
  for (const auto& r : rows) row_ptrs.push_back(&r);
  // Three call objects in turn: while the subject draws call n, a second thread checks and
  // counts call n - 1, fills call n + 1 and writes it for the subject (call_pipeline), so
  // none of it adds to a check's wall time.
  std::array<row_run_call, 3> calls;
  std::array<std::vector<size_t>, 3> owners;
  battery::call_pipeline pipeline(s);
  draw_cursor cursor;
  const auto fill = [&](size_t k) {
    next_outputs(calls[k].call, owners[k], cursor, first, draws, seed, kOutputsPerCall);
    if (!owners[k].empty()) calls[k].carry_rows(s, row_ptrs, owners[k]);
  };
  size_t rows_counted = 0;  // rows [0, rows_counted) have every draw counted
  const auto count = [&](size_t k) {
    const harness::sample_call& call = calls[k].call;
    if (const harness::call_status inputs = pipeline.check_inputs(k); !inputs.ok()) {
      record_call_failure(out, inputs, call, rows[owners[k].front()], seed);
      return false;
    }
    if (!count_outputs(rows, call, owners[k], seed, out, buckets)) return false;
    // The cursor walks the rows in order: only the call's last row may continue.
    if (rows_done && owners[k].back() > rows_counted) rows_done(rows_counted, owners[k].back());
    rows_counted = std::max(rows_counted, owners[k].back());
    return true;
  };
  fill(0);
  size_t n = 0;
  for (; !owners[n % 3].empty(); ++n) {
    harness::sample_call& call = calls[n % 3].call;
    const harness::call_status readied = pipeline.ready(n % 3, call);
    std::future<bool> alongside = std::async(std::launch::async, [&, n] {
      const bool counted = n == 0 || count((n + 2) % 3);
      fill((n + 1) % 3);
      if (counted && !owners[(n + 1) % 3].empty())
        pipeline.stage_ahead((n + 1) % 3, calls[(n + 1) % 3].call);
      return counted;
    });
    harness::call_status st;
    std::exception_ptr thrown;
    try {
      st = readied.ok() ? pipeline.run(n % 3, call) : readied;
    } catch (...) {
      thrown = std::current_exception();
    }
    // The previous call's fault is the check's finding, whatever this call did.
    if (!alongside.get()) return;
    if (thrown) std::rethrow_exception(thrown);
    out.samples += call.seed.size();
    if (!st.ok()) return record_call_failure(out, st, call, rows[owners[n % 3].front()], seed);
  }
  if (n > 0 && !count((n + 2) % 3)) return;
  if (rows_done && rows_counted < rows.size()) rows_done(rows_counted, rows.size());
}

std::optional<std::string> first_out_token(const judged_row& row,
                                           const std::vector<uint64_t>& counts,
                                           const out_draw& first, uint64_t seed) {
  if (first.token < 0) return std::nullopt;
  const auto t = static_cast<size_t>(first.token);
  const auto& d = row.target.distribution();
  return fmt::format(
      "row '{}': token {} drawn {} times but the reference says OUT (source p = {:.3g}); "
      "first drawn at seed {} subsequence {} offset {}",
      row.label, t, counts[t], d.source[t], seed, first.subsequence, first.offset);
}

in_conditional condition_on_in(const filtered_distribution& d,
                               const std::vector<uint64_t>& counts) {
  in_conditional c;
  c.counts.assign(counts.size(), 0);
  c.probs.assign(counts.size(), 0.0);
  for (size_t t = 0; t < counts.size(); ++t) {
    c.n += counts[t];
    if (d.status[t] == membership::in) {
      c.counts[t] = counts[t];
      c.in_count += counts[t];
      c.probs[t] = d.source[t] / d.in_source_mass;
    } else if (d.status[t] == membership::boundary) {
      c.boundary_count += counts[t];
    }
  }
  return c;
}

}  // namespace samplecheck::checks
