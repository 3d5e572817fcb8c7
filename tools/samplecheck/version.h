// Which samplecheck this is: the version, the revision it was built from, and the
// versions of the two contracts a subject is held to (the plugin ABI, the protocol).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace samplecheck::cli {

// "samplecheck 0.1.0 (revision ...)\nplugin ABI 1.4\nsubject protocol 1"
std::string version_text();
// The same as report.json's header "samplecheck" object.
nlohmann::json version_json();

}  // namespace samplecheck::cli
