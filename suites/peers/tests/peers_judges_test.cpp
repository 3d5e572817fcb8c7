// Each peer rule passes an exact sample and fails a planted deviation, at the
// peer's own sample count. Exact samples are Philox draws with fixed seeds, so the
// outcomes are deterministic; the margins quoted say why the fixed seed is not luck.
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "suites/peers/peer_judges.h"
#include "suites/peers/peer_runner.h"

using namespace samplecheck::peers;

namespace {

// softmax(scale * z) for a fixed pseudo-random z: a smooth row with no zero token.
std::vector<double> softmax_row(int64_t vocab, double scale, uint64_t seed) {
  const sample_tally shape =
      draw_exact(std::vector<double>(static_cast<size_t>(vocab), 1.0), 20 * vocab, seed);
  std::vector<double> p(static_cast<size_t>(vocab));
  double total = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    // counts around 20 +- 4.5: a standardised value in about [-3, 3]
    const double z = (static_cast<double>(shape.counts[i]) - 20.0) / std::sqrt(20.0);
    total += p[i] = std::exp(scale * z);
  }
  for (double& x : p) x /= total;
  return p;
}

std::vector<double> drop_token(std::vector<double> p, size_t token) {
  p[token] = 0;
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= total;
  return p;
}

size_t largest(const std::vector<double>& p) {
  return static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin());
}

}  // namespace

TEST_CASE("FlashInfer rule at 5,000,000 samples, V = 111") {
  const std::vector<double> p = softmax_row(111, 1.0, 11);
  const std::vector<uint8_t> all(111, 1);

  SECTION("an exact sample passes: cosine is within 1e-3 of 1, the threshold is 0.99") {
    const peer_verdict v = flashinfer_judge(draw_exact(p, kFlashInferSamples, 1), p, all);
    CHECK(v.passed);
    CHECK(v.statistic > 0.999);
  }
  SECTION("a single sample outside the support mask fails") {
    std::vector<uint8_t> mask = all;
    mask[5] = 0;
    sample_tally t = draw_exact(drop_token(p, 5), kFlashInferSamples, 2);
    CHECK(flashinfer_judge(t, p, mask).passed);
    t.counts[5] = 1;
    const peer_verdict v = flashinfer_judge(t, p, mask);
    CHECK_FALSE(v.passed);
    CHECK(v.reason.find("outside the mask") != std::string::npos);
  }
  SECTION("probabilities squared and renormalised (temperature 1/2) fail the cosine") {
    std::vector<double> q = p;  // for z ~ N(0, 1) the cosine of p and p^2 is near e^-0.5
    for (double& x : q) x *= x;
    const double total = std::accumulate(q.begin(), q.end(), 0.0);
    for (double& x : q) x /= total;
    const peer_verdict v = flashinfer_judge(draw_exact(q, kFlashInferSamples, 3), p, all);
    CHECK_FALSE(v.passed);
    CHECK(v.statistic < 0.99);
  }
  SECTION("an id outside [0, V) or a missing token fails before any statistic") {
    sample_tally t = draw_exact(p, 1000, 4);
    t.out_of_range = 1;
    CHECK_FALSE(flashinfer_judge(t, p, all).passed);
    t.out_of_range = 0;
    t.invalid = 1;
    CHECK_FALSE(flashinfer_judge(t, p, all).passed);
  }
  SECTION("blind spot, documented: a token of 1-3% mass never sampled still passes") {
    // Its absence moves the cosine by about p_i^2 / (2 |p|^2) < 0.01, and the mask
    // (probability > 0) allows every other token, so nothing in the rule objects.
    size_t victim = p.size();
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i] > 0.01 && p[i] < 0.03) victim = i;
    REQUIRE(victim < p.size());
    const peer_verdict v =
        flashinfer_judge(draw_exact(drop_token(p, victim), kFlashInferSamples, 5), p, all);
    CAPTURE(p[victim], v.statistic);
    CHECK(v.passed);
  }
}

TEST_CASE("vLLM rule at 50,000 samples, V = 32") {
  std::vector<double> p = softmax_row(32, 2.0, 21);
  p[7] = 0;  // a filtered token
  p = drop_token(p, 7);

  SECTION("an exact sample passes") {
    const peer_verdict v = vllm_judge(draw_exact(p, kVllmSamples, 1), p);
    CHECK(v.passed);
    CHECK(v.cells == 31);
    CHECK(v.p_value > 1e-3);  // a false alarm needs p < 1e-6; this seed is nowhere near
  }
  SECTION("one sample on a zero-probability token fails the hard support check") {
    sample_tally t = draw_exact(p, kVllmSamples, 2);
    t.counts[7] = 1;
    CHECK_FALSE(vllm_judge(t, p).passed);
  }
  SECTION("a dropped token of at least 1% mass fails the chi-square") {
    std::vector<double> q = p;
    size_t victim = 0;
    for (size_t i = 0; i < q.size(); ++i)
      if (q[i] > 0.01 && q[i] < 0.05) victim = i;
    REQUIRE(q[victim] > 0.01);
    const peer_verdict v = vllm_judge(draw_exact(drop_token(q, victim), kVllmSamples, 3), p);
    CHECK_FALSE(v.passed);
    CHECK(v.p_value < 1e-6);
  }
  SECTION("a support of one token is their degenerate case: the hard check alone decides") {
    std::vector<double> one(32, 0.0);
    one[3] = 1.0;
    CHECK(vllm_judge(draw_exact(one, kVllmSamples, 4), one).passed);
  }
}

TEST_CASE("PyTorch _check_sampler_discrete rule at 10,000 samples") {
  const std::vector<double> p = softmax_row(32, 2.0, 31);

  SECTION("a single cell fails, as scipy's NaN p-value at df = 0 does") {
    std::vector<double> one(32, 0.0);
    one[3] = 1.0;
    const peer_verdict v = pytorch_judge(draw_exact(one, kPytorchSamples, 4), one);
    CHECK_FALSE(v.passed);
    CHECK(v.cells == 1);
    CHECK(v.reason.find("single cell") != std::string::npos);
  }

  SECTION("an exact sample passes") {
    const peer_verdict v = pytorch_judge(draw_exact(p, kPytorchSamples, 1), p);
    CHECK(v.passed);
    CHECK(v.p_value > 0.01);  // the threshold is 1e-3
  }
  SECTION("the largest token sampled 1.3x too often fails") {
    std::vector<double> q = p;
    q[largest(q)] *= 1.3;
    const double total = std::accumulate(q.begin(), q.end(), 0.0);
    for (double& x : q) x /= total;
    REQUIRE(p[largest(p)] > 0.1);
    const peer_verdict v = pytorch_judge(draw_exact(q, kPytorchSamples, 2), p);
    CHECK_FALSE(v.passed);
  }
  SECTION("a flat row over 4,096 tokens is too sparse for the rule: it fails, as theirs would") {
    const std::vector<double> flat(4096, 1.0 / 4096);
    const peer_verdict v = pytorch_judge(draw_exact(flat, kPytorchSamples, 3), flat);
    CHECK_FALSE(v.passed);
    CHECK(v.reason.find("too sparse") != std::string::npos);
  }
  SECTION("blind spot, documented: a token that never appears is outside the test") {
    // Only observed values enter, renormalised: dropping a 5%+ token leaves the
    // others exactly proportional, so the rule passes a sampler that never returns it.
    const size_t top = largest(p);
    REQUIRE(p[top] > 0.05);
    CHECK(pytorch_judge(draw_exact(drop_token(p, top), kPytorchSamples, 4), p).passed);
    // vLLM's rule on the same kind of sample does see it.
    CHECK_FALSE(vllm_judge(draw_exact(drop_token(p, top), kVllmSamples, 4), p).passed);
  }
}

TEST_CASE("judges refuse a tally and a distribution of different lengths") {
  const std::vector<double> p(10, 0.1);
  const sample_tally t(11);
  CHECK_THROWS_AS(vllm_judge(t, p), std::invalid_argument);
  CHECK_THROWS_AS(pytorch_judge(t, p), std::invalid_argument);
  CHECK_THROWS_AS(flashinfer_judge(t, p, std::vector<uint8_t>(10, 1)), std::invalid_argument);
}
