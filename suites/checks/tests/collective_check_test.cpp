// The collective checks (ABI minor 6) on the in-tree all-reduces: fixed_order passes both,
// the ring (which declares run invariance only) is n/a for message_invariance and fails it
// when judged anyway, X13 is killed by it; and the harness's rules for every collective call
// (the problem checked before the call, every rank's bits equal, every element written).
// in_tree() and hosted() serve a collective from a subject process, as a run does; the
// verdicts through it are compared with an in-process call's, and a process that crashes,
// overruns an output or writes an input fails the check.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/collective/cpu_collectives.h"
#include "kernels/registry/registry.h"
#include "suites/battery/replay.h"
#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/checks.h"
#include "suites/harness/collective_call.h"
#include "suites/harness/sampler_call.h"

using namespace samplecheck::battery;
using namespace samplecheck::checks;
using Catch::Matchers::Contains;

namespace {
[[maybe_unused]] const bool checks_registered = (register_checks(), true);

subject in_tree(const char* name) {
  const sc_collective* c = samplecheck::registry::find_collective(name);
  REQUIRE(c != nullptr);
  return hosted(*c);
}

battery_report run(const subject& s, const budget_settings& budget) {
  run_options o;
  o.budget = budget;
  return run_battery(s, o, [](std::string_view) { return nullptr; });
}

const check_report& row(const battery_report& r, std::string_view check) {
  if (const check_report* c = r.find(check)) return *c;
  FAIL("no row " << check);
  throw;
}

// A check of the table run on a subject whatever it declares (a known-failing control).
check_outcome run_anyway(const char* check, const subject& s) {
  const check_definition* def = nullptr;
  for (const auto& c : all_checks())
    if (c.name == check && c.applies_to == subject_kind::collective) def = &c;
  REQUIRE(def != nullptr);
  const budget_settings budget = quick_budget();
  const matmul_selection none{};
  const check_context ctx{s,
                          budget,
                          1,
                          0.0,
                          [](std::string_view) { return nullptr; },
                          none,
                          check,
                          check_seed(1, check)};
  return def->run(ctx);
}

}  // namespace

TEST_CASE("fixed_order keeps every element's bits at every size, offset, filler and run",
          "[battery][collective]") {
  const battery_report r = run(in_tree("cpu.allreduce.fixed_order"), quick_budget());
  CAPTURE(format_report(r, false));
  CHECK(r.kind == "collective");
  CHECK(r.passed());
  const check_report& m = row(r, "message_invariance");
  CHECK(m.result == verdict::pass);
  CHECK(m.samples > 0);
  CHECK_THAT(m.power, Contains("sizes 1-65536"));
  CHECK(row(r, "run_to_run").result == verdict::pass);
}

TEST_CASE("the standard budget's sizes reach 2^20 elements, and fixed_order passes there",
          "[battery][collective]") {
  run_options o;
  o.budget = standard_budget();
  o.checks = {"message_invariance"};
  const battery_report r = run_battery(in_tree("cpu.allreduce.fixed_order"), o,
                                       [](std::string_view) { return nullptr; });
  CAPTURE(format_report(r, false));
  CHECK(row(r, "message_invariance").result == verdict::pass);
  CHECK_THAT(row(r, "message_invariance").power, Contains("sizes 1-1048576"));
}

TEST_CASE("the ring is n/a for message_invariance, and fails it when judged anyway",
          "[battery][collective]") {
  const subject ring = in_tree("cpu.allreduce.ring");
  const battery_report r = run(ring, quick_budget());
  CAPTURE(format_report(r, false));
  CHECK(row(r, "message_invariance").result == verdict::not_applicable);
  CHECK_THAT(row(r, "message_invariance").detail, Contains("size_invariant"));
  CHECK(row(r, "run_to_run").result == verdict::pass);  // a ring is deterministic

  const check_outcome o = run_anyway("message_invariance", ring);
  CAPTURE(o.detail);
  REQUIRE(o.exact_failure);
  CHECK_THAT(o.detail, Contains("probe element") && Contains("count") && Contains("offset"));
  for (const char* key : {"world_size", "count", "offset", "filler", "element", "index",
                          "expected_bits", "actual_bits"})
    CHECK(o.repro.contains(key));
  CHECK(o.repro["expected_bits"] != o.repro["actual_bits"]);
}

TEST_CASE("X13 is killed by message_invariance at a message of 4,096 elements or more",
          "[battery][collective][mutation]") {
  const battery_report r = run(in_tree("cpu.allreduce.fixed_order:X13"), quick_budget());
  CAPTURE(format_report(r, false));
  const check_report& m = row(r, "message_invariance");
  CHECK(m.result == verdict::fail);
  REQUIRE(m.evidence.contains("count"));
  CHECK(m.evidence["count"].get<int64_t>() >= samplecheck::collective::kX13ChunkedFrom);
  CHECK(row(r, "run_to_run").result == verdict::pass);
  // Its reproduction record replays to the same failure and samples.
  const replay_plan plan = plan_replay(m.repro);
  CHECK(plan.subject == "cpu.allreduce.fixed_order:X13");
  const battery_report again = run_battery(in_tree("cpu.allreduce.fixed_order:X13"), plan.options,
                                           [](std::string_view) { return nullptr; });
  REQUIRE(again.checks.size() == 1);
  CHECK(compare_replay(m.repro, again.checks[0]).reproduced);
}

namespace {
// rank r's result summed from rank r on: ranks that disagree.
sc_status disagreeing(void*, const sc_collective_problem* p, char*, size_t) {
  const auto* const* in = reinterpret_cast<const float* const*>(p->inputs);
  for (int32_t r = 0; r < p->world_size; ++r)
    for (int64_t i = 0; i < p->count; ++i) {
      float acc = 0;
      for (int32_t s = 0; s < p->world_size; ++s) acc += in[(r + s) % p->world_size][i];
      static_cast<float*>(p->outputs[r])[i] = acc;
    }
  return SC_OK;
}
// Leaves the last element of every rank unwritten.
sc_status lazy(void*, const sc_collective_problem* p, char*, size_t) {
  for (int32_t r = 0; r < p->world_size; ++r)
    for (int64_t i = 0; i + 1 < p->count; ++i) static_cast<float*>(p->outputs[r])[i] = 0;
  return SC_OK;
}
sc_collective fake(const char* name, decltype(sc_collective::run) run) {
  return samplecheck::collective::host_f32_sum(name, SC_INVARIANT_SIZE | SC_INVARIANT_RUN, 4, run);
}
}  // namespace

TEST_CASE("every collective call: ranks must agree, every element written, the problem legal",
          "[collective]") {
  using samplecheck::harness::call_collective;
  const std::vector<std::vector<float>> three{{1e8f, 1.0f}, {-1e8f, 2.0f}, {1.0f, 3.0f}};
  const sc_collective split = fake("test.disagree", disagreeing);
  CHECK_THAT(call_collective(split, three, 2).fault, Contains("the ranks disagree: element 0"));
  const sc_collective unwritten = fake("test.lazy", lazy);
  CHECK_THAT(call_collective(unwritten, three, 2).fault,
             Contains("outputs[0] element 1 was left unwritten"));
  // Refused before any call: more ranks than declared, an empty message.
  const std::vector<std::vector<float>> five(5, std::vector<float>(2, 1.0f));
  CHECK_THROWS_WITH(call_collective(split, five, 2), Contains("field world_size is 5"));
  CHECK_THROWS_WITH(call_collective(split, {{}, {}}, 0), Contains("field count is 0"));
  // And through the battery: the ranks' disagreement is an exact failure of either check.
  const check_outcome o = run_anyway("run_to_run", hosted(split));
  CHECK(o.exact_failure);
  CHECK_THAT(o.detail, Contains("the ranks disagree"));
}

TEST_CASE("tp_invariance: the tree passes; rank order and the ring fail when judged anyway",
          "[battery][collective]") {
  const battery_report r = run(in_tree("cpu.allreduce.tree"), quick_budget());
  CAPTURE(format_report(r, false));
  CHECK(r.passed());
  for (const char* check : {"message_invariance", "run_to_run", "tp_invariance"})
    CHECK(row(r, check).result == verdict::pass);
  // Declared by the tree alone: the others are n/a.
  const battery_report fixed = run(in_tree("cpu.allreduce.fixed_order"), quick_budget());
  CHECK(row(fixed, "tp_invariance").result == verdict::not_applicable);
  CHECK_THAT(row(fixed, "tp_invariance").detail, Contains("tree"));
  // Per-rank partial sums all-reduced in rank order, or by the ring: TP 4 is the first to
  // differ (at TP 2, a + b is b + a).
  for (const char* name : {"cpu.allreduce.fixed_order", "cpu.allreduce.ring"}) {
    const check_outcome o = run_anyway("tp_invariance", in_tree(name));
    CAPTURE(name, o.detail);
    REQUIRE(o.exact_failure);
    CHECK(o.repro["tp"] == 4);
    CHECK_THAT(o.detail, Contains("TP 4: layer output row"));
    CHECK(o.repro["expected_bits"] != o.repro["actual_bits"]);
  }
}

namespace {
// Every verdict of the quick battery, by check.
std::map<std::string, verdict> verdicts(const battery_report& r) {
  std::map<std::string, verdict> out;
  for (const auto& c : r.checks) out[c.check] = c.result;
  return out;
}
// Aborts the subject process on its first call.
sc_status crashing(void*, const sc_collective_problem*, char*, size_t) { std::abort(); }
// Writes one element past the end of every rank's output.
sc_status overrunning(void*, const sc_collective_problem* p, char*, size_t) {
  for (int32_t r = 0; r < p->world_size; ++r)
    for (int64_t i = 0; i <= p->count; ++i) static_cast<float*>(p->outputs[r])[i] = 0;
  return SC_OK;
}
// Adds one to rank 0's input before summing it: an input the subject only reads, changed.
sc_status scribbling(void*, const sc_collective_problem* p, char*, size_t) {
  auto* first = const_cast<float*>(static_cast<const float*>(p->inputs[0]));
  for (int64_t i = 0; i < p->count; ++i) first[i] += 1.0f;
  for (int32_t r = 0; r < p->world_size; ++r)
    for (int64_t i = 0; i < p->count; ++i) static_cast<float*>(p->outputs[r])[i] = first[i];
  return SC_OK;
}
}  // namespace

TEST_CASE("through the subject process a collective gets the verdicts it gets in-process",
          "[battery][collective]") {
  for (const char* name : {"cpu.allreduce.fixed_order", "cpu.allreduce.tree", "cpu.allreduce.ring",
                           "cpu.allreduce.fixed_order:X13"}) {
    const subject served = in_tree(name);
    REQUIRE(served.process != nullptr);
    const subject here{.collective = served.collective, .process = nullptr};
    const battery_report through = run(served, quick_budget()), local = run(here, quick_budget());
    CAPTURE(name, format_report(through, false));
    CHECK(verdicts(through) == verdicts(local));
    const bool mutant = std::string_view(name).ends_with(":X13");
    CHECK(through.passed() == !mutant);
    if (mutant)
      CHECK(row(through, "message_invariance").detail == row(local, "message_invariance").detail);
  }
}

TEST_CASE("a collective's process that crashes, overruns or writes its inputs fails the check",
          "[battery][collective]") {
  // A crash is the check's FAIL, and the run goes on (run_check catches the process's end).
  const sc_collective crash = fake("test.crash", crashing);
  run_options o;
  o.budget = quick_budget();
  o.checks = {"run_to_run", "message_invariance"};
  const battery_report died =
      run_battery(hosted(crash), o, [](std::string_view) { return nullptr; });
  CAPTURE(format_report(died, false));
  for (const char* check : {"run_to_run", "message_invariance"}) {
    CHECK(row(died, check).result == verdict::fail);
    CHECK_THAT(row(died, check).detail, Contains("signal"));
  }
  const sc_collective over = fake("test.overrun", overrunning);
  const check_outcome overran = run_anyway("run_to_run", hosted(over));
  CHECK(overran.exact_failure);
  CHECK_THAT(overran.detail, Contains("wrote past the end of outputs[0]"));
  const sc_collective scribble = fake("test.scribble", scribbling);
  const check_outcome wrote = run_anyway("run_to_run", hosted(scribble));
  CHECK(wrote.exact_failure);
  CHECK_THAT(wrote.detail, Contains("inputs[0] element 0 changed"));
}

namespace {
// Whether a CUDA device is present, asked in a child: CUDA initialised in this process would
// not work in the subject processes it forks afterwards.
bool device_present() {
  const pid_t pid = ::fork();
  if (pid == 0)
    ::_exit(samplecheck::harness::memory_space_available(SC_MEMORY_CUDA, nullptr) ? 0 : 1);
  int status = 1;
  REQUIRE(pid > 0);
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
}  // namespace

TEST_CASE("without a device, a device collective's subject process says it is unavailable",
          "[battery][collective]") {
  // The subject host copies a device collective's ranks to its device; with none (a CPU-only
  // build, or no GPU at run time) its hello says why, and the checks are skipped with that.
  const bool device = device_present();
#ifdef SAMPLECHECK_HAVE_CUDA
  const std::string why = "no CUDA device is present";
#else
  const std::string why = "this samplecheck was built without CUDA";
#endif
  sc_collective fake_device = fake("test.device", overrunning);
  fake_device.memory_space = SC_MEMORY_CUDA;
  const battery_report r = run(hosted(fake_device), quick_budget());
  CAPTURE(format_report(r, false), why);
  for (const char* check : {"message_invariance", "run_to_run"}) {
    if (!device) {
      CHECK(row(r, check).result == verdict::unavailable);
      CHECK_THAT(row(r, check).detail, Contains(why));
    } else {
      // Served: it writes past every output (host code on device memory may crash first), a
      // failure either way; battery_cuda_collective_test judges a real device collective.
      CHECK(row(r, check).result == verdict::fail);
    }
  }
}
