#include "suites/peers/peer_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "reference/philox.h"
#include "reference/uniform.h"
#include "suites/harness/host_call.h"

namespace samplecheck::peers {

draw_result draw_from_subject(const sc_sampler& subject, const prepared_case& prepared,
                              int64_t samples, uint64_t seed, batch_layout layout) {
  const int64_t vocab = static_cast<int64_t>(prepared.row.size());
  draw_result out{sample_tally(vocab), false, ""};
  if (!harness::declares_dtype(subject.input_dtypes, SC_DTYPE_F32)) {
    out.unsupported = true;
    return out;
  }
  if (samples < 1)
    throw std::invalid_argument(fmt::format("draw_from_subject: samples = {}", samples));
  const bool shared = layout == batch_layout::shared_row;
  // One call for all N draws, as the peers' tests make it: a defect keyed on the
  // position in the batch (S04, S14) behaves as it would under their test.
  const auto n = static_cast<size_t>(samples);
  harness::sample_call call;
  call.vocab_size = vocab;
  call.num_input_rows = shared ? 1 : samples;
  for (int64_t r = 0; r < call.num_input_rows; ++r)
    call.input.insert(call.input.end(), prepared.row.begin(), prepared.row.end());
  if (shared) call.row_index.assign(n, 0);
  // Sized for every output row: a subject that reads parameters by output row (S09)
  // sees the same broadcast value, as with the peers' scalar parameters.
  if (prepared.spec->top_k > 0) call.top_k.assign(n, prepared.spec->top_k);
  if (prepared.spec->top_p < 1.0f) call.top_p.assign(n, prepared.spec->top_p);
  call.seed.assign(n, seed);
  call.offset.assign(n, 0);
  for (size_t r = 0; r < n; ++r) call.subsequence.push_back(r);
  const harness::call_status st = harness::run_host_call(subject, call);
  if (st.fault == harness::call_fault::subject_status && st.status == SC_ERR_UNSUPPORTED) {
    out.unsupported = true;
    return out;
  }
  // A token outside [0, V) is a draw the peers' rules judge (they count it); any
  // other fault leaves nothing to count.
  if (!st.ok() && st.fault != harness::call_fault::out_of_range) {
    out.error = fmt::format("{}: {}", subject.name, st.describe());
    return out;
  }
  for (size_t r = 0; r < n; ++r) {
    if (call.valid[r] == 0) {
      ++out.tally.invalid;
    } else if (call.tokens[r] < 0 || call.tokens[r] >= vocab) {
      ++out.tally.out_of_range;
    } else {
      ++out.tally.counts[static_cast<size_t>(call.tokens[r])];
    }
  }
  return out;
}

sample_tally draw_exact(std::span<const double> probs, int64_t samples, uint64_t seed) {
  if (probs.empty()) throw std::invalid_argument("draw_exact: empty distribution");
  std::vector<double> cdf(probs.size());
  double total = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!(probs[i] >= 0))
      throw std::invalid_argument(fmt::format("draw_exact: probs[{}] = {}", i, probs[i]));
    cdf[i] = total += probs[i];
  }
  if (!(total > 0)) throw std::invalid_argument("draw_exact: probabilities sum to 0");
  sample_tally tally(static_cast<int64_t>(probs.size()));
  philox_stream stream(seed, 0, 0);
  for (int64_t s = 0; s < samples; ++s) {
    const uint32_t hi = stream.next();
    const double u = uniform_double(hi, stream.next()) * total;
    // first index with cdf > u: never a zero-probability token, never past the end
    auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
    if (it == cdf.end()) it = std::prev(cdf.end());
    while (probs[static_cast<size_t>(it - cdf.begin())] == 0)
      --it;  // cdf flat: step back to the owner
    ++tally.counts[static_cast<size_t>(it - cdf.begin())];
  }
  return tally;
}

}  // namespace samplecheck::peers
