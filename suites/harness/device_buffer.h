// The one RAII buffer of typed CUDA device memory that harnesses and tests use to hand
// data to device subjects. No device code: .cpp and .cu files share it. CUDA builds
// only (SAMPLECHECK_HAVE_CUDA); the subjects' own kernels keep their own memory.
#pragma once

#ifndef SAMPLECHECK_HAVE_CUDA
#error "suites/harness/device_buffer.h is for CUDA builds (SAMPLECHECK_HAVE_CUDA)"
#endif

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace samplecheck::harness {

// A CUDA runtime call failed; run_call turns it into call_fault::device.
class device_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw device_error(std::string(what) + ": " + cudaGetErrorString(e));
}

template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(size_t count) { resize(count); }
  explicit device_buffer(const std::vector<T>& host) { assign(host); }
  ~device_buffer() { release(); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        capacity_(std::exchange(o.capacity_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      capacity_ = std::exchange(o.capacity_, 0);
    }
    return *this;
  }

  // `count` elements, contents unspecified after growing. The memory moves only when
  // it grows, so an address a CUDA graph captured survives same-size rewrites.
  void resize(size_t count) {
    if (count > capacity_) {
      release();
      void* p = nullptr;
      check_cuda(cudaMalloc(&p, count * sizeof(T)), "cudaMalloc");
      data_ = static_cast<T*>(p);
      capacity_ = count;
    }
    size_ = count;
  }
  // Resized to the host vector and overwritten with it.
  void assign(const std::vector<T>& host) {
    resize(host.size());
    upload(host.data(), host.size());
  }
  void upload(const T* host, size_t count, size_t at = 0) {
    bounds(count, at);
    if (count > 0)
      check_cuda(cudaMemcpy(data_ + at, host, count * sizeof(T), cudaMemcpyHostToDevice),
                 "cudaMemcpy to device");
  }
  void download(T* host, size_t count, size_t at = 0) const {
    bounds(count, at);
    if (count > 0)
      check_cuda(cudaMemcpy(host, data_ + at, count * sizeof(T), cudaMemcpyDeviceToHost),
                 "cudaMemcpy to host");
  }
  std::vector<T> read() const {
    std::vector<T> host(size_);
    download(host.data(), size_);
    return host;
  }

  T* get() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  void bounds(size_t count, size_t at) const {
    if (at > size_ || count > size_ - at)
      throw std::out_of_range("device_buffer: " + std::to_string(count) + " elements at " +
                              std::to_string(at) + " past its " + std::to_string(size_));
  }
  void release() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  T* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

// The buffer's address, or NULL when it holds nothing: an empty optional array.
template <class T>
T* or_null(const device_buffer<T>& b) {
  return b.empty() ? nullptr : b.get();
}

}  // namespace samplecheck::harness
