// Holm's step-down on worked examples, computed by hand in the comments.
#include <catch2/catch.hpp>
#include <cmath>
#include <stdexcept>

#include "suites/stats/holm_budget.h"

using samplecheck::stats::holm_budget;

TEST_CASE("holm: textbook example rejects exactly the first two steps") {
  // p = 0.01, 0.04, 0.03, 0.005 at alpha 0.05, equal weights. Sorted: 0.005 <= 0.05/4 =
  // 0.0125 reject; 0.01 <= 0.05/3 = 0.01667 reject; 0.03 > 0.05/2 = 0.025 stop. So checks
  // a (0.01) and d (0.005) are rejected, b and c are not, and c and b both sit at 0.025.
  holm_budget budget(0.05);
  const double p[] = {0.01, 0.04, 0.03, 0.005};
  const char* names[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) budget.record(budget.declare(names[i]), p[i]);
  for (int i = 0; i < 4; ++i) CHECK(budget.planning_alpha(i) == Approx(0.0125).epsilon(1e-12));
  const auto d = budget.decide();
  REQUIRE(d.size() == 4);
  CHECK(d[0].rejected);
  CHECK_FALSE(d[1].rejected);
  CHECK_FALSE(d[2].rejected);
  CHECK(d[3].rejected);
  // Shares are ratios of small integers times alpha: exact up to a few ulps.
  CHECK(d[3].alpha_share == Approx(0.05 / 4).epsilon(1e-12));
  CHECK(d[0].alpha_share == Approx(0.05 / 3).epsilon(1e-12));
  CHECK(d[2].alpha_share == Approx(0.05 / 2).epsilon(1e-12));
  CHECK(d[1].alpha_share == Approx(0.05 / 2).epsilon(1e-12));
  CHECK(d[1].name == "b");
}

TEST_CASE("holm: weights change the order and the levels") {
  // w = (3, 1), p = (0.04, 0.02), alpha 0.05. p / w = 0.0133, 0.02: check x goes first at
  // 3/4 * 0.05 = 0.0375; 0.04 > 0.0375, stop: nothing rejected. (Unweighted Holm would
  // reject both: 0.02 <= 0.025, then 0.04 <= 0.05.)
  holm_budget budget(0.05);
  const int x = budget.declare("x", 3.0), y = budget.declare("y", 1.0);
  CHECK(budget.planning_alpha(x) == Approx(0.0375).epsilon(1e-12));
  CHECK(budget.planning_alpha(y) == Approx(0.0125).epsilon(1e-12));
  budget.record(x, 0.04);
  budget.record(y, 0.02);
  auto d = budget.decide();
  CHECK_FALSE(d[0].rejected);
  CHECK_FALSE(d[1].rejected);
  CHECK(d[0].alpha_share == Approx(0.0375).epsilon(1e-12));
  CHECK(d[1].alpha_share == Approx(0.0125).epsilon(1e-12));

  // p = (0.03, 0.04): x at 0.0375 rejected, then y alone at 0.05: rejected.
  holm_budget second(0.05);
  second.record(second.declare("x", 3.0), 0.03);
  second.record(second.declare("y", 1.0), 0.04);
  d = second.decide();
  CHECK(d[0].rejected);
  CHECK(d[1].rejected);
  CHECK(d[1].alpha_share == Approx(0.05).epsilon(1e-12));
}

TEST_CASE("holm: a skipped check leaves the family") {
  // Three declared, one skipped: the two left are tested as a family of two.
  // p = 0.02, 0.04: 0.02 <= 0.025 reject, 0.04 <= 0.05 reject.
  holm_budget budget(0.05);
  const int a = budget.declare("a"), b = budget.declare("b"), c = budget.declare("c");
  budget.record(a, 0.02);
  budget.skip(b, "subject has no top-k");
  budget.record(c, 0.04);
  const auto d = budget.decide();
  CHECK(d[0].rejected);
  CHECK(d[1].skipped);
  CHECK_FALSE(d[1].rejected);
  CHECK(std::isnan(d[1].p_value));
  CHECK(d[2].rejected);
}

TEST_CASE("holm: bad use is an error naming the check") {
  holm_budget budget;
  CHECK(budget.total_alpha() == 1e-6);
  const int a = budget.declare("support");
  CHECK_THROWS_AS(budget.declare("support"), std::invalid_argument);
  CHECK_THROWS_AS(budget.declare("w", 0.0), std::invalid_argument);
  CHECK_THROWS_AS(budget.record(a, 1.5), std::invalid_argument);
  CHECK_THROWS_AS(budget.record(a, std::nan("")), std::invalid_argument);
  CHECK_THROWS_AS(budget.record(7, 0.5), std::out_of_range);
  CHECK_THROWS_WITH(budget.decide(), Catch::Contains("support"));
  budget.record(a, 0.5);
  CHECK_THROWS_AS(budget.record(a, 0.5), std::logic_error);
  CHECK_THROWS_AS(holm_budget(0.0), std::invalid_argument);
}
