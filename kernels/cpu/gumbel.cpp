// Gumbel-max, in the two spellings SGLang v0.5.20 carries:
//   probs:  q_i ~ Exp(1), clamped to FLT_MIN; token = argmax p_i / q_i
//   logits: G_i = -log(q_i);                  token = argmax (z_i - max z) / T + G_i
// with q_i = -log1p(-v_i), v_i = uniform_fine_near_zero (reference/uniform.h says why
// not -log(u_i): a 24-bit u truncates the tail). Token i takes stream output
// offset + i in both, so on the same stream the two spellings see the same v_i and
// must pick the same token (the spelling-agreement check). All arithmetic is float,
// as torch does it on a float32 tensor.
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernels/cpu/subjects.h"
#include "reference/uniform.h"

namespace samplecheck::cpu {
namespace {

// v = 1 - u, the fraction whose -log1p(-v) is Exp(1). The correct v is in (0, 1), so
// q > 0 and -log(q) is finite. S05 spells q = -log(u) with curand_uniform's (0, 1] u
// and nothing guards u = 1. The real rate of u == 1.0f is 2^-25 per token (raw >=
// 0xffffff80); the mutant amplifies it to 2^-10 by treating every raw value whose
// top 10 bits are all set as 0xffffffff. The mechanism is unchanged: u = 1 -> v = 0
// -> q = 0 -> an infinite (or, after the FLT_MIN clamp, enormous) key for whichever
// token drew it.
//
// S23 (vLLM #51367 before its 32-bit fix): a hash's 32 bits cut to 24, v = (x >> 8 +
// 0.5) / 2^24, so v >= 2^-25 and the noise -log(-log1p(-v)) never exceeds 17.3 (the
// host's reaches 22.9): a token 17.3 nats below the top wins only if the top's noise is
// below 0, one 19 nats below only if it is below -1.7 (a chance of 0.5%) and the token
// drew one of the two smallest v (2^-24 each). (Capped below 1: rounding would give -Inf.)
float token_fraction(uint32_t raw, defect planted) {
  if (planted == defect::S23) {
    const float v = (static_cast<float>(raw >> 8) + 0.5f) * 5.9604644775390625e-8f;  // 2^-24
    return v < 0.99999994039535522f ? v : 0.99999994039535522f;                      // 1 - 2^-24
  }
  if (planted != defect::S05) return uniform_fine_near_zero(raw);
  if ((raw >> 22) == 0x3ffu) raw = 0xffffffffu;
  return 1.0f - curand_uniform_from_bits(raw);
}

// Most tokens cannot beat the running best key, and proving so is cheaper than the
// logarithm: q = -log1p(-v) >= v, so v >= x * margin implies the token's key is at
// most best / margin, where x is what the token needs (probs: p / best; logits:
// exp(s - best)). The margins cover the float rounding of the logarithms, the
// division and the sum (probs: under 2e-7 relative; logits: under 1e-5 + 3e-7 * (|s| +
// 20) absolute, see below), so a skipped token's float key is never above the best and
// the argmax is bit for bit the one the full loop finds (tests/stream_oracle_test.cpp).
constexpr double kProbsMargin = 1.0 + 1e-6;

// Round to nearest even bf16, kept as a float (X05's and X10's low-precision casts).
float round_to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}

class gumbel_probs final : public row_sampler {
 public:
  explicit gumbel_probs(defect planted) : planted_(planted) {}
  bool prepare(std::vector<float>& row, const row_params&) override {
    probs_.swap(row);
    return true;
  }
  draw_result draw(philox_stream& stream) override {
    // Starting at 0 rather than below it keeps zero-probability tokens out even when
    // every key is 0 (p / q underflowing on an all-subnormal row makes the row invalid).
    int32_t best = -1;
    float best_key = 0.0f;
    double inverse_best = INFINITY;  // no skipping until a first key is in hand
    for (size_t i = 0; i < probs_.size(); ++i) {
      const float v = token_fraction(stream.next(), planted_);
      if (v >= probs_[i] * inverse_best * kProbsMargin) continue;  // never skips v == 0 (S05)
      const float q = std::fmax(-std::log1p(-v), FLT_MIN);
      const float key = probs_[i] / q;
      if (key > best_key) {  // strict: ties go to the lowest index, as torch.argmax
        best_key = key;
        best = static_cast<int32_t>(i);
        inverse_best = 1.0 / key;
      }
    }
    return {best, best >= 0};
  }

 private:
  defect planted_;
  std::vector<float> probs_;
};

class gumbel_logits final : public row_sampler {
 public:
  explicit gumbel_logits(defect planted) : planted_(planted) {}

  bool prepare(std::vector<float>& row, const row_params& params) override {
    scaled_.swap(row);
    greedy_ = params.temperature == 0.0f;
    if (greedy_) {
      greedy_token_ = 0;
      for (size_t i = 1; i < scaled_.size(); ++i)
        if (scaled_[i] > scaled_[greedy_token_]) greedy_token_ = static_cast<int32_t>(i);
      return true;
    }
    if (planted_ == defect::S15) {
      // S15: the port divides the *probabilities* by T: log(softmax(z)_i / T). After
      // the log that is a constant shift of every key, so the temperature silently
      // does nothing and the subject samples softmax(z) instead of softmax(z / T).
      float max = -INFINITY;
      for (const float z : scaled_) max = std::fmax(max, z);
      float sum = 0.0f;
      for (float& z : scaled_) sum += (z = std::exp(z - max));
      for (float& z : scaled_) z = std::log(z / sum / params.temperature);
    } else {
      // (z - max z) / T: the same softmax as z / T, with the winner at 0 and the rest at
      // most 0. Unshifted (S19, and SGLang's z / T), a logit of magnitude 2^24 has a
      // float ulp of 2, so the Gumbel noise added to it is absorbed in rounding and
      // tied or near-tied top logits break towards the lower id instead of evenly;
      // a tiny T would also overflow z / T to +Inf.
      float max_logit = -INFINITY;
      for (const float z : scaled_) max_logit = std::fmax(max_logit, z);
      const bool shift = planted_ != defect::S19 && planted_ != defect::X05;
      for (float& z : scaled_)
        z = shift ? (z - max_logit) / params.temperature : z / params.temperature;
    }
    weigh();
    return true;
  }

  draw_result draw(philox_stream& stream) override {
    if (greedy_) return {greedy_token_, true};
    int32_t best = -1;
    float best_key = -INFINITY;
    double scale = INFINITY;  // exp(max s - best_key); infinite: no skipping yet
    for (size_t i = 0; i < scaled_.size(); ++i) {
      const float v = token_fraction(stream.next(), planted_);
      // Rounding of -log(-log1p(-v)) and of s + G stays under this absolute bound.
      // (X05's bf16 keys and X10's bf16 noise round by up to 2^-8 of |key| or |G|.)
      const bool bf16 = planted_ == defect::X05 || planted_ == defect::X10;
      const double rounding =
          1e-5 + (bf16 ? 8e-3 : 3e-7) * (std::fabs(scaled_[i]) + std::fabs(best_key) + 20.0);
      if (v >= weight_[i] * scale * (1.0 + 2.0 * rounding)) continue;  // never skips v == 0 (S05)
      float key = scaled_[i] - std::log(-std::log1p(-v));
      // X10: the noise alone in bf16 (gumbel.to(bf16)) at ordinary logits: the top noise
      // of a row of 32,000 is about 10 (ulp 1/16), so the two largest of a large tie
      // group round together on about 3% of draws and the strict > hands it the lower id.
      if (planted_ == defect::X10) key = scaled_[i] + round_to_bf16(-std::log(-std::log1p(-v)));
      // X05: logits, noise and key in bf16 (logits.to(bf16) + gumbel.to(bf16)): at raw
      // logit magnitudes (|z| ~ 128, ulp 1) tied logits tie in the key on about half the
      // draws, and the strict > below hands every such tie to the lower id.
      if (planted_ == defect::X05)
        key = round_to_bf16(scaled_[i] + round_to_bf16(-std::log(-std::log1p(-v))));
      if (key > best_key) {
        best_key = key;
        best = static_cast<int32_t>(i);
        scale = std::exp(static_cast<double>(max_scaled_) - best_key);
      }
    }
    // Every finite logit gives a finite key, and decode_row guarantees one exists.
    return {best, best >= 0};
  }

 private:
  // exp(s_i - max s) in double, so exp(s_i - best) = weight_[i] * exp(max s - best)
  // costs one multiplication per token.
  void weigh() {
    max_scaled_ = -INFINITY;
    for (const float s : scaled_) max_scaled_ = std::fmax(max_scaled_, s);
    weight_.resize(scaled_.size());
    for (size_t i = 0; i < scaled_.size(); ++i)
      weight_[i] = std::exp(static_cast<double>(scaled_[i]) - max_scaled_);
  }

  defect planted_;
  std::vector<float> scaled_;
  std::vector<double> weight_;
  float max_scaled_ = 0.0f;
  bool greedy_ = false;
  int32_t greedy_token_ = 0;
};

}  // namespace

std::unique_ptr<row_sampler> make_gumbel_probs(defect planted) {
  return std::make_unique<gumbel_probs>(planted);
}
std::unique_ptr<row_sampler> make_gumbel_logits(defect planted) {
  return std::make_unique<gumbel_logits>(planted);
}

}  // namespace samplecheck::cpu
