#include "suites/battery/platform.h"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <cstdlib>
#include <string>

#include "suites/battery/forked_children.h"

#ifdef SAMPLECHECK_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace samplecheck::battery {
namespace {

const char* memory_space_name(int32_t space) {
  switch (space) {
    case SC_MEMORY_HOST:
      return "host";
    case SC_MEMORY_CUDA:
      return "cuda";
    case SC_MEMORY_HIP:
      return "hip";
    default:
      return "unknown";
  }
}

#ifdef SAMPLECHECK_HAVE_CUDA
// nvidia-smi's spelling of a GPU's UUID, so that a manifest matches `nvidia-smi -L`.
std::string gpu_uuid(const cudaUUID_t& uuid) {
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    text += fmt::format("{:02x}", static_cast<unsigned char>(uuid.bytes[i]));
  }
  return text;
}

// The GPU, driver and runtime, asked in a forked child: this process must not initialise
// CUDA, because the subject processes it forks later would inherit a dead context.
nlohmann::json device_identity() {
  nlohmann::json identity = nlohmann::json::object();
  try {
    run_forked_children(
        1,
        [](int, const json_sender& send) {
          nlohmann::json p = nlohmann::json::object();
          int device = 0, driver = 0, runtime = 0;
          cudaDeviceProp prop{};
          if (cudaGetDevice(&device) == cudaSuccess &&
              cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
            p["gpu"] = prop.name;
            // Which GPU of the machine: fingerprints taken on each GPU are compared across
            // them, and the index alone depends on CUDA_VISIBLE_DEVICES.
            p["device_index"] = device;
            p["gpu_uuid"] = gpu_uuid(prop.uuid);
            p["pci_bus_id"] = fmt::format("{:04x}:{:02x}:{:02x}.0", prop.pciDomainID, prop.pciBusID,
                                          prop.pciDeviceID);
            if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"))
              p["cuda_visible_devices"] = visible;
          }
          if (cudaDriverGetVersion(&driver) == cudaSuccess)
            p["driver_cuda_version"] = fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10);
          if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
            p["cuda_runtime"] = fmt::format("{}.{}", runtime / 1000, (runtime % 1000) / 10);
          send(p);
        },
        [&](int, nlohmann::json p) { identity = std::move(p); });
  } catch (const std::exception&) {
    // No identity recorded: the manifest says less, the bits are compared all the same.
  }
  return identity;
}
#endif

}  // namespace

// What produced the bits beside the plan: recorded, not compared (a golden names the
// platform class it was taken on; docs/bisect.md).
nlohmann::json platform_json(const subject& s) {
  nlohmann::json p{{"memory_space", memory_space_name(s.memory_space())}};
  utsname u{};
  if (uname(&u) == 0) p["machine"] = u.machine;
  p["compiler"] = __VERSION__;
#ifdef SAMPLECHECK_HAVE_CUDA
  p["cuda_toolkit"] = fmt::format("{}.{}", CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
  if (s.memory_space() == SC_MEMORY_CUDA) p.update(device_identity());
#endif
  return p;
}

}  // namespace samplecheck::battery
