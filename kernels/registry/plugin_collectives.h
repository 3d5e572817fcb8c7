// The loader's part for collectives (minor 6), kept beside their validation
// (collectives.cpp): registry.cpp's plugin_loader calls these.
#pragma once

#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::registry::detail {

// The sc_plugin fields of minor 6 (num_collectives, reserved0, collectives,
// collective_size), for a plugin that states minor >= 6; "" when they are usable.
std::string check_plugin_collectives(const sc_plugin& plugin);

// The plugin's collectives in the host's layout (none before minor 6), each validated; or why
// not, naming "collectives[i]" and the field.
std::string read_collectives(const sc_plugin& plugin, std::vector<sc_collective>& out);

}  // namespace samplecheck::registry::detail
