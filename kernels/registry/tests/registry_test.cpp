// The in-tree matmuls' batch_thresholds (ABI 1.1) against the launch tables they
// come from: for each subject, the M at which its table's choice changes, over the
// N of every shape in fixtures/matmul/layer_shapes.txt, must be exactly the list
// it declares. A new fixture shape or a retuned table that moves a switch fails
// here until the descriptor says so. The last test holds the collectives (ABI minor 6) to
// their descriptor rules.
#include "kernels/registry/registry.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/matmul/matmul_plan.h"
#include "suites/testing/fixtures.h"
#ifdef SAMPLECHECK_HAVE_CUDA
#include "kernels/matmul/mma_kernels.h"
#endif

namespace registry = samplecheck::registry;
namespace mm = samplecheck::matmul;

namespace {

using table = std::function<int32_t(int64_t m, int64_t n)>;

// The N (output features) of every `shape` record of the fixture file.
std::set<int64_t> fixture_ns() {
  std::ifstream in(samplecheck::testing::fixture_path("matmul/layer_shapes.txt"));
  REQUIRE(in.good());
  std::set<int64_t> ns;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string record, name;
    int64_t n = 0;
    if (!(fields >> record) || record != "shape") continue;
    REQUIRE(fields >> name >> n);
    ns.insert(n);
  }
  return ns;
}

// The launch table each in-tree matmul chooses from when launch_config is -1, or
// null where the choice is not the subject's own (cuBLAS's heuristics).
bool table_of(const std::string& name, table& out) {
  const auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
  if (name == "cpu.persistent" || name == "cuda.persistent") {
    out = mm::persistent_table_config;
  } else if (starts("cpu.segmented") || starts("cuda.segmented:") || name == "cuda.segmented") {
    out = mm::segmented_table_config;  // the mutants share their host's table
#ifdef SAMPLECHECK_HAVE_CUDA
  } else if (name == "cuda.persistent_mma") {
    out = mm::persistent_mma_table_config;
  } else if (name == "cuda.segmented_mma") {
    out = mm::segmented_mma_table_config;
  } else if (name == "cuda.cublas") {
    out = nullptr;
#endif
  } else {
    return false;
  }
  return true;
}

// Every M in [2, max_m] whose choice differs from M - 1's, for some fixture N.
std::vector<int64_t> switches(const table& choose, const std::set<int64_t>& ns, int64_t max_m) {
  std::set<int64_t> found;
  for (const int64_t n : ns)
    for (int64_t m = 2; m <= max_m; ++m)
      if (choose(m, n) != choose(m - 1, n)) found.insert(m);
  return {found.begin(), found.end()};
}

}  // namespace

TEST_CASE("the in-tree matmuls declare exactly the M where their launch table switches") {
  const std::set<int64_t> ns = fixture_ns();
  REQUIRE(ns.count(24576) == 1);  // gate_up, the N > 8192 branch of every table
  REQUIRE(!registry::in_tree_matmuls().empty());
  // Past every table's last branch (M = 1025); the scan goes four times further.
  constexpr int64_t kMaxM = 4096;
  for (const sc_matmul* m : registry::in_tree_matmuls()) {
    CAPTURE(m->name);
    REQUIRE(registry::validate_matmul(*m).empty());
    table choose;
    INFO("no launch table is known for this subject: add it to table_of");
    REQUIRE(table_of(m->name, choose));
    const std::vector<int64_t> declared = registry::batch_thresholds(*m);
    if (!choose) {
      CHECK(declared.empty());
      continue;
    }
    CHECK(declared == switches(choose, ns, kMaxM));
    for (size_t i = 0; i < declared.size(); ++i) {
      CHECK(declared[i] >= 2);
      CHECK(declared[i] <= kMaxM);
      if (i > 0) CHECK(declared[i] > declared[i - 1]);
    }
    // Each declared M is a real switch: some launch configuration index it picks.
    for (const int64_t t : declared) {
      const int32_t config = choose(t, *ns.rbegin());
      CHECK(config >= 0);
      CHECK(config < m->num_launch_configs);
    }
  }
}

TEST_CASE("the scan finds a table's switches and nothing else") {
  // A table that switches at M = 5 for N > 100 and at M = 9 for every N: the
  // negative control for the comparison above.
  const table toy = [](int64_t m, int64_t n) {
    return (n > 100 && m >= 5 ? 1 : 0) + (m >= 9 ? 2 : 0);
  };
  CHECK(switches(toy, {50}, 64) == std::vector<int64_t>{9});
  CHECK(switches(toy, {50, 200}, 64) == std::vector<int64_t>{5, 9});
  CHECK(switches(mm::persistent_table_config, {4096}, 64) == std::vector<int64_t>{3});
}

TEST_CASE("the in-tree collectives validate; a broken descriptor is refused naming the field") {
  // Four CPU collectives; a CUDA build adds cuda.allreduce.fixed_order and its X13.
#ifdef SAMPLECHECK_HAVE_CUDA
  REQUIRE(registry::in_tree_collectives().size() == 6);
#else
  REQUIRE(registry::in_tree_collectives().size() == 4);
#endif
  for (const sc_collective* c : registry::in_tree_collectives()) {
    CAPTURE(c->name);
    CHECK(registry::validate_collective(*c).empty());
    CHECK(registry::find_collective(c->name) == c);
  }
  const sc_collective good = *registry::find_collective("cpu.allreduce.fixed_order");
  const struct {
    void (*spoil)(sc_collective&);
    const char* message;
  } table[] = {
      {[](sc_collective& c) { c.abi_version.major = 2; },
       "field abi_version.major is 2, samplecheck speaks 1"},
      {[](sc_collective& c) { c.abi_version.minor = 5; },
       "field abi_version.minor is 5, but collectives begin at minor 6"},
      {[](sc_collective& c) { c.run = nullptr; }, "field run is NULL"},
      {[](sc_collective& c) { c.dtypes = SC_DTYPE_BIT(SC_DTYPE_F16); },
       "field dtypes is 0x8, must name f32 and/or bf16 only"},
      {[](sc_collective& c) { c.reduce_op = 2; }, "field reduce_op has unknown value 2"},
      {[](sc_collective& c) { c.max_world_size = 0; }, "field max_world_size is 0, must be >= 1"},
      {[](sc_collective& c) { c.invariants = 8; }, "field invariants is 0x8, holds unknown bits"},
      {[](sc_collective& c) { c.reserved0 = 1; }, "field reserved0 is 1, must be 0"},
      {[](sc_collective& c) { c.flags = 2; }, "field flags is 0x2, must be 0"},
  };
  for (const auto& t : table) {
    sc_collective c = good;
    t.spoil(c);
    CHECK(registry::validate_collective(c) ==
          std::string("collective cpu.allreduce.fixed_order: ") + t.message);
  }
}
