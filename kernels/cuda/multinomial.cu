// Multinomial by inverse CDF (SGLang v0.5.19's torch.multinomial rule), two layouts:
//   cuda.multinomial        one block per output row: a reduction pass for the row's
//                           mass and health, then FlashInfer's tile-by-tile search
//                           with early exit (row_ops.cuh);
//   cuda.multinomial_split  a row split over several blocks (one block per row leaves
//                           most SMs idle at small batch): each block sums its chunk,
//                           the last block of the row to arrive scans the chunk masses
//                           in chunk order, picks the chunk u falls in and searches it
//                           with the same guarded tile search.
// One stream output per call in both.
#include <algorithm>
#include <climits>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/row_ops.cuh"
#include "reference/uniform.h"

namespace samplecheck::cuda {

namespace {

__global__ void __launch_bounds__(kThreads) multinomial_kernel(device_batch b) {
  __shared__ row_shared sh;
  const int64_t r = blockIdx.x;
  check_parameters(b, r, r, gridDim.x);
  const int64_t in = input_row_of(b, r);
  if (in < 0) {
    if (threadIdx.x == 0) b.out_valid[r] = 0;
    return;
  }
  const row_filters f = filters_of(b, r, in);
  const unsigned char* row = row_pointer(b, in);
  const prob_stats stats = probs_stats(row, b.dtype, b.vocab_size, sh);
  if (!stats.usable || !f.usable) {
    if (threadIdx.x == 0) write_result(b, r, -1, false);
    return;
  }
  philox_stream stream = stream_of(b, r, in);
  const float u = s01_amplified(uniform_open_one(stream.next()) * stats.total, b.planted);
  const int32_t token =
      inverse_cdf(row, b.dtype, b.vocab_size, 0.0f, u, false, b.planted == defect::S01, sh);
  if (threadIdx.x == 0) write_result(b, r, token, token >= 0);
}

struct chunk_partial {
  float mass;
  int bad;
};

constexpr int kMaxSplits = kThreads;  // the last block scans one chunk mass per thread

__global__ void __launch_bounds__(kThreads)
multinomial_split_kernel(device_batch b, int splits, int64_t chunk, chunk_partial* partials, unsigned int* arrivals) {
  __shared__ row_shared sh;
  __shared__ bool last_block;
  __shared__ int crossing;
  __shared__ float before_crossing;
  const int64_t r = blockIdx.x, v = b.vocab_size;
  const int split = blockIdx.y;
  check_parameters(b, r, r * splits + split, static_cast<int64_t>(gridDim.x) * splits);
  const int64_t in = input_row_of(b, r);
  const int64_t begin = split * chunk, length = begin < v ? (begin + chunk < v ? chunk : v - begin) : 0;
  const unsigned char* row = in >= 0 ? row_pointer(b, in) + begin * storage_bytes(b.dtype) : nullptr;
  prob_stats part{0.0f, 0.0f, true, false};
  if (in >= 0 && length > 0) part = probs_stats(row, b.dtype, length, sh);
  chunk_partial* row_partials = partials + r * splits;
  if (threadIdx.x == 0) {
    row_partials[split] = chunk_partial{part.total, part.bad || isinf(part.total)};
    __threadfence();
    last_block = atomicAdd(&arrivals[r], 1u) == static_cast<unsigned>(splits - 1);
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  // Chunk masses in chunk order: the row's total, and where u falls.
  float mass = 0.0f;
  int bad = 0;
  if (threadIdx.x < static_cast<unsigned>(splits)) {
    const volatile chunk_partial* p = row_partials + threadIdx.x;
    mass = p->mass;
    bad = p->bad;
  }
  float total;
  const float through = float_block::inclusive_sum(mass, total, sh.f);
  bad = int_block::max(bad, sh.i);
  if (threadIdx.x == 0) arrivals[r] = 0;  // ready for the next call and graph replay
  const row_filters f = in >= 0 ? filters_of(b, r, in) : row_filters{};
  if (in < 0 || bad != 0 || !(total > 0.0f) || isinf(total) || !f.usable) {
    if (threadIdx.x == 0) {
      if (in < 0) b.out_valid[r] = 0;
      else write_result(b, r, -1, false);
    }
    return;
  }
  philox_stream stream = stream_of(b, r, in);
  const float u = uniform_open_one(stream.next()) * total;
  if (threadIdx.x == 0) crossing = INT_MAX;
  __syncthreads();
  // The first chunk with mass whose running total passes u; if float rounding leaves
  // u beyond every prefix, the last chunk with mass.
  if (mass > 0.0f && through > u) atomicMin(&crossing, static_cast<int>(threadIdx.x));
  const int last_with_mass = int_block::max(mass > 0.0f ? static_cast<int>(threadIdx.x) : -1, sh.i);
  if (threadIdx.x == 0 && crossing == INT_MAX) crossing = last_with_mass;
  __syncthreads();
  if (static_cast<int>(threadIdx.x) == crossing) before_crossing = through - mass;
  __syncthreads();
  const int s = crossing;
  const int64_t s_begin = s * chunk, s_length = s_begin + chunk < v ? chunk : v - s_begin;
  const unsigned char* chunk_row = row_pointer(b, in) + s_begin * storage_bytes(b.dtype);
  const float inside = u - before_crossing > 0.0f ? u - before_crossing : 0.0f;
  const int32_t at = inverse_cdf(chunk_row, b.dtype, s_length, 0.0f, inside, false, false, sh);
  if (threadIdx.x == 0) write_result(b, r, at >= 0 ? static_cast<int32_t>(s_begin + at) : -1, at >= 0);
}

}  // namespace

gpuError_t launch_multinomial(launch_request& q) {
  const device_batch& b = q.batch;
  const auto rows = static_cast<unsigned>(b.num_output_rows);
  if (q.config->kind == algorithm::multinomial) {
    multinomial_kernel<<<rows, kThreads, 0, q.stream>>>(b);
    return gpuGetLastError();
  }
  // Two 1024-thread blocks per SM, chunks of at least one tile, whole groups of four.
  const int64_t target = 2 * static_cast<int64_t>(q.scratch->sm_count());
  int64_t splits = (target + rows - 1) / rows;
  splits = std::max<int64_t>(1, std::min<int64_t>({splits, (b.vocab_size + kTile - 1) / kTile, kMaxSplits}));
  const int64_t chunk = ((b.vocab_size + splits - 1) / splits + 3) / 4 * 4;
  chunk_partial* partials = nullptr;
  unsigned int* arrivals = nullptr;
  if (auto e = q.scratch->get(workspace::partials, rows * splits, q.capturing, &partials); e != gpuSuccess) return e;
  if (auto e = q.scratch->get(workspace::counters, rows, q.capturing, &arrivals); e != gpuSuccess) return e;
  multinomial_split_kernel<<<dim3(rows, static_cast<unsigned>(splits)), kThreads, 0, q.stream>>>(
      b, static_cast<int>(splits), chunk, partials, arrivals);
  return gpuGetLastError();
}

}  // namespace samplecheck::cuda
