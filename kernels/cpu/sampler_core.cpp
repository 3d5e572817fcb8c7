#include "kernels/cpu/sampler_core.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <numeric>

#include "kernels/abi_error.h"
#include "kernels/batch_rules.h"
#include "reference/numeric.h"

namespace samplecheck::cpu {
namespace {

constexpr auto& fail = report_error;

// Input row i's parameters, a NULL array read as its "off" value.
row_params params_of(const sc_sample_batch& b, int64_t i) {
  row_params p;
  if (b.top_k) p.top_k = b.top_k[i];
  if (b.top_p) p.top_p = b.top_p[i];
  if (b.min_p) p.min_p = b.min_p[i];
  if (b.temperature) p.temperature = b.temperature[i];
  return p;
}

// Checks everything a call promises before anything is written, so a refused call
// leaves the caller's buffers as they were. The rules are kernels/batch_rules.h's;
// a host subject can read every array, so it applies the per-row ones here too.
sc_status check_batch(const subject_spec& spec, const sc_sample_batch* b, char* error,
                      size_t size) {
  if (const sc_status status = rules::check_shape({spec.name, spec.max_vocab_size}, b, error, size);
      status != SC_OK || b->num_output_rows == 0)
    return status;
  if (b->row_index != nullptr)
    for (int64_t r = 0; r < b->num_output_rows; ++r)
      if (!rules::row_index_valid(b->row_index[r], b->num_input_rows))
        return rules::report_refusal(spec.name, rules::field::row_index, r, &b->row_index[r],
                                     b->num_input_rows, error, size);
  for (int64_t i = 0; i < b->num_input_rows; ++i) {
    const rules::field bad =
        rules::row_refusal(params_of(*b, i), b->vocab_size, spec.input_kind, spec.filters);
    if (bad != rules::field::none)
      return rules::report_refusal(spec.name, bad, i, rules::source_of(*b, bad, i),
                                   b->num_input_rows, error, size);
  }
  return SC_OK;
}

// Decodes input row `i` and says whether it can be sampled at all.
bool decode_row(const sc_sample_batch& b, int64_t i, int32_t input_kind, defect planted,
                std::vector<float>& row) {
  const auto type = static_cast<storage_type>(b.input_dtype);
  const auto* base =
      static_cast<const unsigned char*>(b.input) + i * b.vocab_size * storage_bytes(type);
  row.resize(static_cast<size_t>(b.vocab_size));
  for (int64_t t = 0; t < b.vocab_size; ++t) row[t] = load_element(base, type, t);
  if (planted == defect::S13) {
    // S13: fast-math FTZ/DAZ at the load. Subnormal in the storage type: for f16 that
    // is everything below 2^-14 (6.1e-5), real mass on a long tail; for f32 and bf16
    // only masses below FLT_MIN, which matter on rows that carry little total mass.
    const float smallest_normal = type == storage_type::f16 ? 6.103515625e-05f : FLT_MIN;
    for (float& v : row)
      if (v != 0.0f && std::fabs(v) < smallest_normal) v = std::copysign(0.0f, v);
  }
  if (input_kind == SC_INPUT_LOGITS) {
    bool any_finite = false;
    for (const float z : row) {
      if (std::isnan(z) || z == INFINITY) return false;
      any_finite |= std::isfinite(z);
    }
    return any_finite;
  }
  double total = 0.0;
  for (const float p : row) {
    if (!std::isfinite(p) || p < 0.0f) return false;
    total += p;
  }
  // Above FLT_MAX the float prefix sums of the GPU-style subjects would overflow.
  return total > 0.0 && total <= FLT_MAX;
}

struct stream_key {
  uint64_t seed, subsequence, offset;
};

// The stream of output row r. The correct rule is the header's: seed[r],
// subsequence[r], offset[r]. Each mutant below breaks it the way its bug did.
stream_key stream_for(const sc_sample_batch& b, int64_t r, int64_t first_output_of_input,
                      defect planted, uint64_t hidden_call) {
  int64_t source = r;
  if (planted == defect::S03) source = 0;
  // S10: one draw per input row, broadcast to every output that shares the row.
  if (planted == defect::S10) source = first_output_of_input;
  stream_key key{b.seed[source], b.subsequence ? b.subsequence[source] : 0, b.offset[source]};
  if (planted == defect::S02) key.offset = 0;  // frozen at "capture"
  // S20 (TensorRT-Edge-LLM #211): the sampler's call sites initialise the generator as
  // curand_init(seed, subsequence, 0), so every decode step of a request replays offset
  // 0 of its subsequence. The tokens S02 gives; the cause is the call site, not a capture.
  if (planted == defect::S20) key.offset = 0;
  if (planted == defect::S04) key.subsequence = static_cast<uint64_t>(r);
  // X01: a generator state of the subject's own (a global torch.Generator, say) moves
  // on every call, so the caller's (seed, subsequence, offset) no longer decide the draw.
  if (planted == defect::X01) key.offset += hidden_call * 4096;
  // X04: the position is held in 32 bits (an `unsigned` offset, as a port that passes
  // curand_init's offset through a uint32_t does), so offsets 2^32 apart share a stream.
  if (planted == defect::X04) key.offset = static_cast<uint32_t>(key.offset);
  if (planted == defect::S14) {
    // The real kernel forms subsequence * vocab_size in 32 bits (wraps at 2^32); the
    // mutant wraps at 2^20 so that at V = 32768 the streams repeat every 32 rows
    // instead of every 131072, where a quick budget can see the collisions.
    const uint32_t product =
        static_cast<uint32_t>(key.subsequence * static_cast<uint64_t>(b.vocab_size));
    key.subsequence = product & ((uint32_t{1} << 20) - 1);
  }
  return key;
}

// Whether any output row of the call reads a filter that is on: the switch of a sampler
// that takes its sorted path for the whole batch when one request needs it (S21).
bool any_filter(const sc_sample_batch& b, const std::vector<int64_t>& params_of_row) {
  for (const int64_t i : params_of_row) {
    const row_params p = params_of(b, i);
    if (p.top_k_on(b.vocab_size) || p.top_p_on() || p.min_p_on()) return true;
  }
  return false;
}

// The id a drawn result is written as. X11: through a 16-bit store (a kernel whose id
// buffer is uint16_t), so an id above 65,535 comes back as its low 16 bits, another
// token of the row; below 65,536 it is the host's. A row with no draw keeps its -1.
int32_t written_token(const draw_result& result, defect planted) {
  if (planted == defect::X11 && result.valid)
    return static_cast<int32_t>(static_cast<uint16_t>(result.token));
  return result.token;
}

void sample_rows(const subject_context& subject, const sc_sample_batch& b) {
  const int64_t rows = b.num_output_rows;
  const defect planted = subject.planted;
  static std::atomic<uint64_t> hidden_calls{0};
  const uint64_t hidden_call = planted == defect::X01 ? hidden_calls.fetch_add(1) : 0;
  std::vector<int64_t> input_of(rows), params_of_row(rows);
  std::vector<int64_t> first_output(static_cast<size_t>(b.num_input_rows), -1);
  for (int64_t r = 0; r < rows; ++r) {
    input_of[r] = b.row_index ? b.row_index[r] : r;
    // S09: parameters read by output row. An output row past the last input row wraps
    // rather than reading past the caller's array (the GPU bug reads garbage there).
    params_of_row[r] = planted == defect::S09 ? r % b.num_input_rows : input_of[r];
    if (first_output[input_of[r]] < 0) first_output[input_of[r]] = r;
  }
  // Output rows that share an input row and a parameter set share one prepare().
  std::vector<int64_t> order(rows);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    return std::pair(input_of[x], params_of_row[x]) < std::pair(input_of[y], params_of_row[y]);
  });

  auto sampler = subject.make(planted);
  static std::atomic<uint64_t> calls{0};
  sampler->batch_size = rows;
  sampler->batch_filters = any_filter(b, params_of_row);
  sampler->call_number = planted == defect::S16 ? calls.fetch_add(1) : 0;
  std::vector<float> row;
  for (size_t g = 0; g < order.size();) {
    const int64_t input_row = input_of[order[g]], param_row = params_of_row[order[g]];
    size_t end = g;
    while (end < order.size() && input_of[order[end]] == input_row &&
           params_of_row[order[end]] == param_row)
      ++end;
    const bool usable = decode_row(b, input_row, subject.spec.input_kind, planted, row) &&
                        sampler->prepare(row, params_of(b, param_row));
    for (; g < end; ++g) {
      const int64_t r = order[g];
      draw_result result{-1, false};
      if (usable) {
        const stream_key key = stream_for(b, r, first_output[input_row], planted, hidden_call);
        philox_stream stream(key.seed, key.subsequence, key.offset);
        result = sampler->draw(stream);
      } else if (planted == defect::S08) {
        result = {0, true};  // S08: the degenerate row passes as token 0
      }
      b.out_token[r] = written_token(result, planted);
      b.out_valid[r] = result.valid ? 1 : 0;
      // X08: the stream position kept in the request's own array (as an engine that owns its
      // requests' generator state does), written through the batch's const pointer.
      if (planted == defect::X08)
        const_cast<uint64_t*>(b.offset)[r] += subject.spec.philox_outputs_per_call;
    }
  }
}

}  // namespace

sc_status run_batch(const subject_context& subject, const sc_sample_batch* batch, char* error,
                    size_t error_size) noexcept {
  try {
    if (const sc_status status = check_batch(subject.spec, batch, error, error_size);
        status != SC_OK)
      return status;
    if (batch->num_output_rows > 0) sample_rows(subject, *batch);
    if (error != nullptr && error_size > 0) error[0] = '\0';
    return SC_OK;
  } catch (const std::exception& e) {
    return fail(SC_ERR_INTERNAL, error, error_size, "%s: %s", subject.spec.name, e.what());
  } catch (...) {
    return fail(SC_ERR_INTERNAL, error, error_size, "%s: unknown exception", subject.spec.name);
  }
}

}  // namespace samplecheck::cpu
