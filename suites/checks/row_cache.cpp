#include "suites/checks/row_cache.h"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "suites/battery/rows_ahead.h"

namespace samplecheck::checks {
namespace {

namespace ahead = battery::rows_ahead;

// Everything make_rows reads: the descriptor (kind, filters, order, tie rule), the dtype,
// the spec's fields, floats by their bits.
std::string row_key(const battery::subject& s, const row_spec& r) {
  const auto& o = r.options;
  const auto& f = r.setting;
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{:a}|{}|{}|{:a}|{:a}|{:a}",
                     static_cast<const void*>(s.sampler), static_cast<int>(s.input_dtype),
                     r.with_reference, static_cast<int>(r.shape), o.vocab_size, o.seed, o.tie_k,
                     o.min_normal, o.mantissa_bits, f.top_k, f.top_p, f.min_p, f.temperature);
}

struct store {
  std::mutex mutex;
  std::map<std::pair<uint64_t, std::string>, judged_row> rows;  // (generation, key)
  uint64_t taken = 0;

  // Rows of generations before `oldest` are for runs that have ended or will never ask. (A row
  // built for a check that never takes it waits until a later check takes its own: the
  // builder keeps only a few checks' rows ahead, suites/battery/runner.cpp.)
  void drop_before(uint64_t oldest) {
    rows.erase(rows.begin(), rows.lower_bound({oldest, std::string()}));
  }
};

store& the_store() {
  static store s;
  return s;
}

}  // namespace

std::optional<judged_row> take_row_ahead(const battery::subject& s, const row_spec& spec) {
  if (ahead::running == 0) return std::nullopt;
  store& st = the_store();
  const std::lock_guard lock(st.mutex);
  st.drop_before(ahead::running);
  const auto it = st.rows.find({ahead::running, row_key(s, spec)});
  if (it == st.rows.end()) return std::nullopt;
  judged_row row = std::move(it->second);
  st.rows.erase(it);
  ++st.taken;
  return row;
}

void keep_row_ahead(const battery::subject& s, const row_spec& spec, const judged_row& row) {
  if (ahead::building == 0) return;
  store& st = the_store();
  std::string key = row_key(s, spec);
  const std::lock_guard lock(st.mutex);
  st.rows.insert_or_assign({ahead::building, std::move(key)}, row);
}

size_t rows_ahead_kept() {
  store& st = the_store();
  const std::lock_guard lock(st.mutex);
  return st.rows.size();
}

uint64_t rows_ahead_taken() {
  store& st = the_store();
  const std::lock_guard lock(st.mutex);
  return st.taken;
}

}  // namespace samplecheck::checks
