#include "suites/battery/matmul_selection.h"

#include <filesystem>

namespace samplecheck::battery {

std::string default_matmul_fixture_path() {
  // An installed samplecheck reads <prefix>/share/samplecheck/fixtures; a build, the tree's.
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path installed =
      exe.parent_path().parent_path() / "share/samplecheck/fixtures/matmul/layer_shapes.txt";
  if (!ec && std::filesystem::exists(installed, ec)) return installed.string();
  return std::string(SAMPLECHECK_FIXTURES_DIR) + "/matmul/layer_shapes.txt";
}

nlohmann::json selection_json(const matmul_selection& s) {
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& sh : s.shapes)
    shapes.push_back({{"name", sh.name}, {"n", sh.n}, {"k", sh.k}, {"tag", sh.tag}});
  return {{"shapes", shapes}, {"batch_sizes", s.batch_sizes}, {"columns", s.columns}};
}

matmul_selection selection_from_json(const nlohmann::json& j) {
  matmul_selection s;
  for (const auto& sh : j.at("shapes"))
    s.shapes.push_back({sh.at("name").get<std::string>(), sh.at("n").get<int64_t>(),
                        sh.at("k").get<int64_t>(), sh.at("tag").get<std::string>()});
  s.batch_sizes = j.at("batch_sizes").get<std::vector<int64_t>>();
  s.columns = j.at("columns").get<int64_t>();
  return s;
}

}  // namespace samplecheck::battery
