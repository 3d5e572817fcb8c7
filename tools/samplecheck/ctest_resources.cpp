#include "tools/samplecheck/ctest_resources.h"

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <string_view>

namespace samplecheck::cli {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (const char ch : s)
    if (!std::isdigit(static_cast<unsigned char>(ch))) return false;
  return true;
}

}  // namespace

std::string ctest_visible_devices() {
  const char* count_text = std::getenv("CTEST_RESOURCE_GROUP_COUNT");
  if (count_text == nullptr || !all_digits(count_text)) return "";
  const int groups = std::atoi(count_text);
  std::string devices;
  for (int g = 0; g < groups; ++g) {
    const char* gpus = std::getenv(("CTEST_RESOURCE_GROUP_" + std::to_string(g) + "_GPUS").c_str());
    if (gpus == nullptr) continue;
    // "id:0,slots:1;id:1,slots:1": every id of the group.
    std::stringstream entries(gpus);
    for (std::string entry; std::getline(entries, entry, ';');) {
      if (entry.rfind("id:", 0) != 0) return "";
      const std::string id = entry.substr(3, entry.find(',') - 3);
      if (!all_digits(id)) return "";  // a placeholder of a machine without GPUs
      devices += (devices.empty() ? "" : ",") + id;
    }
  }
  return devices;
}

void use_ctest_gpus() {
  const std::string devices = ctest_visible_devices();
  if (devices.empty()) return;
  ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
  ::setenv("CUDA_VISIBLE_DEVICES", devices.c_str(), 1);
}

}  // namespace samplecheck::cli
