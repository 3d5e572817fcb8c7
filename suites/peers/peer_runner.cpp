#include "suites/peers/peer_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "reference/philox.h"
#include "reference/uniform.h"

namespace samplecheck::peers {

draw_result draw_from_subject(const sc_sampler& subject, const prepared_case& prepared, int64_t samples,
                              uint64_t seed, batch_layout layout) {
  const int64_t vocab = static_cast<int64_t>(prepared.row.size());
  draw_result out{sample_tally(vocab), false, ""};
  if (!(subject.input_dtypes & SC_DTYPE_BIT(SC_DTYPE_F32))) {
    out.unsupported = true;
    return out;
  }
  if (samples < 1) throw std::invalid_argument(fmt::format("draw_from_subject: samples = {}", samples));
  const bool shared = layout == batch_layout::shared_row;
  // One call for all N draws, as the peers' tests make it: a defect keyed on the
  // position in the batch (S04, S14) behaves as it would under their test.
  const auto n = static_cast<size_t>(samples);
  const int64_t input_rows = shared ? 1 : samples;
  std::vector<float> input(static_cast<size_t>(input_rows * vocab));
  for (int64_t r = 0; r < input_rows; ++r) std::copy(prepared.row.begin(), prepared.row.end(), input.begin() + r * vocab);
  std::vector<int32_t> row_index(shared ? n : 0, 0);
  // Sized for every output row: a subject that reads parameters by output row (S09)
  // sees the same broadcast value, as with the peers' scalar parameters.
  std::vector<int32_t> top_k(n, prepared.spec->top_k);
  std::vector<float> top_p(n, prepared.spec->top_p);
  std::vector<uint64_t> seeds(n, seed), subsequence(n), offset(n, 0);
  for (size_t r = 0; r < n; ++r) subsequence[r] = r;
  std::vector<int32_t> tokens(n, -1);  // sentinels: an unwritten output cannot look right
  std::vector<uint8_t> valid(n, uint8_t{0xAB});

  sc_sample_batch batch{};
  batch.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  batch.input = input.data();
  batch.input_dtype = SC_DTYPE_F32;
  batch.num_input_rows = input_rows;
  batch.vocab_size = vocab;
  batch.num_output_rows = samples;
  batch.row_index = shared ? row_index.data() : nullptr;
  batch.top_k = prepared.spec->top_k > 0 ? top_k.data() : nullptr;
  batch.top_p = prepared.spec->top_p < 1.0f ? top_p.data() : nullptr;
  batch.seed = seeds.data();
  batch.subsequence = subsequence.data();
  batch.offset = offset.data();
  batch.out_token = tokens.data();
  batch.out_valid = valid.data();
  char message[512] = "";
  const sc_status status = subject.sample(subject.context, &batch, message, sizeof message);
  if (status == SC_ERR_UNSUPPORTED) {
    out.unsupported = true;
    return out;
  }
  if (status != SC_OK) {
    out.error = fmt::format("{}: sample() returned status {}: {}", subject.name, status, message);
    return out;
  }
  for (size_t r = 0; r < n; ++r) {
    if (valid[r] == 0) {
      ++out.tally.invalid;
    } else if (tokens[r] < 0 || tokens[r] >= vocab) {
      ++out.tally.out_of_range;
    } else {
      ++out.tally.counts[static_cast<size_t>(tokens[r])];
    }
  }
  return out;
}

sample_tally draw_exact(std::span<const double> probs, int64_t samples, uint64_t seed) {
  if (probs.empty()) throw std::invalid_argument("draw_exact: empty distribution");
  std::vector<double> cdf(probs.size());
  double total = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!(probs[i] >= 0)) throw std::invalid_argument(fmt::format("draw_exact: probs[{}] = {}", i, probs[i]));
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
    while (probs[static_cast<size_t>(it - cdf.begin())] == 0) --it;  // cdf flat: step back to the owner
    ++tally.counts[static_cast<size_t>(it - cdf.begin())];
  }
  return tally;
}

}  // namespace samplecheck::peers
