// Sort-based top-k / top-p / min-p (the pre-FlashInfer serving path): a stable
// radix sort of each input row, descending (CUB / rocPRIM), then one block per
// output row filters and samples on the sorted row:
//   top-k keeps the first k sorted entries: exactly k, ties broken towards the lower
//         token id because the sort is stable (SC_TIE_LOWEST_INDEX);
//   top-p keeps the shortest prefix of those whose mass reaches top_p times their
//         mass (top_k_first: top-p sees the top-k renormalised distribution);
//   min-p keeps entries >= min_p * max;
// every filter keeps a prefix, so the kept set is the shortest of the three, and one
// inverse-CDF search over it (one stream output) picks the token.
//
// The rows are sorted together, as one device-wide sort of 64-bit keys (row, then
// the value's order-preserving bits inverted): a segmented sort gives each segment
// one block, and one block sorting a 151,936-token row took 907 us on the H200.
#include <algorithm>
#include <bit>
#include <climits>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/row_ops.cuh"
#include "reference/uniform.h"

namespace samplecheck::cuda {
namespace {

struct row_health {
  float total;
  int usable;
};

// Decodes each input row into sort keys (row in the high word, descending value
// order in the low word) with token-id values, and records its health; one block
// per input row.
__global__ void __launch_bounds__(kThreads)
    sort_prepare_kernel(device_batch b, uint64_t* keys, int* values, row_health* health) {
  __shared__ row_shared sh;
  const int64_t i = blockIdx.x, v = b.vocab_size;
  const unsigned char* row = row_pointer(b, i);
  const prob_stats stats = probs_stats(row, b.dtype, v, sh);
  for (int64_t j = threadIdx.x; j < v; j += kThreads) {
    keys[i * v + j] = static_cast<uint64_t>(i) << 32 | ~ordered_bits(load_element(row, b.dtype, j));
    values[i * v + j] = static_cast<int>(j);
  }
  if (threadIdx.x == 0) health[i] = row_health{stats.total, stats.usable ? 1 : 0};
}

// The sorted keys back to floats, for the sampling kernel's scans.
__global__ void __launch_bounds__(kThreads)
    sort_unpack_kernel(const uint64_t* keys, int64_t cells, float* sorted) {
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < cells;
       i += int64_t{gridDim.x} * kThreads)
    sorted[i] = from_ordered_bits(~static_cast<uint32_t>(keys[i]));
}

__device__ inline float prefix_sum(const float* sorted, int64_t n, row_shared& sh) {
  float partial = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += kThreads) partial += sorted[j];
  return float_block::sum(partial, sh.f);
}

__global__ void __launch_bounds__(kThreads)
    sort_sample_kernel(device_batch b, const float* sorted_keys, const int* sorted_values,
                       const row_health* health) {
  __shared__ row_shared sh;
  __shared__ int64_t min_p_length;
  const int64_t r = blockIdx.x, v = b.vocab_size;
  int64_t in;
  if (!open_output_row(b, r, in)) return;
  const row_filters f = filters_of(b, r, in);
  if (!health[in].usable || !f.usable) {
    if (threadIdx.x == 0) write_result(b, r, -1, false);
    return;
  }
  const float* sorted = sorted_keys + in * v;
  const unsigned char* sorted_bytes = reinterpret_cast<const unsigned char*>(sorted);
  int64_t kept = f.top_k_on(v) ? f.top_k : v;
  if (f.top_p_on()) {
    const float top_k_mass = prefix_sum(sorted, kept, sh);
    // The first position whose running mass reaches top_p * mass: "> just below".
    const float target = nextafterf(f.top_p * top_k_mass, 0.0f);
    const int32_t last =
        inverse_cdf(sorted_bytes, storage_type::f32, kept, -1.0f, target, false, false, sh);
    if (last >= 0 && last + 1 < kept) kept = last + 1;
  }
  if (f.min_p_on()) {
    if (threadIdx.x == 0) {
      // Sorted descending, so the entries >= min_p * max are a prefix: binary search.
      const float floor_value = f.min_p * sorted[0];
      int64_t lo = 1, hi = kept;  // sorted[0] always qualifies
      while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (sorted[mid] >= floor_value)
          lo = mid + 1;
        else
          hi = mid;
      }
      min_p_length = lo;
    }
    __syncthreads();
    if (min_p_length < kept) kept = min_p_length;
  }
  const float mass = prefix_sum(sorted, kept, sh);
  philox_stream stream = stream_of(b, r, in);
  const float u = uniform_open_one(stream.next()) * mass;
  const int32_t position =
      inverse_cdf(sorted_bytes, storage_type::f32, kept, 0.0f, u, false, false, sh);
  if (threadIdx.x == 0)
    write_result(b, r, position >= 0 ? sorted_values[in * v + position] : -1, position >= 0);
}

}  // namespace

gpuError_t launch_sort_filter(launch_request& q) {
  const device_batch& b = q.batch;
  const int64_t rows = b.num_input_rows, cells = rows * b.vocab_size;
  uint64_t *keys_in, *keys_out;
  int *values_in, *values_out;
  float* sorted;
  row_health* health;
  workspace& w = *q.scratch;
  gpuError_t e;
  if ((e = w.get(workspace::keys_in, cells, q.capturing, &keys_in)) != gpuSuccess) return e;
  if ((e = w.get(workspace::keys_out, cells, q.capturing, &keys_out)) != gpuSuccess) return e;
  if ((e = w.get(workspace::values_in, cells, q.capturing, &values_in)) != gpuSuccess) return e;
  if ((e = w.get(workspace::values_out, cells, q.capturing, &values_out)) != gpuSuccess) return e;
  if ((e = w.get(workspace::sorted, cells, q.capturing, &sorted)) != gpuSuccess) return e;
  if ((e = w.get(workspace::row_stats, rows, q.capturing, &health)) != gpuSuccess) return e;
  sort_prepare_kernel<<<static_cast<unsigned>(rows), kThreads, 0, q.stream>>>(b, keys_in, values_in,
                                                                              health);
  if ((e = gpuGetLastError()) != gpuSuccess) return e;
  // The value's 32 bits and as many row bits as the batch needs.
  const int end_bit = 32 + std::bit_width(static_cast<uint64_t>(rows - 1));
  size_t temp_bytes = 0;
  if ((e = gpu::radix_sort_pairs(static_cast<void*>(nullptr), temp_bytes, keys_in, keys_out,
                                 values_in, values_out, static_cast<int>(cells), 0, end_bit,
                                 q.stream)) != gpuSuccess)
    return e;
  void* temp = nullptr;
  if ((e = w.get(workspace::sort_temp, temp_bytes, q.capturing, &temp)) != gpuSuccess) return e;
  if ((e = gpu::radix_sort_pairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out,
                                 static_cast<int>(cells), 0, end_bit, q.stream)) != gpuSuccess)
    return e;
  const int64_t unpack_blocks =
      std::min<int64_t>((cells + kThreads - 1) / kThreads, 8 * q.scratch->sm_count());
  sort_unpack_kernel<<<static_cast<unsigned>(unpack_blocks), kThreads, 0, q.stream>>>(
      keys_out, cells, sorted);
  if ((e = gpuGetLastError()) != gpuSuccess) return e;
  sort_sample_kernel<<<static_cast<unsigned>(b.num_output_rows), kThreads, 0, q.stream>>>(
      b, sorted, values_out, health);
  return gpuGetLastError();
}

}  // namespace samplecheck::cuda
