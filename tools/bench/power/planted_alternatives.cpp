#include "tools/bench/power/planted_alternatives.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace samplecheck::power_bench {

using std::vector;

double tvd(const vector<double>& a, const vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::fabs(a[i] - b[i]);
  return 0.5 * s;
}

namespace {

void normalise(vector<double>& x) {
  const double s = std::accumulate(x.begin(), x.end(), 0.0);
  for (double& v : x) v /= s;
}

vector<double> zipf(size_t v, double s) {
  vector<double> q(v);
  for (size_t i = 0; i < v; ++i) q[i] = std::pow(static_cast<double>(i + 1), -s);
  normalise(q);
  return q;
}

// The first R tokens of zipf(1.1), R chosen so that the last kept token holds the
// renormalised mass closest to `mass` (a top-p / top-k row whose boundary token is
// that heavy).
size_t cut_rank(const vector<double>& z, double mass) {
  double prefix = 0, best = 1e9;
  size_t r_best = 2;
  for (size_t r = 1; r <= z.size(); ++r) {
    prefix += z[r - 1];
    const double m = z[r - 1] / prefix;
    if (r >= 2 && std::fabs(m - mass) < best) best = std::fabs(m - mass), r_best = r;
  }
  return r_best;
}

vector<double> truncated(const vector<double>& z, size_t r) {
  vector<double> q(z.size(), 0.0);
  std::copy(z.begin(), z.begin() + static_cast<std::ptrdiff_t>(r), q.begin());
  normalise(q);
  return q;
}

// Moves `eps` of mass from the tokens [a0, a1) to [b0, b1), proportionally to q.
vector<double> move_mass(const vector<double>& q, size_t a0, size_t a1, size_t b0, size_t b1,
                         double eps) {
  vector<double> p = q;
  const double from = std::accumulate(q.begin() + a0, q.begin() + a1, 0.0);
  const double to = std::accumulate(q.begin() + b0, q.begin() + b1, 0.0);
  for (size_t i = a0; i < a1; ++i) p[i] -= eps * q[i] / from;
  for (size_t i = b0; i < b1; ++i) p[i] += eps * q[i] / to;
  return p;
}

size_t rank_with_prefix(const vector<double>& q, double mass) {
  double prefix = 0;
  for (size_t i = 0; i < q.size(); ++i)
    if ((prefix += q[i]) >= mass) return i + 1;
  return q.size();
}

// Mass moved between the head (the tokens holding the first half of the mass) and
// the tail (the last 10%), each way.
void plant_head_and_tail(const vector<double>& z, double tau, vector<alternative>& out) {
  const size_t head = rank_with_prefix(z, 0.5), tail = rank_with_prefix(z, 0.9);
  out.push_back({"head -> tail", tau,
                 fmt::format("{:.3g} moved, head {} tokens, tail {}", tau, head, kV - tail), z,
                 move_mass(z, 0, head, tail, kV, tau)});
  out.push_back({"tail -> head", tau, fmt::format("{:.3g} moved", tau), z,
                 move_mass(z, tail, kV, 0, head, tau)});
}

// Defects at the cut of a top-k / top-p row whose boundary token holds about tau.
void plant_cut_defects(const vector<double>& z, double tau, vector<alternative>& out) {
  const size_t r = cut_rank(z, tau);
  const vector<double> q = truncated(z, r);
  vector<double> p = q;
  p[r - 1] += tau;  // the boundary token holds about tau: doubled
  normalise(p);
  out.push_back(
      {"boundary token doubled", tau,
       fmt::format("top-k = {}, token {} q {:.3g} -> {:.3g}", r, r - 1, q[r - 1], p[r - 1]), q, p});
  vector<double> early = q;
  early[r - 1] = 0;
  normalise(early);
  out.push_back(
      {"top-p cut 1 early", tau,
       fmt::format("top-p keeps {} tokens, drops token {} (q {:.3g})", r, r - 1, q[r - 1]), q,
       early});
  const size_t r_late = cut_rank(z, tau) - 1;  // the row whose next token holds about tau
  const vector<double> q_late = truncated(z, r_late);
  const vector<double> late = truncated(z, r_late + 1);
  out.push_back(
      {"top-p cut 1 late", tau,
       fmt::format("top-p keeps {} tokens, adds token {} (p {:.3g})", r_late, r_late, late[r_late]),
       q_late, late});
}

// Temperature T > 1 on the logits of zipf(1.1): p ~ q^(1/T), T solved for the TVD.
alternative plant_temperature(const vector<double>& z, double tau) {
  double lo = 1.0, hi = 1.5;
  vector<double> p;
  for (int it = 0; it < 60; ++it) {
    const double t = 0.5 * (lo + hi);
    p.resize(kV);
    for (size_t i = 0; i < kV; ++i) p[i] = std::pow(z[i], 1.0 / t);
    normalise(p);
    (tvd(z, p) < tau ? lo : hi) = t;
  }
  vector<double> two_percent(kV);
  for (size_t i = 0; i < kV; ++i) two_percent[i] = std::pow(z[i], 1.0 / 1.02);
  normalise(two_percent);
  return {"temperature off", tau,
          fmt::format("T = {:.5f} (T = 1.02 gives TVD {:.4f})", lo, tvd(z, two_percent)), z, p};
}

// Four tied tokens (ranks 1-4, their mean mass); tau moved from the last to the first.
alternative plant_tie_bias(const vector<double>& z, double tau) {
  vector<double> q = z;
  const double mean = (q[1] + q[2] + q[3] + q[4]) / 4;
  for (size_t i = 1; i <= 4; ++i) q[i] = mean;
  vector<double> p = q;
  p[1] += tau;
  p[4] -= tau;
  return {"ties to one side", tau,
          fmt::format("4 tokens of q {:.3g}, first +{:.3g}, last -{:.3g}", mean, tau, tau), q, p};
}

// A 24-bit uniform never selects a token below 2^-24: the row's tail holds M such
// tokens (each 0.99 * 2^-24) carrying tau, or as much as V allows.
alternative plant_noise_floor(double tau) {
  const double each = 0.99 * std::ldexp(1.0, -24);
  const size_t m = std::min<size_t>(static_cast<size_t>(tau / each), kV - 1000);
  vector<double> q(kV);
  const vector<double> head = zipf(kV - m, 1.1);
  for (size_t i = 0; i < kV - m; ++i) q[i] = head[i] * (1.0 - each * static_cast<double>(m));
  for (size_t i = kV - m; i < kV; ++i) q[i] = each;
  vector<double> p = q;
  for (size_t i = kV - m; i < kV; ++i) p[i] = 0;
  normalise(p);
  return {"24-bit noise floor", tau, fmt::format("{} tokens below 2^-24 hold {:.3g}", m, each * m),
          q, p};
}

}  // namespace

vector<alternative> planted(double tau) {
  vector<alternative> out;
  const vector<double> z = zipf(kV, 1.1);
  plant_head_and_tail(z, tau, out);
  plant_cut_defects(z, tau, out);
  out.push_back(plant_temperature(z, tau));
  out.push_back(plant_tie_bias(z, tau));
  out.push_back(plant_noise_floor(tau));
  return out;
}

}  // namespace samplecheck::power_bench
