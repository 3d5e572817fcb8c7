#include "suites/matmul/matmul_testbed.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "reference/matmul_reference.h"
#include "reference/numeric.h"
#include "reference/philox.h"
#include "reference/uniform.h"
#include "suites/harness/bitwise.h"

namespace samplecheck::matmul_suite {
namespace {

constexpr int64_t kProbes = 3;  // pool rows 0..2 are the probes, filler rows follow
constexpr const char* kProbePlace[kProbes] = {"first", "last", "middle"};

// Operand element i = scale * (2u - 1), u from Philox stream (seed, operand), in [-scale, scale).
std::vector<uint16_t> random_operand(uint64_t seed, uint64_t operand, int64_t count, float scale) {
  std::vector<uint16_t> values(static_cast<size_t>(count));
  philox_stream stream(seed, operand, 0);
  for (auto& v : values) v = float_to_bf16(scale * (2.0f * uniform_open_one(stream.next()) - 1.0f));
  return values;
}

using harness::bits_hex;
using harness::first_difference;

bool is_nan_bits(uint16_t b) { return (b & 0x7fffu) > 0x7f80u; }

// Empty when the row is usable as a reference; else why not.
std::string trivial_row_reason(const uint16_t* row, int64_t n) {
  bool any_nonzero = false;
  for (int64_t c = 0; c < n; ++c) {
    if (is_nan_bits(row[c]))
      return fmt::format("column {} is NaN or unwritten (0x{:04x})", c, row[c]);
    any_nonzero = any_nonzero || (row[c] & 0x7fffu) != 0;
  }
  return any_nonzero ? std::string() : std::string("every output is zero");
}

std::string mismatch_text(int64_t column, uint16_t expected, uint16_t actual) {
  return fmt::format("column {}: expected {}, got {} ({} ULP)", column, bits_hex(expected),
                     bits_hex(actual), bf16_ulp_distance(expected, actual));
}

// Where one batch size's outputs differ from M = 1, for the report: how many outputs and
// rows, the first few batch rows, and the differing outputs per band of output columns.
class divergence_map {
 public:
  static constexpr int64_t kColumnBands = 32, kRowsNamed = 8;
  divergence_map(int64_t m, int64_t n)
      : m_(m),
        n_(n),
        band_(std::max<int64_t>(1, (n + kColumnBands - 1) / kColumnBands)),
        bands_(static_cast<size_t>((n + band_ - 1) / band_)) {}
  void add_row(int64_t batch_row, const uint16_t* want, const uint16_t* got, int64_t first) {
    ++rows_;
    if (named_.size() < kRowsNamed) named_.push_back(batch_row);
    for (int64_t j = first; j < n_; ++j)
      if (want[j] != got[j]) ++outputs_, ++bands_[static_cast<size_t>(j / band_)];
  }
  nlohmann::json to_json() const {
    nlohmann::json bands = nlohmann::json::array();
    for (size_t b = 0; b < bands_.size(); ++b)
      if (bands_[b] > 0) bands.push_back({static_cast<int64_t>(b) * band_, bands_[b]});
    return {{"m", m_},
            {"outputs", outputs_},
            {"rows", rows_},
            {"batch_rows", named_},
            {"band_width", band_},
            {"column_bands", bands}};
  }

 private:
  int64_t m_, n_, band_, rows_ = 0, outputs_ = 0;
  std::vector<int64_t> bands_, named_;
};

// A batch whose first, last and middle rows are the probes (pool rows 0..2), the
// rest filler: the rows, the batch positions compared against M = 1 and the
// positions the run returns (all of them, in batch order, when `every_row`).
struct probe_batch {
  std::vector<int32_t> rows;
  std::vector<int64_t> positions, keep;
};

probe_batch place_probes(std::vector<int32_t> rows, bool every_row) {
  const auto m = static_cast<int64_t>(rows.size());
  probe_batch batch;
  const int64_t place[kProbes] = {0, m - 1, m / 2};
  for (int64_t p = 0; p < kProbes; ++p) {
    if (std::find(batch.positions.begin(), batch.positions.end(), place[p]) !=
        batch.positions.end())
      continue;
    rows[place[p]] = static_cast<int32_t>(p);
    batch.positions.push_back(place[p]);
  }
  batch.keep = batch.positions;
  if (every_row) {
    batch.keep.clear();
    batch.positions.resize(static_cast<size_t>(m));
    for (int64_t r = 0; r < m; ++r) batch.positions[r] = r;
  }
  batch.rows = std::move(rows);
  return batch;
}

}  // namespace

int64_t bf16_ulp_distance(uint16_t a, uint16_t b) {
  const auto ordered = [](uint16_t x) -> int64_t {
    return (x & 0x8000u) ? -int64_t{x & 0x7fffu} : int64_t{x};
  };
  return std::llabs(ordered(a) - ordered(b));
}

matmul_testbed::matmul_testbed(matmul_runner& runner, const testbed_config& config)
    : runner_(runner), config_(config) {
  if (config_.columns <= 0 || config_.columns > config_.shape.n)
    throw std::invalid_argument(fmt::format("testbed {}: columns {} outside [1, {}]",
                                            config_.shape.name, config_.columns, config_.shape.n));
  const int64_t n = config_.columns, k = config_.shape.k;
  operands_.n = n;
  operands_.k = k;
  // The weight slice is the first `columns` rows of the full layer's weight:
  // CPU slices and GPU full-width runs see the same values.
  operands_.weight = random_operand(config_.seed, 1, n * k, 1.0f);
  operands_.pool_rows = kProbes + config_.max_m;
  operands_.pool = random_operand(config_.seed, 0, operands_.pool_rows * k, 1.0f);
  // A bias of the outputs' own magnitude, so where it is added changes rounding.
  if (config_.bias) operands_.bias = random_operand(config_.seed, 2, n, 8.0f);
  runner_.load(operands_);
}

std::string matmul_testbed::describe() const {
  return fmt::format("{} {} (n {} of {}, k {}, {}, seed {})", runner_.subject().name,
                     config_.shape.name, config_.columns, config_.shape.n, config_.shape.k,
                     config_.bias ? "bias" : "no bias", config_.seed);
}

std::vector<int32_t> matmul_testbed::batch_rows(int64_t m) const {
  if (m < 1 || m > config_.max_m)
    throw std::invalid_argument(
        fmt::format("{}: batch size {} outside [1, max_m = {}]", describe(), m, config_.max_m));
  std::vector<int32_t> rows(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) rows[r] = static_cast<int32_t>(kProbes + r);
  return rows;
}

void matmul_testbed::note_divergence(check_result& result, int64_t m, int64_t row, int64_t column,
                                     uint16_t expected, uint16_t actual) const {
  if (result.evidence.contains("m")) return;
  result.evidence.update({{"m", m},
                          {"row", row},
                          {"column", column},
                          {"expected_bits", bits_hex(expected)},
                          {"actual_bits", bits_hex(actual)},
                          {"ulp", bf16_ulp_distance(expected, actual)}});
}

check_result matmul_testbed::finish(check_result result) const {
  result.passed = result.failures == 0 && result.trials > 0;
  if (result.trials == 0) result.summary = "nothing was compared";
  result.summary = describe() + ": " + result.check + (result.passed ? " passed: " : " FAILED: ") +
                   result.summary;
  if (!result.passed)
    result.evidence.update({{"subject", runner_.subject().name},
                            {"shape", config_.shape.name},
                            {"n", config_.shape.n},
                            {"k", config_.shape.k},
                            {"columns", config_.columns},
                            {"bias", config_.bias},
                            {"operand_seed", config_.seed}});
  return result;
}

check_result matmul_testbed::batch_invariance(const std::vector<int64_t>& sizes,
                                              int32_t launch_config, bool every_row) {
  check_result result;
  result.check = "batch_invariance";
  const int64_t n = operands_.n;
  int64_t max_m = 1;
  for (const int64_t m : sizes) max_m = std::max(max_m, m);
  // alone[row] = pool row `row` computed in a batch of one.
  std::vector<std::vector<uint16_t>> alone(static_cast<size_t>(kProbes + (every_row ? max_m : 0)));
  for (size_t row = 0; row < alone.size(); ++row) {
    alone[row] = runner_.run({static_cast<int32_t>(row)}, launch_config, {0});
    if (const std::string why = trivial_row_reason(alone[row].data(), n); !why.empty()) {
      result.trials = result.failures = 1;
      result.summary =
          fmt::format("harness error: pool row {} alone (M = 1) is trivial: {}", row, why);
      return finish(result);
    }
  }
  std::string first;
  int64_t outputs = 0, differing_outputs = 0;
  for (const int64_t m : sizes) {
    const probe_batch batch = place_probes(batch_rows(m), every_row);
    const std::vector<int32_t>& rows = batch.rows;
    const std::vector<int64_t>& positions = batch.positions;
    const std::vector<uint16_t> out = runner_.run(rows, launch_config, batch.keep);
    ++result.trials;
    bool differs = false;
    divergence_map map(m, n);
    for (size_t i = 0; i < positions.size(); ++i) {
      const int32_t row = rows[positions[i]];
      const uint16_t* got = out.data() + i * n;
      const uint16_t* want = alone[row].data();
      outputs += n;
      const int64_t c = first_difference(want, got, n);
      if (c < 0) continue;
      differs = true;
      for (int64_t j = c; j < n; ++j) differing_outputs += want[j] != got[j] ? 1 : 0;
      map.add_row(positions[i], want, got, c);
      note_divergence(result, m, positions[i], c, want[c], got[c]);
      if (first.empty())
        first = fmt::format("first divergence at M = {}, batch row {} ({}), {}", m, positions[i],
                            row < kProbes ? fmt::format("probe {}, {}", row, kProbePlace[row])
                                          : fmt::format("filler pool row {}", row),
                            mismatch_text(c, want[c], got[c]));
    }
    result.failures += differs ? 1 : 0;
    if (differs) result.evidence["divergence"].push_back(map.to_json());
  }
  result.summary =
      result.failures == 0
          ? fmt::format("{} batch sizes bitwise equal to M = 1 ({} outputs compared)",
                        result.trials, outputs)
          : fmt::format("{} of {} batch sizes differ from M = 1 ({} of {} outputs); {}",
                        result.failures, result.trials, differing_outputs, outputs, first);
  return finish(result);
}

check_result matmul_testbed::run_to_run(int64_t m, int repeats) {
  check_result result;
  result.check = "run_to_run";
  const std::vector<int32_t> rows = batch_rows(m);
  const std::vector<uint16_t> first = runner_.run(rows, -1, {});
  if (const std::string why = trivial_row_reason(first.data(), operands_.n); !why.empty()) {
    result.trials = result.failures = 1;
    result.summary = "harness error: row 0 is trivial: " + why;
    return finish(result);
  }
  std::string text;
  for (int r = 1; r < repeats; ++r) {
    const std::vector<uint16_t> again = runner_.run(rows, -1, {});
    ++result.trials;
    const int64_t i =
        first_difference(first.data(), again.data(), static_cast<int64_t>(first.size()));
    if (i < 0) continue;
    ++result.failures;
    note_divergence(result, m, i / operands_.n, i % operands_.n, first[i], again[i]);
    if (text.empty())
      text = fmt::format("first divergence at M = {}, repeat {}, row {}, {}", m, r, i / operands_.n,
                         mismatch_text(i % operands_.n, first[i], again[i]));
  }
  result.summary =
      result.failures == 0
          ? fmt::format("{} repeats at M = {} bitwise equal", result.trials, m)
          : fmt::format("{} of {} repeats differ; {}", result.failures, result.trials, text);
  return finish(result);
}

check_result matmul_testbed::launch_config_independence(const std::vector<int64_t>& sizes) {
  check_result result;
  result.check = "launch_config_independence";
  const sc_matmul& subject = runner_.subject();
  std::string text;
  for (const int64_t m : sizes) {
    const std::vector<int32_t> rows = batch_rows(m);
    const std::vector<uint16_t> table = runner_.run(rows, -1, {});
    for (int32_t c = 0; c < subject.num_launch_configs; ++c) {
      const std::vector<uint16_t> out = runner_.run(rows, c, {});
      ++result.trials;
      const int64_t i =
          first_difference(table.data(), out.data(), static_cast<int64_t>(table.size()));
      if (i < 0) continue;
      ++result.failures;
      note_divergence(result, m, i / operands_.n, i % operands_.n, table[i], out[i]);
      if (!result.evidence.contains("launch_config")) result.evidence["launch_config"] = c;
      const char* name = subject.launch_config_name != nullptr
                             ? subject.launch_config_name(subject.context, c)
                             : nullptr;
      if (text.empty())
        text = fmt::format(
            "first divergence at M = {}, config {} ({}) vs the table's choice, row {}, {}", m, c,
            name != nullptr ? name : "?", i / operands_.n,
            mismatch_text(i % operands_.n, table[i], out[i]));
    }
  }
  if (subject.num_launch_configs == 0)
    result.summary = "the subject has a single launch configuration";
  else
    result.summary =
        result.failures == 0
            ? fmt::format("{} (M, config) pairs bitwise equal to the table's choice", result.trials)
            : fmt::format("{} of {} (M, config) pairs differ; {}", result.failures, result.trials,
                          text);
  return finish(result);
}

check_result matmul_testbed::accuracy(int64_t m) {
  // 1%: the seed's tolerance. bf16 output rounding alone contributes <= 2^-9
  // (0.2%) per element, fp32 accumulation over K <= 12288 far less; a dropped
  // K tail (B02) costs tens of percent.
  constexpr double kTolerance = 0.01;
  check_result result;
  result.check = "accuracy";
  const std::vector<int32_t> rows = batch_rows(m);
  const std::vector<uint16_t> out = runner_.run(rows, -1, {});
  std::vector<uint16_t> a(static_cast<size_t>(m * operands_.k));
  for (int64_t r = 0; r < m; ++r)
    std::copy_n(operands_.pool.begin() + rows[r] * operands_.k, operands_.k,
                a.begin() + r * operands_.k);
  const matmul_reference_matrix ref =
      matmul_reference(a, operands_.weight, operands_.bias, m, operands_.n, operands_.k);
  double error2 = 0.0, ref2 = 0.0, worst = 0.0;
  int64_t worst_index = 0;
  result.trials = 1;
  for (int64_t i = 0; i < m * operands_.n; ++i) {
    if (is_nan_bits(out[i])) {
      result.failures = 1;
      result.summary = fmt::format("row {}, column {} is NaN or unwritten (0x{:04x})",
                                   i / operands_.n, i % operands_.n, out[i]);
      return finish(result);
    }
    const double r = ref(i / operands_.n, i % operands_.n);
    const double d = bf16_to_float(out[i]) - r;
    error2 += d * d;
    ref2 += r * r;
    if (std::abs(d) > worst) worst = std::abs(d), worst_index = i;
  }
  if (ref2 == 0.0) {
    result.failures = 1;
    result.summary = "harness error: the fp64 reference is all zero";
    return finish(result);
  }
  const double relative = std::sqrt(error2 / ref2);
  result.failures = relative < kTolerance ? 0 : 1;
  result.summary = fmt::format(
      "relative Frobenius error {:.3e} (tolerance {}) at M = {}; largest |error| {:.3e} at row {}, "
      "column {}",
      relative, kTolerance, m, worst, worst_index / operands_.n, worst_index % operands_.n);
  return finish(result);
}

check_result matmul_testbed::all_ones(int64_t m) {
  check_result result;
  result.check = "all_ones";
  matmul_operands ones;
  ones.n = operands_.n;
  ones.k = operands_.k;
  ones.weight.assign(operands_.weight.size(), float_to_bf16(1.0f));
  ones.pool_rows = m;
  ones.pool.assign(static_cast<size_t>(m * ones.k), float_to_bf16(1.0f));
  const uint16_t bias_bits = float_to_bf16(static_cast<float>(operands_.k));
  if (config_.bias) ones.bias.assign(operands_.bias.size(), bias_bits);
  runner_.load(ones);
  std::vector<int32_t> rows(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) rows[r] = static_cast<int32_t>(r);
  std::vector<uint16_t> out;
  try {
    out = runner_.run(rows, -1, {});
  } catch (...) {
    runner_.load(operands_);
    throw;
  }
  runner_.load(operands_);
  // Integers below 2^24 add exactly in fp32, so every order gives K (+ bias).
  const float exact =
      static_cast<float>(operands_.k) + (config_.bias ? bf16_to_float(bias_bits) : 0.0f);
  const uint16_t expected = float_to_bf16(exact);
  result.trials = 1;
  for (int64_t i = 0; i < m * ones.n; ++i)
    if (out[i] != expected) {
      result.failures = 1;
      note_divergence(result, m, i / ones.n, i % ones.n, expected, out[i]);
      result.summary = fmt::format("M = {}, row {}, {} (expected bf16({}))", m, i / ones.n,
                                   mismatch_text(i % ones.n, expected, out[i]), exact);
      return finish(result);
    }
  result.summary =
      fmt::format("all {} outputs equal bf16({}) = 0x{:04x}", m * ones.n, exact, expected);
  return finish(result);
}

check_result matmul_testbed::same_bits_as(matmul_runner& other, int64_t m) {
  check_result result;
  result.check = "same_bits";
  other.load(operands_);
  const std::vector<int32_t> rows = batch_rows(m);
  const std::vector<uint16_t> mine = runner_.run(rows, -1, {});
  const std::vector<uint16_t> theirs = other.run(rows, -1, {});
  result.trials = 1;
  if (const std::string why = trivial_row_reason(theirs.data(), operands_.n); !why.empty()) {
    result.failures = 1;
    result.summary =
        std::string("harness error: ") + other.subject().name + " row 0 is trivial: " + why;
    return finish(result);
  }
  const int64_t i = first_difference(theirs.data(), mine.data(), static_cast<int64_t>(mine.size()));
  if (i >= 0) {
    int64_t count = 0;
    for (size_t j = 0; j < mine.size(); ++j) count += mine[j] != theirs[j] ? 1 : 0;
    result.failures = 1;
    result.summary = fmt::format("{} of {} outputs differ from {}; first at M = {}, row {}, {}",
                                 count, mine.size(), other.subject().name, m, i / operands_.n,
                                 mismatch_text(i % operands_.n, theirs[i], mine[i]));
  } else {
    result.summary = fmt::format("all {} outputs at M = {} bitwise equal to {}", mine.size(), m,
                                 other.subject().name);
  }
  return finish(result);
}

}  // namespace samplecheck::matmul_suite
