// Errors across the ABI: a status, and a NUL-terminated message in the caller's
// buffer (which may be NULL or short; vsnprintf truncates and terminates).
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdio>

#include "samplecheck_plugin.h"

namespace vendor {

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
inline sc_status
report(sc_status status, char* error, size_t error_size, const char* format, ...) {
  if (error != nullptr && error_size > 0) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(error, error_size, format, args);
    va_end(args);
  }
  return status;
}

inline sc_status succeed(char* error, size_t error_size) {
  if (error != nullptr && error_size > 0) error[0] = '\0';
  return SC_OK;
}

}  // namespace vendor
