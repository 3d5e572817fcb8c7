// The two inverse-CDF subjects: plain multinomial (SGLang v0.5.19's torch.multinomial
// rule) and the sort-based filter (sort, cumulative sum, mask, renormalise, sample).
// Both draw u from two stream outputs as a 53-bit double, so tokens down to 1e-16 of
// the row's mass keep their share.
#include <algorithm>
#include <numeric>

#include "kernels/cpu/subjects.h"
#include "reference/uniform.h"

namespace samplecheck::cpu {
namespace {

// u in [0, total) against a non-decreasing cumulative sum: the first entry above u.
// u >= the last entry cannot happen in exact arithmetic; rounding could, so the
// search falls back to the last entry with positive mass rather than index n.
size_t invert_cdf(const std::vector<double>& cdf, double u) {
  const auto hit = std::upper_bound(cdf.begin(), cdf.end(), u);
  if (hit != cdf.end()) return static_cast<size_t>(hit - cdf.begin());
  size_t last = cdf.size() - 1;
  while (last > 0 && cdf[last] == cdf[last - 1]) --last;
  return last;
}

double draw_unit(philox_stream& stream) {
  const uint32_t hi = stream.next();
  const uint32_t lo = stream.next();
  return uniform_double(hi, lo);
}

class multinomial final : public row_sampler {
 public:
  explicit multinomial(defect planted) : planted_(planted) {}

  bool prepare(std::vector<float>& row, const row_params&) override {
    cdf_.resize(row.size());
    double sum = 0.0;
    // X09: the running sum in float32, each probability added onto it (a GPU scan that
    // adds its items onto the row's running mass): once it nears 1, a token below half
    // its ulp (3e-8) adds nothing and is never drawn.
    float absorbed = 0.0f;
    for (size_t i = 0; i < row.size(); ++i)
      cdf_[i] = planted_ == defect::X09 ? (absorbed += row[i]) : (sum += row[i]);
    return cdf_.back() > 0.0;
  }
  draw_result draw(philox_stream& stream) override {
    // X07: two outputs skipped before u is formed (a kernel that reads its uniforms from the
    // wrong lanes of its Philox block). u is still a perfect uniform, so only a comparison
    // with the declared rule on the reference stream (stream_agreement) can see it.
    if (planted_ == defect::X07) {
      stream.next();
      stream.next();
    }
    // X06: u in [0, 1) as if the row summed to 1; the mass a short row lacks falls past
    // the last entry, to its last positive token (FlashInfer's probs kernels, which
    // declare probs_normalisation assume_sum_one).
    const double u = draw_unit(stream) * (planted_ == defect::X06 ? 1.0 : cdf_.back());
    return {static_cast<int32_t>(invert_cdf(cdf_, u)), true};
  }

 private:
  defect planted_;
  std::vector<double> cdf_;
};

class sort_filter final : public row_sampler {
 public:
  explicit sort_filter(defect planted) : planted_(planted) {}

  bool prepare(std::vector<float>& row, const row_params& params) override {
    const int64_t vocab = static_cast<int64_t>(row.size());
    order_.resize(row.size());
    std::iota(order_.begin(), order_.end(), 0);
    // Stable: equal probabilities stay in token order, so top-k keeps the lowest ids.
    // With every filter off the order cannot matter, and a V log V sort per row would
    // dominate batches of many distinct rows.
    bool sorted = params.top_k_on(vocab) || params.top_p_on() || params.min_p_on();
    // S21 (sglang #35697): the sorted path is taken for the whole batch when any request
    // filters (a batch-level any()), and u is inverted over the row in rank order, not
    // token order. Either order draws the right distribution; which token one u gives
    // an unfiltered request depends on whether a batchmate turned a filter on.
    if (planted_ == defect::S21 && batch_filters) sorted = true;
    if (sorted)
      std::stable_sort(order_.begin(), order_.end(),
                       [&](int32_t a, int32_t b) { return row[a] > row[b]; });

    size_t keep = order_.size();
    if (params.top_k_on(vocab)) {
      keep = static_cast<size_t>(params.top_k);
      if (planted_ == defect::X12) heap_survivors(row, keep);
      if (planted_ == defect::S06)  // S06: every tie with the k-th survives
        while (keep < order_.size() && row[order_[keep]] == row[order_[keep - 1]]) ++keep;
      // S18: top_k = 1 read as "greedy, but among ties sample": every token tied with
      // the maximum survives, so a row tied at its top is not greedy.
      if (planted_ == defect::S18 && params.top_k == 1)
        while (keep < order_.size() && row[order_[keep]] == row[order_[0]]) ++keep;
    }
    if (params.top_p_on()) keep = top_p_prefix(row, keep, params.top_p);
    if (params.min_p_on()) {
      const float threshold = params.min_p * row[order_[0]];
      size_t n = 0;
      while (n < keep && row[order_[n]] >= threshold) ++n;
      keep = n;
    }
    order_.resize(keep);

    cdf_.resize(keep);
    double sum = 0.0;
    for (size_t j = 0; j < keep; ++j) {
      double p = row[order_[j]];
      // S11: the renormalisation pass zeroes every probability below 1e-8 (FlashInfer
      // #708: top_p = 1 renorm lost the ~1e-9 tail). Rows are meant to sum to 1, so the
      // test is on the probability as given.
      if (planted_ == defect::S11 && p < 1e-8) p = 0.0;
      cdf_[j] = sum += p;
    }
    return keep > 0 && sum > 0.0;
  }

  draw_result draw(philox_stream& stream) override {
    const double u = draw_unit(stream) * cdf_.back();
    return {order_[invert_cdf(cdf_, u)], true};
  }

 private:
  // The smallest prefix of the first `keep` sorted tokens whose mass reaches top_p of
  // theirs (top_k_first: top-p measured after top-k's renormalisation). The
  // cumulative sum is float, as torch.cumsum on a float tensor.
  size_t top_p_prefix(const std::vector<float>& row, size_t keep, float top_p) const {
    if (planted_ == defect::S22) return top_p_prefix_unclamped(row, keep, top_p);
    std::vector<float> cumulative(keep);
    float sum = 0.0f;
    for (size_t j = 0; j < keep; ++j) cumulative[j] = sum += row[order_[j]];
    const float threshold = top_p * sum;
    size_t n = 0;
    if (planted_ == defect::S07) {
      // S07: a token survives only if the sum *through* it stays within p, so the
      // token that carries the sum across p is dropped (the top token always stays).
      while (n < keep && (n == 0 || cumulative[n] <= threshold)) ++n;
      return n;
    }
    // A token is needed while the mass before it is still short of p.
    while (n < keep && (n == 0 ? 0.0f : cumulative[n - 1]) < threshold) ++n;
    if (planted_ == defect::S24) return top_p_prefix_bisected(row, keep, top_p, n);
    return n;
  }

  // S22 (TensorRT-LLM #19485): the kept probabilities normalised to sum 1 (a softmax's
  // output), then searchsorted(float cumsum, top_p) for the boundary token. The float
  // cumsum can end below a top_p near 1 (each addition below half an ulp of the running
  // sum is lost: a tail of 1e-9 tokens adds nothing), so the search returns `keep`, V
  // when top-k is off, and the scatter that keeps the boundary token indexes one past
  // the mask. The scatter is bounds-checked here, as torch's scatter_ is on the CPU
  // (IndexError; on CUDA a device-side assert): the call fails, with no undefined read.
  size_t top_p_prefix_unclamped(const std::vector<float>& row, size_t keep, float top_p) const {
    double mass = 0.0;
    for (size_t j = 0; j < keep; ++j) mass += row[order_[j]];
    std::vector<float> cumulative(keep);
    float sum = 0.0f;
    for (size_t j = 0; j < keep; ++j)
      cumulative[j] = sum += static_cast<float>(row[order_[j]] / mass);
    const auto boundary = static_cast<size_t>(
        std::lower_bound(cumulative.begin(), cumulative.end(), top_p) - cumulative.begin());
    std::vector<char> removed(keep);
    for (size_t j = 0; j < keep; ++j) removed[j] = cumulative[j] > top_p;
    removed.at(boundary) = 0;  // scatter_(boundary, False): out of range when boundary == keep
    // The kept tokens: the prefix the mask leaves (through the boundary token).
    return static_cast<size_t>(std::find(removed.begin(), removed.end(), 1) - removed.begin());
  }

  // S24 (vLLM 0.33.0's Triton top-p, vllm/v1/sample/ops/topk_topp_triton.py,
  // _topk_topp_kernel's standalone top-p path; PR vllm-project/vllm#42191 made the search
  // binary and kept its cap): the pivot probability is bisected between the least and
  // the largest probability. A pivot ends the search when the mass above it reaches p and
  // dropping its least group of equal values falls short; else the side whose mass is
  // above (below) p moves up (down). After 18 halvings the midpoint of what is left is
  // the pivot, resolved or not, and the tokens above it stay. 18 halvings of [min, max]
  // leave max / 2^18: a pivot that must fall among tokens finer than that is not found,
  // and every token under the midpoint is dropped. A pivot found keeps the exact prefix
  // (`exact`, the host's): vLLM's trim of a group tied at the cut to the members p needs,
  // lowest ids first, is the host's stable order. Unresolved, every token above the
  // midpoint stays (vLLM's trim there acts on a group tied at the last pivot tried, which
  // only ties reach; not modelled). Double arithmetic: the defect is the cap, not rounding.
  size_t top_p_prefix_bisected(const std::vector<float>& row, size_t keep, float top_p,
                               size_t exact) const {
    std::vector<double> q(keep);
    double mass = 0.0;
    for (size_t j = 0; j < keep; ++j) mass += row[order_[j]];
    for (size_t j = 0; j < keep; ++j) q[j] = row[order_[j]] / mass;  // descending
    double lo = q[keep - 1], hi = q[0], pivot = hi;
    for (int iteration = 1;; ++iteration) {
      pivot = (hi - lo) * 0.5 + lo;
      const auto above = static_cast<size_t>(
          std::partition_point(q.begin(), q.end(), [&](double x) { return x > pivot; }) -
          q.begin());
      const double sum = std::accumulate(q.begin(), q.begin() + above, 0.0);
      // The least value above the pivot and its group (ties sit together in q).
      size_t least = above;
      while (least > 0 && q[least - 1] == q[above - 1]) --least;
      const double least_group = above > 0 ? q[above - 1] * (above - least) : 0.0;
      const bool found = sum >= top_p && sum - least_group < top_p;
      if (sum > top_p) lo = pivot;
      if (sum < top_p) hi = pivot;
      if (hi - lo < 1e-9 || iteration >= 18) {
        pivot = (hi + lo) / 2;  // the cap: the midpoint stands in for an unresolved pivot
        break;
      }
      if (found) return exact;
    }
    const auto kept = std::partition_point(q.begin(), q.end(), [&](double x) { return x > pivot; });
    return std::max<size_t>(1, static_cast<size_t>(kept - q.begin()));
  }

  // X12 (llama.cpp's top-k, docs/shipped/llamacpp.md "Ties: top-k keeps exactly k, but not
  // the lowest ids of a tie"): the k survivors are those std::partial_sort leaves in front
  // when it runs over the row in token order comparing values alone, a heap of the first
  // k tokens that a later token enters only when strictly larger than the heap's least.
  // Among tokens tied with the k-th, the ones the heap met first and never evicted stay,
  // not the lowest ids. The survivors are then put in the host's order (value, then id),
  // so the top-k set is the only difference. (llama.cpp takes this path for k <= 128; the
  // mutant takes it for every k.)
  void heap_survivors(const std::vector<float>& row, size_t k) {
    std::vector<int32_t> ids(row.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                      [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    ids.resize(k);
    std::sort(ids.begin(), ids.end());
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    std::copy(ids.begin(), ids.end(), order_.begin());
  }

  defect planted_;
  std::vector<int32_t> order_;
  std::vector<double> cdf_;
};

}  // namespace

std::unique_ptr<row_sampler> make_multinomial(defect planted) {
  return std::make_unique<multinomial>(planted);
}
std::unique_ptr<row_sampler> make_sort_filter(defect planted) {
  return std::make_unique<sort_filter>(planted);
}

}  // namespace samplecheck::cpu
