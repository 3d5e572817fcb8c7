// The matmul door of the battery: bad problems are refused naming the field, and a
// matmul that crashes, hangs or errors becomes FAIL / TIMEOUT rows while the run goes
// on (never a dead run), as for samplers.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "kernels/registry/registry.h"
#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/checks.h"
#include "suites/harness/matmul_call.h"

using namespace samplecheck::battery;
using namespace samplecheck::checks;

namespace {
// The check kit's rows in the battery's table before any test plans a run.
[[maybe_unused]] const bool checks_registered = (register_checks(), true);

sc_status crash_run(void*, const sc_matmul_problem*, char*, size_t) {
  ::raise(SIGSEGV);
  return SC_OK;
}

sc_status hang_run(void*, const sc_matmul_problem*, char*, size_t) {
  for (;;) ::pause();
}

sc_status refuse_run(void*, const sc_matmul_problem*, char* error, size_t size) {
  std::snprintf(error, size, "test.refuse: this kernel supports no shape");
  return SC_ERR_UNSUPPORTED;
}

sc_matmul fake(const char* name, sc_status (*run)(void*, const sc_matmul_problem*, char*, size_t)) {
  sc_matmul m{};
  m.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  m.name = name;
  m.memory_space = SC_MEMORY_HOST;
  m.run = run;
  return m;
}

run_options small(std::vector<std::string> checks) {
  run_options o;
  o.budget = quick_budget();
  o.checks = std::move(checks);
  o.matmul.shapes = {{"64x256", 64, 256, "test"}};
  o.matmul.batch_sizes = {1, 2, 3};
  return o;
}

// Calls a matmul once on an m x k by n x k problem with one field broken.
struct problem_buffers {
  std::vector<uint16_t> a, w, out;
  sc_matmul_problem p{};
  problem_buffers(int64_t m, int64_t n, int64_t k)
      : a(static_cast<size_t>(m * k), 0x3f80),
        w(static_cast<size_t>(n * k), 0x3f80),
        out(static_cast<size_t>(m * n)) {
    p = samplecheck::harness::make_problem({m, n, k, a.data(), w.data(), nullptr, out.data()});
  }
};

}  // namespace

TEST_CASE("bad matmul problems are refused with the field named", "[battery][matmul]") {
  for (const char* name : {"cpu.persistent", "cpu.segmented"}) {
    const sc_matmul* m = samplecheck::registry::find_matmul(name);
    REQUIRE(m != nullptr);
    struct bad_case {
      const char* words;
      void (*spoil)(sc_matmul_problem&);
    };
    const bad_case cases[] = {
        {"m, n, k must be positive", [](sc_matmul_problem& p) { p.m = 0; }},
        {"m, n, k must be positive", [](sc_matmul_problem& p) { p.n = -1; }},
        {"m, n, k must be positive", [](sc_matmul_problem& p) { p.k = 0; }},
        {"a is NULL", [](sc_matmul_problem& p) { p.a = nullptr; }},
        {"weight is NULL", [](sc_matmul_problem& p) { p.weight = nullptr; }},
        {"out is NULL", [](sc_matmul_problem& p) { p.out = nullptr; }},
        {"launch_config 99 outside", [](sc_matmul_problem& p) { p.launch_config = 99; }},
        {"reserved0 and flags must be 0", [](sc_matmul_problem& p) { p.flags = 1; }},
    };
    for (const auto& c : cases) {
      CAPTURE(name, c.words);
      problem_buffers b(2, 8, 16);
      c.spoil(b.p);
      char error[256] = {};
      CHECK(m->run(m->context, &b.p, error, sizeof error) == SC_ERR_INVALID_ARGUMENT);
      CHECK_THAT(std::string(error), Catch::Contains(c.words));
    }
  }
}

TEST_CASE("a crashing matmul fails its checks and the run goes on", "[battery][matmul]") {
  const sc_matmul m = fake("test.crash_matmul", crash_run);
  const auto report = run_battery(hosted(m), small({"batch_invariance", "accuracy"}), {});
  REQUIRE(report.checks.size() == 2);
  for (const auto& c : report.checks) {
    CAPTURE(c.check, c.detail);
    CHECK(c.result == verdict::fail);
    CHECK_THAT(c.detail, Catch::Contains("crashed: signal 11"));
    CHECK(c.repro.at("kind") == "matmul");
  }
}

TEST_CASE("a hanging matmul times out, and after two hangs the rest is not run",
          "[battery][matmul]") {
  const sc_matmul m = fake("test.hang_matmul", hang_run);
  run_options o = small({"batch_invariance", "run_to_run", "accuracy"});
  o.timeout_s = 1;
  const auto report = run_battery(hosted(m), o, {});
  REQUIRE(report.checks.size() == 3);
  CHECK(report.checks[0].result == verdict::timeout);
  CHECK(report.checks[1].result == verdict::timeout);
  CHECK(report.checks[2].result == verdict::fail);
  CHECK_THAT(report.checks[2].detail, Catch::Contains("not run: the subject hung in 2 checks"));
  CHECK(report.seconds < 20);
}

TEST_CASE("a matmul that refuses every problem fails with its own message", "[battery][matmul]") {
  const sc_matmul m = fake("test.refuse", refuse_run);
  const auto report = run_battery(hosted(m), small({"accuracy"}), {});
  REQUIRE(report.checks.size() == 1);
  CHECK(report.checks[0].result == verdict::fail);
  CHECK_THAT(report.checks[0].detail, Catch::Contains("this kernel supports no shape"));
}

TEST_CASE("a matmul selection runs only the matmul checks, a sampler's only the sampler's",
          "[battery][matmul]") {
  subject_roster roster;
  roster.add_in_tree();
  const subject* matmul = roster.find("cpu.persistent");
  REQUIRE(matmul != nullptr);
  const auto report = run_battery(*matmul, small({"accuracy", "support"}), roster.lookup());
  REQUIRE(report.checks.size() == 1);
  CHECK(report.checks[0].check == "accuracy");
  CHECK(report.checks[0].result == verdict::pass);
  CHECK(report.checks[0].dtype.empty());
}
