#include "suites/battery/check.h"

#include <algorithm>
#include <stdexcept>

namespace samplecheck::battery {
namespace {

std::vector<check_definition>& registered() {
  static std::vector<check_definition> checks;
  return checks;
}

}  // namespace

void register_check(check_definition check) {
  for (const auto& c : registered())
    if (c.name == check.name && c.applies_to == check.applies_to)
      throw std::logic_error("check '" + std::string(check.name) + "' is registered twice");
  registered().push_back(std::move(check));
}

const std::vector<check_definition>& all_checks() { return registered(); }

const check_definition* find_check(std::string_view name) {
  for (const auto& c : all_checks())
    if (c.name == name) return &c;
  return nullptr;
}

std::vector<std::string> check_names() {
  std::vector<std::string> names;
  for (const auto& c : all_checks())
    if (std::find(names.begin(), names.end(), c.name) == names.end()) names.emplace_back(c.name);
  return names;
}

uint64_t check_seed(uint64_t run_seed, std::string_view name) {
  // FNV-1a of the name, then a splitmix64 finaliser with the run seed.
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  uint64_t z = run_seed + h + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace samplecheck::battery
