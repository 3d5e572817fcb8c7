// The host side of the CUDA samplers below the ABI: a per-subject device workspace
// and one launcher per algorithm. The driver (sampler_driver.cu) checks a batch,
// launches, and reads the kernels' (row, field) error record back; the bench calls
// the launchers directly to time the kernels without that read-back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "kernels/cuda/device_batch.cuh"
#include "kernels/gpu_compat.h"

namespace samplecheck::cuda {

// Device scratch owned by one subject, grown on demand and never during stream
// capture (a graph must be captured after one uncaptured call of the same shape).
class workspace {
 public:
  enum slot : int {
    error_word,
    counters,
    partials,
    keys_in,
    keys_out,
    values_in,
    values_out,
    sort_temp,
    sorted,
    row_stats,
    rows,
    num_slots
  };
  workspace() = default;
  workspace(const workspace&) = delete;
  workspace& operator=(const workspace&) = delete;
  ~workspace();
  // A buffer of at least `bytes` for `which`; new memory is zeroed. Returns
  // gpuErrorStreamCaptureUnsupported when it would have to grow while `capturing`.
  gpuError_t get(slot which, size_t bytes, bool capturing, void** out);
  template <typename T>
  gpuError_t get(slot which, size_t count, bool capturing, T** out) {
    void* p = nullptr;
    const gpuError_t e = get(which, count * sizeof(T), capturing, &p);
    *out = static_cast<T*>(p);
    return e;
  }
  std::mutex& lock() { return mutex_; }
  int sm_count();
  unsigned long long* host_error();  // pinned, for the error record's read-back

 private:
  void* buffer_[num_slots] = {};
  size_t size_[num_slots] = {};
  unsigned long long* host_error_ = nullptr;
  int sm_count_ = 0;
  std::mutex mutex_;
};

// What a launcher needs; `capturing` is the stream's capture state.
struct launch_request {
  const subject_config* config;
  device_batch batch;
  workspace* scratch;
  gpuStream_t stream;
  bool capturing;
};

// Each returns gpuSuccess or the first failing runtime status.
gpuError_t launch_multinomial(launch_request& request);
gpuError_t launch_gumbel(launch_request& request);  // probs or logits by batch.input_kind
gpuError_t launch_sort_filter(launch_request& request);
gpuError_t launch_dual_pivot(launch_request& request);  // every dual-pivot algorithm
// The cluster kernel of dual_pivot_cluster.cu: false when this GPU, V or the batch
// does not suit it (the caller then runs the block-per-row kernel), else true with
// the launch status in *status.
bool launch_dual_pivot_cluster(launch_request& request, gpuError_t* status);

// The ABI call of subject `s` (sampler_driver.cu).
sc_status run_subject(const sc_sampler& s, const subject_config& config, workspace& scratch,
                      const sc_sample_batch* batch, char* error, size_t error_size) noexcept;

}  // namespace samplecheck::cuda
