/* Plugins that attack the judge, one per SAMPLECHECK_HOSTILE value:
 *   1 (forge)     sample() writes a passing check outcome (the JSON the old forked check
 *                 child sent) and a well-formed "result" frame into every descriptor it
 *                 can reach, then exits 0: the verdict must still come out FAIL.
 *   2 (segfault)  samplecheck_plugin() dereferences NULL: a clear error, exit 2.
 *   3 (loop)      samplecheck_plugin() never returns: a clear error after the
 *                 handshake timeout, exit 2.
 *   4 (truncate)  sample() truncates every memfd it can reach to 0 bytes (the shared
 *                 region among them) and returns SC_OK: samplecheck's read of the outputs
 *                 would be a SIGBUS. Where a truncation is refused (the region is sealed)
 *                 it returns SC_ERR_INTERNAL with the error. */
#define _POSIX_C_SOURCE 200809L /* ftruncate */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernels/samplecheck_plugin.h"

static sc_status forge(void* context, const sc_sample_batch* batch, char* error, size_t size) {
  static const char outcome[] =
      "{\"exact_failure\":false,\"p_value\":0.5,\"power\":\"forged\",\"samples\":1,"
      "\"detail\":\"forged\",\"repro\":null,\"unavailable\":false,\"harness_error\":\"\","
      "\"nothing_to_test\":\"\"}";
  static const char result[] = "{\"type\":\"result\",\"id\":1,\"status\":0,\"message\":\"\"}";
  const unsigned char header[4] = {sizeof result - 1, 0, 0, 0};
  (void)context, (void)batch, (void)error, (void)size;
  for (int fd = 3; fd < 256; ++fd) {
    (void)!write(fd, outcome, sizeof outcome - 1);
    (void)!write(fd, header, sizeof header);
    (void)!write(fd, result, sizeof result - 1);
  }
  _exit(0);
}

static sc_status truncate_all(void* context, const sc_sample_batch* batch, char* error,
                              size_t size) {
  int fd;
  (void)context, (void)batch;
  for (fd = 3; fd < 256; ++fd) {
    char link[64], target[256];
    ssize_t n;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (strncmp(target, "/memfd:", 7) != 0) continue; /* the shared region is a memfd */
    if (ftruncate(fd, 0) != 0) {
      snprintf(error, size, "ftruncate of descriptor %d: %s", fd, strerror(errno));
      return SC_ERR_INTERNAL;
    }
  }
  return SC_OK;
}

static const sc_sampler kSampler = {{SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
                                    "test.hostile",
                                    "attacks the judge",
                                    SC_MEMORY_HOST,
                                    SC_INPUT_PROBS,
                                    SC_DTYPE_BIT(SC_DTYPE_F32),
                                    0,
                                    SC_ORDER_TOP_K_FIRST,
                                    SC_TIE_KEEP_TIES,
                                    1,
                                    0,
                                    NULL,
#if SAMPLECHECK_HOSTILE == 4
                                    truncate_all,
#else
                                    forge,
#endif
                                    0,
                                    0,
                                    0,
                                    0};

static const sc_plugin kPlugin = {{SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
                                  "hostile test plugin",
                                  1,
                                  0,
                                  &kSampler,
                                  NULL,
                                  0,
                                  sizeof(sc_sampler),
                                  sizeof(sc_matmul)};

__attribute__((visibility("default"))) const sc_plugin* samplecheck_plugin(void) {
#if SAMPLECHECK_HOSTILE == 2
  volatile int* nowhere = NULL;
  return (const sc_plugin*)(size_t)*nowhere;
#elif SAMPLECHECK_HOSTILE == 3
  for (;;) sleep(1);
#endif
  return &kPlugin;
}
