#include "kernels/matmul/cpu_emulation.h"

#include <algorithm>
#include <array>
#include <random>
#include <vector>

#include "reference/numeric.h"

namespace samplecheck::matmul {
namespace {

using lane_sums = std::array<float, kReductionLanes>;

// A row widened to float twice: as stored, and with every whole 256-element
// round starting at a multiple of 256 transposed to [element][lane], so the
// 32 lane chains of a round are contiguous and the compiler vectorises across
// lanes without changing any lane's order of additions.
struct widened_row {
  const float* plain;
  const float* by_lane;
};

void widen_row(const uint16_t* bits, int64_t k, float* plain, float* by_lane) {
  for (int64_t i = 0; i < k; ++i) plain[i] = bf16_to_float(bits[i]);
  const int64_t whole = k / kLaneRound * kLaneRound;
  for (int64_t round = 0; round < whole; round += kLaneRound)
    for (int l = 0; l < kReductionLanes; ++l)
      for (int e = 0; e < kChunk; ++e)
        by_lane[round + e * kReductionLanes + l] = plain[round + l * kChunk + e];
}

// Adds the products of [begin, end) into the lane sums, lane l taking the chunks
// at begin + 8 l + 256 t, each chunk in increasing k.
void accumulate_lanes(const widened_row& a, const widened_row& w, int64_t begin, int64_t end,
                      lane_sums& lanes) {
  int64_t round = begin;
  if (begin % kLaneRound == 0) {
    // A local copy the loads cannot alias, so the lane loop vectorises.
    float acc[kReductionLanes];
    for (int l = 0; l < kReductionLanes; ++l) acc[l] = lanes[l];
    for (; round + kLaneRound <= end; round += kLaneRound) {
      const float* ar = a.by_lane + round;
      const float* wr = w.by_lane + round;
      for (int e = 0; e < kChunk; ++e)
        for (int l = 0; l < kReductionLanes; ++l)
          acc[l] = acc[l] + ar[e * kReductionLanes + l] * wr[e * kReductionLanes + l];
    }
    for (int l = 0; l < kReductionLanes; ++l) lanes[l] = acc[l];
  }
  for (; round < end; round += kLaneRound)
    for (int l = 0; l < kReductionLanes; ++l)
      for (int e = 0; e < kChunk; ++e) {
        const int64_t i = round + int64_t{l} * kChunk + e;
        if (i < end) lanes[l] = lanes[l] + a.plain[i] * w.plain[i];
      }
}

// The xor butterfly of the GPU shuffles; every lane ends with the same value
// because addition is commutative, and lane 0's is returned.
float butterfly(lane_sums v, bool ascending) {
  for (int step = 0; step < 5; ++step) {
    const int distance = ascending ? (1 << step) : (16 >> step);
    lane_sums next;
    for (int l = 0; l < kReductionLanes; ++l) next[l] = v[l] + v[l ^ distance];
    v = next;
  }
  return v[0];
}

struct output_value {
  std::array<float, kMaxSegments> partials{};
  float total = 0.0f;
};

output_value reduce_one(const reduction_plan& plan, const widened_row& a, const widened_row& w,
                        int64_t k) {
  output_value result;
  lane_sums lanes{};
  for (int32_t s = 0; s < plan.num_segments; ++s) {
    const int64_t begin = std::min<int64_t>(int64_t{s} * plan.segment_length, k);
    const int64_t end = std::min<int64_t>(begin + plan.segment_length, k);
    lanes.fill(0.0f);
    accumulate_lanes(a, w, begin, end, lanes);
    const float p = butterfly(lanes, plan.butterfly_ascending);
    result.partials[s] = plan.round_partials ? bf16_to_float(float_to_bf16(p)) : p;
    result.total = s == 0 ? p : result.total + p;
  }
  return result;
}

}  // namespace

void emulate_matmul(const reduction_plan& plan, int64_t m, int64_t n, int64_t k, const uint16_t* a,
                    const uint16_t* weight, const uint16_t* bias, uint16_t* out,
                    uint64_t arrival_seed) {
  // Blocks of rows and columns widened to float once per block pair.
  constexpr int64_t kBlock = 32;
  const auto size = static_cast<size_t>(kBlock * k);
  std::vector<float> a_plain(size), a_lane(size), w_plain(size), w_lane(size);
  std::mt19937_64 arrival(arrival_seed);
  std::array<int, kMaxSegments> order{};
  for (int64_t n0 = 0; n0 < n; n0 += kBlock) {
    const int64_t n_count = std::min(kBlock, n - n0);
    for (int64_t c = 0; c < n_count; ++c)
      widen_row(weight + (n0 + c) * k, k, &w_plain[c * k], &w_lane[c * k]);
    for (int64_t m0 = 0; m0 < m; m0 += kBlock) {
      const int64_t m_count = std::min(kBlock, m - m0);
      for (int64_t r = 0; r < m_count; ++r)
        widen_row(a + (m0 + r) * k, k, &a_plain[r * k], &a_lane[r * k]);
      for (int64_t r = 0; r < m_count; ++r)
        for (int64_t c = 0; c < n_count; ++c) {
          const output_value v = reduce_one(plan, {&a_plain[r * k], &a_lane[r * k]},
                                            {&w_plain[c * k], &w_lane[c * k]}, k);
          const float b = bias != nullptr ? bf16_to_float(bias[n0 + c]) : 0.0f;
          float total = v.total;
          if (plan.split && plan.atomic_reduce) {
            // atomicAdd into a zeroed accumulator, partials in arrival order.
            for (int s = 0; s < plan.num_segments; ++s) order[s] = s;
            std::shuffle(order.begin(), order.begin() + plan.num_segments, arrival);
            total = 0.0f;
            for (int s = 0; s < plan.num_segments; ++s) total = total + v.partials[order[s]];
          } else if (plan.split) {
            // The reduce kernel: partials as stored, in segment order.
            total = plan.bias_in_partial0 ? v.partials[0] + b : v.partials[0];
            for (int s = 1; s < plan.num_segments; ++s) total = total + v.partials[s];
          }
          if (bias != nullptr && !(plan.split && plan.bias_in_partial0)) total = total + b;
          out[(m0 + r) * n + n0 + c] = float_to_bf16(total);
        }
    }
  }
}

}  // namespace samplecheck::matmul
