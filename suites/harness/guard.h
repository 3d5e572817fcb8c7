// Guard rows: each output buffer a harness hands a subject is followed by kGuardRows
// entries holding a canary, checked after the call, so a subject that writes past the
// end of an output is caught on the call that does it, not by a corrupted neighbour
// later. One mechanism for the samplers' out_token / out_valid and the matmuls' out.
//
// Header-only and free of fmt: nvcc compiles it in suites/matmul/cuda_runner.cu.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace samplecheck::harness {

inline constexpr size_t kGuardRows = 64;
// Canaries, unlike any sentinel, token, flag or bf16 a correct subject writes there.
inline constexpr int32_t kGuardToken = 0x5CA1AB1E;
inline constexpr uint8_t kGuardValid = 0xC3;
inline constexpr uint16_t kGuardBf16 = 0x7FA5;  // a NaN other than the runners' 0xffff sentinel

// `rows` sentinels followed by kGuardRows canaries: an output buffer as the subject gets it.
template <class T>
std::vector<T> guarded_buffer(size_t rows, T sentinel, T canary) {
  std::vector<T> buffer(rows + kGuardRows, canary);
  std::fill_n(buffer.begin(), rows, sentinel);
  return buffer;
}

// "" when every entry of `guards` (the kGuardRows after `rows` output entries) still
// holds `canary`, else the first one that changed, in the words of a report.
template <class T>
std::string touched_guard(std::span<const T> guards, size_t rows, T canary, const char* name) {
  static_assert(sizeof(T) <= sizeof(uint32_t));
  const auto bits = [](T v) {
    uint32_t u = 0;
    std::memcpy(&u, &v, sizeof v);
    return u;
  };
  const int width = 2 * static_cast<int>(sizeof(T));
  for (size_t g = 0; g < guards.size(); ++g) {
    if (guards[g] == canary) continue;
    char words[256];
    std::snprintf(
        words, sizeof words,
        "the subject wrote past the end of %s: element %zu+%zu (a guard row) changed from "
        "0x%0*" PRIx32 " to 0x%0*" PRIx32,
        name, rows, g, width, bits(canary), width, bits(guards[g]));
    return words;
  }
  return {};
}

// The same on a whole guarded buffer: its first `rows` entries are the output.
template <class T>
std::string touched_guard(const std::vector<T>& buffer, size_t rows, T canary, const char* name) {
  return touched_guard(std::span<const T>(buffer).subspan(rows), rows, canary, name);
}

}  // namespace samplecheck::harness
