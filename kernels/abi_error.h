// How every in-tree subject reports an error across the plugin ABI: a status plus a
// NUL-terminated message in the caller's buffer. vsnprintf rather than fmt, so a
// subject built into a plugin needs nothing beyond libc and libstdc++.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdio>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck {

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
inline sc_status
report_error(sc_status status, char* error, size_t error_size, const char* format, ...) {
  if (error != nullptr && error_size > 0) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(error, error_size, format, args);
    va_end(args);
  }
  return status;
}

}  // namespace samplecheck
