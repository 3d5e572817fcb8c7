// Every planted matmul defect (B01-B08) must be killed by the check the mutant
// catalog names for it, while the correct emulation passes the same check on
// the same data, so the kill is the defect's doing.
#include "kernels/matmul/cpu_matmuls.h"
#include "kernels/mutant_catalog.h"
#include "suites/matmul/matmul_test_support.h"

using namespace samplecheck::matmul_suite;
using samplecheck::find_mutant;
using samplecheck::matmul::cpu_matmuls;

namespace {

// Wider than the CPU suite's slice: a reduction-order change flips a bf16
// output only about once in 10^3 outputs, and a kill must not be luck: at 256 columns each
// batch-invariance case below compares over 60,000 outputs where the defect acts.
constexpr int64_t kMutationColumns = 256;

struct mutant_case {
  const char* id;
  const char* shape;
  bool bias;
  std::vector<int64_t> sizes;  // batch sizes (or the one M) the check uses
  const char* why;
};

// Sizes straddle the border where each defect acts: B01/B03 at M = 64, B05 at
// the split threshold M = 1024 (N <= 8192), B02 needs a K tail (2880 = 3 x 768
// + 576), B04 a K <= 256, B06 a split launch (M <= 1024).
const std::vector<mutant_case> kCases = {
    {"B01", "qwen3_8b.o", false, {1, 2, 64, 65, 129}, "2 segments above M = 64"},
    {"B02", "k2880", false, {9}, "the last 576 of 2880 K elements dropped"},
    {"B03",
     "qwen3_8b.o",
     false,
     {1, 3, 63, 64, 65, 129},
     "butterfly order flips at M = 64 for K = 4096"},
    {"B04",
     "short_k128",
     false,
     {1, 3, 33},
     "split partials of the four 32-wide segments rounded to bf16"},
    {"B05",
     "qwen3_8b.o",
     true,
     {1, 2, 1024, 1025},
     "bias inside partial 0 while split (M <= 1024)"},
    {"B06", "qwen3_8b.o", false, {64}, "partials summed in a random arrival order"},
    {"B07", "n32", false, {1, 2047, 2048}, "2 segments from the undeclared threshold M = 2048"},
    {"B08", "n32", false, {1, 264, 265}, "132 / ceil(M / 8) splits: 4 up to M = 264, then 2"},
};

check_result run_named_check(std::string_view check, matmul_testbed& testbed,
                             const std::vector<int64_t>& sizes) {
  if (check == "batch_invariance") return testbed.batch_invariance(sizes, -1, true);
  if (check == "accuracy") return testbed.accuracy(sizes.front());
  if (check == "launch_config_independence") return testbed.launch_config_independence(sizes);
  if (check == "run_to_run") return testbed.run_to_run(sizes.front(), 8);
  throw std::runtime_error("no matmul check named " + std::string(check));
}

}  // namespace

TEST_CASE("matmul_mutation every B mutant is killed by its catalog check", "[mutation]") {
  const auto& fixture = shapes_fixture();
  for (const auto& c : kCases) {
    const auto* entry = find_mutant(c.id);
    REQUIRE(entry != nullptr);
    const std::string check(entry->killing_check);
    CAPTURE(c.id, check, c.shape, c.why);
    const matmul_shape& shape = fixture.shape(c.shape);
    int64_t max_m = 1;
    for (const int64_t m : c.sizes) max_m = std::max(max_m, m);
    const testbed_config config{shape, std::min(kMutationColumns, shape.n), c.bias, 7, max_m};

    auto mutant = make_runner(find_subject(cpu_matmuls(), std::string("cpu.segmented:") + c.id));
    matmul_testbed mutant_bed(*mutant, config);
    require_fail(run_named_check(check, mutant_bed, c.sizes));

    auto correct = make_runner(find_subject(cpu_matmuls(), "cpu.segmented"));
    matmul_testbed correct_bed(*correct, config);
    require_pass(run_named_check(check, correct_bed, c.sizes));
  }
}

TEST_CASE("matmul_mutation B02 also fails the all-ones check", "[mutation]") {
  const matmul_shape& shape = shapes_fixture().shape("k2880");
  auto mutant = make_runner(find_subject(cpu_matmuls(), "cpu.segmented:B02"));
  matmul_testbed testbed(*mutant, {shape, kHostColumns, false, 7, 4});
  require_fail(testbed.all_ones(4));
}
