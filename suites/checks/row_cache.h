// The rows built ahead of their check (suites/battery/rows_ahead.h), keyed by what makes a
// row: the subject's descriptor and dtype, the fixture's shape, options and setting, and
// whether it carries a reference. A row is the same whichever thread builds it, so taking
// one changes nothing but the time a check spends building its rows.
#pragma once

#include <optional>

#include "suites/checks/sampling.h"

namespace samplecheck::checks {

// The row built ahead for the check this thread runs, removed from the store; none when it
// was not built (or this thread runs no check that rows were built for).
std::optional<judged_row> take_row_ahead(const battery::subject& s, const row_spec& spec);
// Keeps a copy of `row` for the check this thread builds rows for; nothing on other threads.
void keep_row_ahead(const battery::subject& s, const row_spec& spec, const judged_row& row);
// Rows kept and not (yet) taken, and rows taken since the process began: for the tests.
size_t rows_ahead_kept();
uint64_t rows_ahead_taken();

}  // namespace samplecheck::checks
