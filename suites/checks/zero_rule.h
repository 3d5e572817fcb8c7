// degenerate_rows under treat_as_zero (kernels/samplecheck_plugin.h, ABI 1.5): the tokens a
// degenerate row may draw, and the check's draws of each degenerate row. A subject that
// declares top-k is also drawn at top_k = 50, because a sampler may send filtered rows down
// another route (FlashInfer's cake sampler: the frozen kernels for k <= 1024, its older
// sampler without top-k), and the contract holds on every route.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "suites/battery/check.h"
#include "suites/checks/sampling.h"

namespace samplecheck::checks {

bool treats_as_zero(const battery::subject& s);

// Empty when an output of the degenerate row keeps the rule; else what broke it. The rule:
// the reference at the row's setting over the row as the contract reads it (zero_rule.cpp).
std::string zero_rule_breach(const battery::subject& s, const judged_row& row, bool valid,
                             int32_t token);

// A breach that drew a token the rule gives probability 0, as the record's evidence: the
// token, the row's parameters, and the row with the rule's tokens IN (at the rule's
// probabilities) and every other OUT, so that a standalone script judges its draws as it
// judges a support failure (docs/repro-format.md). Empty for a breach of the valid flag.
nlohmann::json zero_rule_evidence(const battery::subject& s, const judged_row& row, size_t index,
                                  uint64_t draws, bool valid, int32_t token);

// The outputs judge_zero_rule draws for `cases` degenerate rows (0 without the contract).
uint64_t zero_rule_outputs(const battery::subject& s, size_t cases);

// Every degenerate row drawn 256 times in one call a setting, each output judged exactly by
// the rule; false (with `out` the exact failure) at the first output that breaks it.
bool judge_zero_rule(const battery::check_context& ctx, const std::vector<judged_row>& bad,
                     uint64_t seed, battery::check_outcome& out);

// What a pass under treat_as_zero says of the degenerate rows.
std::string zero_rule_kept(const battery::subject& s);

}  // namespace samplecheck::checks
