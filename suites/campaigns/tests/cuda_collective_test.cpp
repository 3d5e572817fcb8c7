// The device collective through the subject host (GPU; exit 77 without one): the host copies
// each rank to the device and back, so cuda.allreduce.fixed_order passes the battery through
// its subject process and in-process, with the bits of cpu.allreduce.fixed_order; X13
// planted in it is killed by message_invariance in the kill matrix; and a device collective
// that overruns an output, leaves an element unwritten or writes an input is caught as a host
// one is (run_ranks, the one call of the subject host and of an in-process run).
//
// The subject processes are samplecheck-subject-host behind an exec (found beside this test),
// not forks of this process: the GPU main has initialised CUDA here, and a child forked
// after that cannot use CUDA.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/registry/registry.h"
#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "suites/campaigns/kill_matrix.h"
#include "suites/checks/checks.h"
#include "suites/harness/collective_call.h"

using namespace samplecheck::battery;
using namespace samplecheck::checks;
using Catch::Matchers::Contains;
using samplecheck::harness::call_collective;

namespace {
[[maybe_unused]] const bool checks_registered = (register_checks(), true);

// The two CUDA collectives, served by one exec'd subject host.
const subject_roster& served() {
  static const subject_roster roster = [] {
    subject_roster r;
    const std::filesystem::path host =
        std::filesystem::read_symlink("/proc/self/exe").parent_path() /
        SAMPLECHECK_TEST_SUBJECT_HOST;
    std::string command = "'";
    command += host.string();
    command += "' --in-tree cuda.allreduce.fixed_order cuda.allreduce.fixed_order:X13";
    r.add_exec(command);
    return r;
  }();
  return roster;
}

const sc_collective& named(const char* name) {
  const sc_collective* c = samplecheck::registry::find_collective(name);
  REQUIRE(c != nullptr);
  return *c;
}

battery_report run(const subject& s, std::vector<std::string> checks = {}) {
  run_options o;
  o.budget = quick_budget();
  o.checks = std::move(checks);
  return run_battery(s, o, [](std::string_view) { return nullptr; });
}

const check_report& row(const battery_report& r, std::string_view check) {
  if (const check_report* c = r.find(check)) return *c;
  FAIL("no row " << check);
  throw;
}

// Three ranks of `count` elements whose sums round differently in another order.
std::vector<std::vector<float>> ranks(int64_t count) {
  std::vector<std::vector<float>> in(3, std::vector<float>(static_cast<size_t>(count)));
  for (size_t i = 0; i < in[0].size(); ++i) {
    in[0][i] = 1e8f + static_cast<float>(i % 97);
    in[1][i] = -1e8f;
    in[2][i] = 0.5f + static_cast<float>(i % 13) * 0.25f;
  }
  return in;
}

// Device fakes: each writes its ranks with cudaMemset, so no kernel is needed to misbehave.
// 0x7f bytes make 0x7f7f7f7f, a finite float no rank sum of ranks() gives.
sc_status memset_outputs(const sc_collective_problem* p, int64_t elements) {
  for (int32_t r = 0; r < p->world_size; ++r)
    if (cudaMemset(p->outputs[r], 0x7f, static_cast<size_t>(elements) * 4) != cudaSuccess)
      return SC_ERR_DEVICE;
  return SC_OK;
}
sc_status overrunning(void*, const sc_collective_problem* p, char*, size_t) {
  return memset_outputs(p, p->count + 1);
}
sc_status lazy(void*, const sc_collective_problem* p, char*, size_t) {
  return memset_outputs(p, p->count - 1);
}
sc_status scribbling(void*, const sc_collective_problem* p, char*, size_t) {
  if (cudaMemset(const_cast<void*>(p->inputs[0]), 0x7f, 4) != cudaSuccess) return SC_ERR_DEVICE;
  return memset_outputs(p, p->count);
}
sc_collective device_fake(const char* name, decltype(sc_collective::run) run) {
  sc_collective c = named("cuda.allreduce.fixed_order");
  c.name = name, c.run = run, c.context = nullptr;
  return c;
}

}  // namespace

TEST_CASE(
    "cuda.allreduce.fixed_order passes through its process and in-process, with the CPU's bits",
    "[gpu][collective]") {
  const subject* through = served().find("cuda.allreduce.fixed_order");
  REQUIRE(through != nullptr);
  REQUIRE(through->process != nullptr);
  const subject here{.collective = &named("cuda.allreduce.fixed_order"), .process = nullptr};
  for (const subject* s : {through, &here}) {
    const battery_report r = run(*s);
    CAPTURE(s->process != nullptr, format_report(r, false));
    CHECK(r.passed());
    CHECK(row(r, "message_invariance").result == verdict::pass);
    CHECK(row(r, "run_to_run").result == verdict::pass);
  }
  // The same rank order on both sides of kX13ChunkedFrom: the GPU's bits are the CPU's, and
  // X13 changes them on both.
  for (const int64_t count : {int64_t{1000}, int64_t{70000}}) {
    const auto in = ranks(count);
    const auto gpu = call_collective(named("cuda.allreduce.fixed_order"), in, count);
    const auto cpu = call_collective(named("cpu.allreduce.fixed_order"), in, count);
    const auto gpu_x13 = call_collective(named("cuda.allreduce.fixed_order:X13"), in, count);
    const auto cpu_x13 = call_collective(named("cpu.allreduce.fixed_order:X13"), in, count);
    CAPTURE(count, gpu.fault, gpu.message, gpu_x13.fault);
    REQUIRE(gpu.status == SC_OK);
    CHECK(gpu.fault.empty());
    CHECK(gpu.out == cpu.out);
    CHECK(gpu_x13.out == cpu_x13.out);
    CHECK((gpu_x13.out != gpu.out) == (count >= 4096));
  }
}

TEST_CASE("cuda.allreduce.fixed_order:X13 is killed by message_invariance in the kill matrix",
          "[gpu][collective][mutation]") {
  const std::vector<subject> cuda(served().all().begin(), served().all().end());
  run_options options;
  options.budget = quick_budget();
  const auto results =
      samplecheck::campaigns::run_mutants(cuda, options, served().lookup(), /*named_only=*/false);
  std::fputs(samplecheck::campaigns::format_kill_matrix(results).c_str(), stdout);
  REQUIRE(results.size() == 1);
  CHECK(results[0].subject == "cuda.allreduce.fixed_order:X13");
  CHECK(results[0].named_check == "message_invariance");
  CHECK(results[0].killed_by_named);
}

TEST_CASE(
    "a device collective's overrun, unwritten element and written input are caught in-process",
    "[gpu][collective]") {
  const struct {
    const char* name;
    decltype(sc_collective::run) run;
    const char* words;
  } table[] = {
      {"test.device_overrun", overrunning, "wrote past the end of outputs[0]"},
      {"test.device_lazy", lazy, "was left unwritten"},
      {"test.device_scribble", scribbling, "inputs[0] element 0 changed"},
  };
  const auto in = ranks(64);
  for (const auto& t : table) {
    const sc_collective c = device_fake(t.name, t.run);
    CAPTURE(t.name);
    CHECK_THAT(call_collective(c, in, 64).fault, Contains(t.words));
    const battery_report r = run(subject{.collective = &c, .process = nullptr}, {"run_to_run"});
    CAPTURE(format_report(r, false));
    CHECK(row(r, "run_to_run").result == verdict::fail);
    CHECK_THAT(row(r, "run_to_run").detail, Contains(t.words));
  }
}
