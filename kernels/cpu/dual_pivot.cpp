// Sorting-free dual-pivot rejection sampling, as FlashInfer (v0.2.3+) describes it.
// Per round r, with stream output offset + r:
//   1. inverse transform over the eligible tokens {p > low}: u = U[0,1) * mass;
//   2. pivot_0 = p_j of the sampled token j, pivot_1 = (pivot_0 + high) / 2;
//   3. f(x) = "the tokens above x already satisfy every enabled filter":
//        top-k: count(p > x) < k   (so every tie with the k-th is kept: keep_ties)
//        top-p: mass(p > x) < top_p * mass(row)
//        min-p: x >= min_p * max(p)
//      f(pivot_0) accepts j; else f(pivot_1) ? (low, high) = (pivot_0, pivot_1)
//                                           : low = pivot_1.
// Invariants f(low) = 0 and f(high) = 1 hold from (0, max p); f is monotone, so any
// eligible token with p >= high is accepted. Each rejected round at least halves
// high - low (the new interval is (pivot_0, pivot_1) or (pivot_1, high), each at
// most (high - pivot_0) / 2). Starting from high <= FLT_MAX < 2^128, after 128 + 149
// halvings the width is below 2^-149, the smallest float gap, so no float lies
// strictly between low and high and the next round accepts. The cap of 320 rounds
// (kDualPivotRoundCap, hence philox_outputs_per_call = 320) is therefore never met;
// a row that met it would come back invalid, not wrong.
//
// The inverse transform runs over a float prefix sum laid out as a GPU block does it
// (dual_pivot_scan.h), which is not monotone; the guarded crossing search is what keeps
// every returned token eligible.
//
// Speed without changing a bit: the accept rules read count and mass above a pivot
// from a pivot_index, and rounds after the first keep the eligible tokens as a list in
// token order. Tile sums in token order skip only zeros (exact), so every float is the
// one a pass over the whole row gives; a row's tokens never depend on how many outputs
// share it or how the batch is laid out.
#include <algorithm>
#include <cfloat>
#include <numeric>

#include "kernels/cpu/dual_pivot_scan.h"
#include "kernels/cpu/pivot_index.h"
#include "kernels/cpu/subjects.h"
#include "reference/uniform.h"

namespace samplecheck::cpu {
namespace {

// S01's amplification: u is drawn against (1 + 2^-10) times the reduced mass. In the
// real kernel the mismatch between the total u is drawn against and the total the scan
// reaches is a few float ulps (about 2^-20 of the mass at V = 150k), or the shortfall of
// a row that does not sum to the assumed 1 (FlashInfer #923); here it is 2^-10, so the
// unguarded search runs past the end of the row, returning index V, on about one draw
// in 1025 whatever the row, which the support check sees within a quick budget.
constexpr float kS01Overshoot = 1.0009765625f;

class dual_pivot final : public row_sampler {
 public:
  dual_pivot(defect planted, bool top_k_first) : planted_(planted), top_k_first_(top_k_first) {}

  bool prepare(std::vector<float>& row, const row_params& params) override {
    params_ = params;
    unit_total_ = false;
    const int64_t vocab = static_cast<int64_t>(row.size());
    top_k_on_ = params.top_k_on(vocab);
    // top_k_first = top_k_renorm_probs, then top-p / min-p sampling on the renormalised
    // row. S12 skips the renorm and keeps top-k in the joint rule it then applies.
    if (top_k_first_ && top_k_on_ && planted_ != defect::S12) {
      unit_total_ = planted_ == defect::S16;
      if (unit_total_)
        renormalise_top_k_atomic(row, params.top_k, call_number);
      else
        renormalise_top_k(row, params.top_k);
      top_k_on_ = false;
    }
    // X02: a small batch splits each row between blocks of kX02ChunkTiles tiles to
    // fill the GPU; from kX02OneBlockBatch requests on, one block scans a row.
    chunk_tiles_ = planted_ == defect::X02 && batch_size < kX02OneBlockBatch ? kX02ChunkTiles : 0;
    filtering_ = top_k_on_ || params.top_p_on() || params.min_p_on();
    probs_.swap(row);
    tiles_ = (probs_.size() + kScanTile - 1) / kScanTile;
    max_ = 0.0f;
    total_ = 0.0;
    positive_.clear();
    for (size_t t = 0; t < probs_.size(); ++t) {
      max_ = std::max(max_, probs_[t]);
      total_ += probs_[t];
      if (probs_[t] > 0.0f) positive_.push_back(static_cast<int32_t>(t));
    }
    measure_eligible_mass(probs_, positive_, tiles_, initial_, chunk_tiles_);
    if (filtering_) index_.build(probs_);
    return max_ > 0.0f && initial_.back() > 0.0f;
  }

  draw_result draw(philox_stream& stream) override {
    float low = 0.0f, high = max_;
    const std::vector<float>* running = &initial_;
    const auto vocab = static_cast<int64_t>(probs_.size());
    for (int round = 0; round < kDualPivotRoundCap; ++round) {
      const float drawn_against = unit_total_ && round == 0 ? 1.0f : running->back();  // S16
      float u = uniform_open_one(stream.next()) * drawn_against;
      if (planted_ == defect::S01) u *= kS01Overshoot;
      // S17: a search that falls past the scanned total (here amplified as S01's is, to
      // about 1 draw in 1025) lands in the last tile; when padding masks that tile
      // entirely, its scan finds no crossing and the id keeps the tile's end, >= V.
      // (A last tile with mass falls back to its last eligible token, as the correct
      // search does.)
      if (planted_ == defect::S17 && (u *= kS01Overshoot) >= running->back() &&
          last_tile_masked(*running))
        return {static_cast<int32_t>(tiles_ * kScanTile), true};
      const int64_t j = crossing_search(probs_, low, *running, u, planted_ != defect::S01);
      if (j < 0 || j >= vocab) return {static_cast<int32_t>(j), true};  // S01's escape
      if (!filtering_) return {static_cast<int32_t>(j), true};
      const float pivot0 = probs_[j];
      const float pivot1 = pivot0 + (high - pivot0) * 0.5f;
      if (accepts(index_.above(pivot0), pivot0)) return {static_cast<int32_t>(j), true};
      const float previous_low = low;
      if (accepts(index_.above(pivot1), pivot1)) {
        low = pivot0;
        high = pivot1;
      } else {
        low = pivot1;
      }
      if (round > 0 && low > previous_low) {  // narrow the list already in hand
        narrowed_.clear();
        for (const int32_t t : eligible_)
          if (probs_[t] > low) narrowed_.push_back(t);
        eligible_.swap(narrowed_);
      } else {  // the first narrowing, or S01's ineligible pivot moved low down
        index_.tokens_above(low, eligible_);
      }
      measure_eligible_mass(probs_, eligible_, tiles_, later_, chunk_tiles_);
      running = &later_;
    }
    return {-1, false};
  }

 private:
  static bool last_tile_masked(const std::vector<float>& running) {
    return running.size() == 1 ? running.back() == 0.0f
                               : running.back() == running[running.size() - 2];
  }

  bool accepts(const above_pivot& above, float pivot) const {
    if (top_k_on_ && above.count >= params_.top_k) return false;
    if (params_.top_p_on() && above.mass >= static_cast<double>(params_.top_p) * total_)
      return false;
    if (params_.min_p_on() && pivot < params_.min_p * max_) return false;
    return true;
  }

  // Keeps every token at or above the k-th largest value (ties kept, as the pivot
  // rule's count(p > x) < k keeps them) and rescales them to sum to 1. The threshold is
  // found by selection, not a sort; no randomness is used, as in top_k_renorm_probs.
  static void renormalise_top_k(std::vector<float>& row, int32_t k) {
    std::vector<float> values(row);
    std::nth_element(values.begin(), values.begin() + (k - 1), values.end(), std::greater<float>());
    const float kth = values[k - 1];
    double kept = 0.0;
    for (const float p : row)
      if (p >= kth) kept += p;
    for (float& p : row) p = p >= kth ? static_cast<float>(p / kept) : 0.0f;
  }

  // S16 (FlashInfer #5034): a multi-CTA top_k_renorm_probs whose threads atomicAdd
  // their kept probabilities into the row's float total, so the total's additions
  // happen in arrival order, which changes from launch to launch. Here the blocks of
  // kScanTile tokens arrive rotated by the call's number: the mechanism (the same float
  // additions in another order) is the real one, made repeatable. The renormalised row
  // then goes to a sampler that, like FlashInfer's sampling_from_probs, draws u against
  // the total 1 a renormalised row is meant to have (draw() below): through that the
  // total's few ulps reach the tokens. (The host draws against the scanned total, which
  // a pure rescaling cannot move, so the sum alone would never show in a token.)
  static void renormalise_top_k_atomic(std::vector<float>& row, int32_t k, uint64_t call) {
    std::vector<float> values(row);
    std::nth_element(values.begin(), values.begin() + (k - 1), values.end(), std::greater<float>());
    const float kth = values[k - 1];
    const size_t blocks = (row.size() + kScanTile - 1) / kScanTile;
    // The arrival order of call c: the blocks shuffled by a generator seeded with c.
    std::vector<size_t> arrival(blocks);
    std::iota(arrival.begin(), arrival.end(), size_t{0});
    samplecheck::philox_stream order(call, 0, 0);
    for (size_t i = blocks; i > 1; --i) std::swap(arrival[i - 1], arrival[order.next() % i]);
    float kept = 0.0f;
    for (const size_t block : arrival) {
      for (size_t t = block * kScanTile; t < std::min(row.size(), (block + 1) * kScanTile); ++t)
        if (row[t] >= kth) kept += row[t];
    }
    for (float& p : row) p = p >= kth ? static_cast<float>(p / static_cast<double>(kept)) : 0.0f;
  }

  static constexpr size_t kX02ChunkTiles = 4;
  static constexpr int64_t kX02OneBlockBatch = 16;

  defect planted_;
  bool top_k_first_;
  size_t chunk_tiles_ = 0;
  bool unit_total_ = false;
  row_params params_;
  bool top_k_on_ = false, filtering_ = false;
  std::vector<float> probs_;
  size_t tiles_ = 0;
  float max_ = 0.0f;
  double total_ = 0.0;
  std::vector<int32_t> positive_;  // tokens with p > 0, the round-1 eligible set
  std::vector<float> initial_;     // its running tile sums, shared by every output of the row
  pivot_index index_;              // count and mass above a pivot, for the accept rules
  std::vector<int32_t> eligible_, narrowed_;  // per-draw scratch: {p > low} in token order
  std::vector<float> later_;
};

}  // namespace

std::unique_ptr<row_sampler> make_dual_pivot(defect planted) {
  return std::make_unique<dual_pivot>(planted, false);
}
std::unique_ptr<row_sampler> make_dual_pivot_topk_first(defect planted) {
  return std::make_unique<dual_pivot>(planted, true);
}

}  // namespace samplecheck::cpu
