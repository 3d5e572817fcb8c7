// --report-dir DIR: report.json (docs/report-schema.json), junit.xml and report.html,
// which tools/report/render_report.py renders from report.json with matplotlib.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace samplecheck::cli {

// Empty when files can be written in dir (created if missing); else why not, naming option.
std::string prepare_dir(std::string_view option, const std::string& dir);

// Empty when dir can hold the report (created if missing) and holds none yet; else why not.
std::string prepare_report_dir(const std::string& dir);

// The renderer: $SAMPLECHECK_REPORT_RENDERER, else <prefix>/share/samplecheck/ beside an
// installed samplecheck, else the source tree's tools/report/; empty if none exists.
std::string renderer_path();

// Writes the three files; a renderer that is missing or fails leaves report.json and
// junit.xml and says so on stderr (the run's exit status does not change). Returns
// false when report.json or junit.xml could not be written.
bool write_report_dir(const std::string& dir, const nlohmann::json& report);

}  // namespace samplecheck::cli
