#include "suites/matmul/matmul_fixture.h"

#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace samplecheck::matmul_suite {
namespace {

int64_t parse_positive(const std::string& path, int line, const char* field,
                       const std::string& text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0)
    throw std::runtime_error(path + " line " + std::to_string(line) + ": field " + field + " = '" +
                             text + "' is not a positive integer");
  return value;
}

}  // namespace

const matmul_shape& matmul_fixture::shape(const std::string& name) const {
  for (const auto& s : shapes)
    if (s.name == name) return s;
  throw std::runtime_error("matmul fixture: no shape named '" + name + "'");
}

const std::vector<int64_t>& matmul_fixture::sizes(const std::string& name) const {
  const auto it = batch_sizes.find(name);
  if (it == batch_sizes.end())
    throw std::runtime_error("matmul fixture: no batch_sizes list named '" + name + "'");
  return it->second;
}

matmul_fixture read_matmul_fixture(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open matmul fixture " + path);
  matmul_fixture fixture;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (const auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream fields(text);
    std::string kind;
    if (!(fields >> kind)) continue;
    if (kind == "shape") {
      matmul_shape s;
      std::string n, k;
      if (!(fields >> s.name >> n >> k >> s.tag))
        throw std::runtime_error(path + " line " + std::to_string(line) +
                                 ": shape needs <name> <n> <k> <tag>");
      s.n = parse_positive(path, line, "n", n);
      s.k = parse_positive(path, line, "k", k);
      fixture.shapes.push_back(s);
    } else if (kind == "batch_sizes") {
      std::string name, m;
      if (!(fields >> name))
        throw std::runtime_error(path + " line " + std::to_string(line) +
                                 ": batch_sizes needs a name");
      auto& list = fixture.batch_sizes[name];
      while (fields >> m) list.push_back(parse_positive(path, line, "m", m));
      if (list.empty())
        throw std::runtime_error(path + " line " + std::to_string(line) + ": batch_sizes " + name +
                                 " is empty");
    } else {
      throw std::runtime_error(path + " line " + std::to_string(line) + ": unknown record '" +
                               kind + "'");
    }
  }
  if (fixture.shapes.empty()) throw std::runtime_error(path + ": no shape records");
  return fixture;
}

}  // namespace samplecheck::matmul_suite
