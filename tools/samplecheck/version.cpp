#include "tools/samplecheck/version.h"

#include <fmt/format.h>

#include "kernels/samplecheck_plugin.h"
#include "samplecheck_revision.h"
#include "suites/harness/protocol.h"

namespace samplecheck::cli {

std::string version_text() {
  return fmt::format("samplecheck {} (revision {})\nplugin ABI {}.{}\nsubject protocol {}",
                     SAMPLECHECK_VERSION, SAMPLECHECK_REVISION, SC_ABI_VERSION_MAJOR,
                     SC_ABI_VERSION_MINOR, protocol::kVersion);
}

nlohmann::json version_json() {
  return {{"version", SAMPLECHECK_VERSION},
          {"revision", SAMPLECHECK_REVISION},
          {"plugin_abi", fmt::format("{}.{}", SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR)},
          {"protocol", protocol::kVersion}};
}

}  // namespace samplecheck::cli
