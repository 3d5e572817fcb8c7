// The harness itself: a crashing, hanging, exiting or lazy subject (in its subject
// process) becomes a failed check (the run goes on), as does one that writes past its
// outputs or writes flags and tokens it may not; a subject's helpers die with it;
// checks that do not apply say n/a with a reason, failures leave a reproduction file,
// and plugins that cannot be used are refused with a message.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kernels/cpu/cpu_samplers.h"
#include "kernels/cpu/tests/host_descriptor.h"
#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/checks.h"
#include "suites/checks/distribution_tests.h"
#include "suites/harness/subject_server.h"
#include "suites/stats/combine.h"
#include "suites/stats/power.h"

using namespace samplecheck::battery;
namespace checks = samplecheck::checks;

namespace {
// The check kit's rows in the battery's table before any test plans a run.
[[maybe_unused]] const bool checks_registered = (checks::register_checks(), true);

sc_status crash_sample(void*, const sc_sample_batch*, char*, size_t) {
  ::raise(SIGSEGV);
  return SC_OK;
}
sc_status hang_sample(void*, const sc_sample_batch*, char*, size_t) {
  ::sleep(3600);
  return SC_OK;
}
sc_status lazy_sample(void*, const sc_sample_batch*, char*, size_t) { return SC_OK; }
// Token 0 for every row, after a quarter of a second: the time is the subject's.
sc_status slow_token_zero_sample(void*, const sc_sample_batch* b, char*, size_t) {
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  for (int64_t r = 0; r < b->num_output_rows; ++r) {
    b->out_token[r] = 0;
    b->out_valid[r] = 1;
  }
  return SC_OK;
}
// Always token 0, always valid: outside the support of most fixture rows.
sc_status token_zero_sample(void*, const sc_sample_batch* b, char*, size_t) {
  for (int64_t r = 0; r < b->num_output_rows; ++r) {
    b->out_token[r] = 0;
    b->out_valid[r] = 1;
  }
  return SC_OK;
}

// Plausible outputs (token r % V, valid) plus one breach each.
void write_rows(const sc_sample_batch* b) {
  for (int64_t r = 0; r < b->num_output_rows; ++r) {
    b->out_token[r] = static_cast<int32_t>(r % b->vocab_size);
    b->out_valid[r] = 1;
  }
}
sc_status past_token_end_sample(void*, const sc_sample_batch* b, char*, size_t) {
  write_rows(b);
  b->out_token[b->num_output_rows] = 0;
  return SC_OK;
}
sc_status past_valid_end_sample(void*, const sc_sample_batch* b, char*, size_t) {
  write_rows(b);
  b->out_valid[b->num_output_rows] = 1;
  return SC_OK;
}
sc_status valid_two_sample(void*, const sc_sample_batch* b, char*, size_t) {
  write_rows(b);
  b->out_valid[0] = 2;
  return SC_OK;
}
sc_status token_v_sample(void*, const sc_sample_batch* b, char*, size_t) {
  write_rows(b);
  b->out_token[0] = static_cast<int32_t>(b->vocab_size);
  return SC_OK;
}
sc_status exit_sample(void*, const sc_sample_batch*, char*, size_t) { std::exit(0); }

// Where a fake that starts a helper process writes the helper's pid; set by a test
// before the run, inherited by the check's child.
std::string g_helper_pid_file;

// Starts a helper that sleeps an hour holding every descriptor the subject's process
// has (the result pipe among them), once per process, and says its pid.
void start_helper_once() {
  static bool started = false;
  if (started) return;
  started = true;
  const pid_t helper = ::fork();
  if (helper == 0) {
    ::sleep(3600);
    ::_exit(0);
  }
  std::ofstream(g_helper_pid_file) << helper;
}

// cpu.multinomial, but leaving a helper behind: a correct subject with a bad habit.
sc_status helper_then_correct_sample(void*, const sc_sample_batch* b, char* error, size_t size) {
  start_helper_once();
  static const sc_sampler* real = [] {
    for (const sc_sampler* s : samplecheck::cpu_samplers())
      if (std::string(s->name) == "cpu.multinomial") return s;
    return static_cast<const sc_sampler*>(nullptr);
  }();
  return real->sample(real->context, b, error, size);
}
sc_status helper_then_hang_sample(void*, const sc_sample_batch*, char*, size_t) {
  start_helper_once();
  ::sleep(3600);
  return SC_OK;
}

// Dead: no such process, or a zombie waiting for whoever adopted it to reap it.
bool process_dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// The helper's pid once its file is written, then whether it dies within `wait_s`.
bool helper_died(double wait_s) {
  pid_t pid = 0;
  std::ifstream(g_helper_pid_file) >> pid;
  REQUIRE(pid > 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (!process_dead(pid)) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);  // leave nothing behind for ctest to wait on
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string fresh_pid_file(const char* tag) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("samplecheck_helper_" + std::string(tag) + "_" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  return path.string();
}

// The registry tests' smallest host descriptor, with this suite's rules and sample function.
sc_sampler fake(const char* name, sc_status (*fn)(void*, const sc_sample_batch*, char*, size_t)) {
  sc_sampler s = samplecheck::testing::host_descriptor(name, SC_ABI_VERSION_MINOR);
  s.tie_policy = SC_TIE_LOWEST_INDEX;
  s.filter_order = SC_ORDER_TOP_K_FIRST;
  s.philox_outputs_per_call = 2;
  s.sample = fn;
  return s;
}

subject as_subject(const sc_sampler& s) { return hosted(s); }

const check_report& find(const battery_report& r, const std::string& check) {
  if (const check_report* c = r.find(check)) return *c;
  FAIL("no row for check " << check);
  return r.checks.front();
}

run_options quick(std::vector<std::string> checks) {
  run_options o;
  o.budget = quick_budget();
  o.checks = std::move(checks);
  return o;
}

// The row of the one check `o` selects, run on the fake sampler `s` alone.
check_report run_alone(const sc_sampler& s, const run_options& o) {
  return find(run_battery(as_subject(s), o, {}), o.checks.front());
}

}  // namespace

TEST_CASE("a crashing subject fails its checks and the run goes on", "[battery][harness]") {
  const sc_sampler s = fake("test.crash", crash_sample);
  const auto report = run_battery(as_subject(s), quick({"replay", "batch_reorder"}), {});
  REQUIRE(report.checks.size() == 2);
  for (const auto& c : report.checks) {
    CHECK(c.result == verdict::fail);
    CHECK_THAT(c.detail, Catch::Contains("crashed: signal 11"));
  }
  CHECK_FALSE(report.passed());
}

TEST_CASE("a check's time is split between its subject's calls and the judge",
          "[battery][harness]") {
  // One call (support fails on its first OUT token): at least the subject's 0.25 s is
  // subject time, and the two parts add up to the check's wall time.
  const auto c = run_alone(fake("test.slow", slow_token_zero_sample), quick({"support"}));
  CHECK(c.result == verdict::fail);
  CHECK(c.subject_seconds >= 0.25);
  CHECK(c.subject_calls == 1);
  CHECK(c.subject_input_rows >= 1);
  CHECK(c.judge_seconds >= 0);
  CHECK(c.subject_seconds + c.judge_seconds == Approx(c.seconds));
  // An in-tree subject in its process: every call is on the clock, and a fast subject
  // leaves most of a check's time to the judge only where the judge is slow.
  subject_roster roster;
  roster.add_in_tree();
  const auto m =
      run_battery(*roster.find("cpu.multinomial"), quick({"goodness_of_fit"}), roster.lookup());
  for (const auto& row : m.checks) {
    CAPTURE(row.check, row.dtype, row.seconds, row.subject_seconds);
    CHECK(row.subject_seconds > 0);
    CHECK(row.subject_seconds <= row.seconds);
    // Every call returned outputs and was sent at least one row.
    CHECK(row.subject_calls > 0);
    CHECK(row.subject_calls <= row.samples);
    CHECK(row.subject_input_rows >= row.subject_calls);
  }
  // The run's seconds outside every check, by part: with the checks' they make the run's.
  double parts = 0;
  for (const auto& row : m.checks) parts += row.seconds;
  for (const char* part : {"platform", "plan", "between_checks", "subject_stop", "records"}) {
    CAPTURE(part, m.outside_seconds.dump());
    REQUIRE(m.outside_seconds.contains(part));
    CHECK(m.outside_seconds[part].get<double>() >= 0);
    parts += m.outside_seconds[part].get<double>();
  }
  CHECK(parts == Approx(m.seconds).margin(1e-3));
}

TEST_CASE("a subject's start-up within a check is the subject's time, not the judge's",
          "[battery][harness]") {
  // Its process takes 0.4 s to say hello. The run stops it at its end, so the next run's
  // first call starts it again, inside that run's check.
  const sc_sampler s = fake("test.slow_start", token_zero_sample);
  const subject slow{.sampler = &s,
                     .process = samplecheck::harness::subject_process::fork(
                         [&s](int control, int shm) {
                           std::this_thread::sleep_for(std::chrono::milliseconds(400));
                           return samplecheck::harness::serve(control, shm, {.samplers = {&s}});
                         },
                         "the slow-starting process", 10)};
  for (int run = 0; run < 2; ++run) {
    const auto c = find(run_battery(slow, quick({"support"}), {}), "support");
    CAPTURE(run, c.seconds, c.subject_seconds, c.judge_seconds);
    CHECK(c.result == verdict::fail);
    CHECK(c.subject_seconds >= 0.4);
    CHECK(c.judge_seconds < 0.4);
    CHECK(c.subject_seconds + c.judge_seconds == Approx(c.seconds));
  }
}

TEST_CASE("a hanging subject is killed at the per-check timeout", "[battery][harness]") {
  run_options o = quick({"replay"});
  o.timeout_s = 2;
  const auto c = run_alone(fake("test.hang", hang_sample), o);
  CHECK(c.result == verdict::timeout);
  CHECK(c.failed());
  CHECK_THAT(c.detail, Catch::Contains("timed out after 2 s"));
  CHECK(c.seconds < 10);
}

TEST_CASE("an output row left unwritten is a failure, not a draw", "[battery][harness]") {
  const auto c = run_alone(fake("test.lazy", lazy_sample), quick({"support"}));
  CHECK(c.result == verdict::fail);
  CHECK_THAT(c.detail, Catch::Contains("never wrote out_valid"));
}

TEST_CASE("an OUT token fails support at once and leaves a reproduction file",
          "[battery][harness]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("samplecheck_repro_" + std::to_string(::getpid()));
  run_options o = quick({"support"});
  o.repro_dir = dir.string();
  const auto c = run_alone(fake("test.token_zero", token_zero_sample), o);
  CHECK(c.result == verdict::fail);
  CHECK_THAT(c.detail,
             Catch::Contains("token 0") && Catch::Contains("OUT") && Catch::Contains("seed"));
  REQUIRE_FALSE(c.repro_path.empty());
  std::ifstream f(c.repro_path);
  const auto repro = nlohmann::json::parse(f);
  CHECK(repro.at("format") == "samplecheck-repro");
  CHECK(repro.at("subject") == "test.token_zero");
  CHECK(repro.at("check") == "support");
  CHECK(repro.at("dtype") == "f32");
  CHECK(repro.at("evidence").contains("row"));
  CHECK(repro.at("evidence").contains("params"));
  // The OUT token's draw: its subsequence and offset.
  CHECK(repro.at("evidence").contains("subsequence"));
  CHECK(repro.at("evidence").contains("offset"));
  CHECK(repro.at("seed") == kDefaultSeed);
  std::filesystem::remove_all(dir);
}

TEST_CASE("checks that do not apply say n/a with the reason, never pass", "[battery][harness]") {
  subject_roster roster;
  roster.add_in_tree();
  const subject* multinomial = roster.find("cpu.multinomial");
  REQUIRE(multinomial != nullptr);
  // (ties applies to every sampler: exact ties must split evenly.)
  const auto report = run_battery(*multinomial, quick({"parameter_routing", "spelling_agreement"}),
                                  roster.lookup());
  for (const auto& c : report.checks) {
    CAPTURE(c.check);
    CHECK(c.result == verdict::not_applicable);
    CHECK_FALSE(c.detail.empty());
  }
  // Only n/a rows: nothing ran, so nothing passed.
  CHECK_FALSE(report.passed());
}

TEST_CASE("an unknown check name is an error row", "[battery][harness]") {
  const sc_sampler s = fake("test.token_zero", token_zero_sample);
  const auto report = run_battery(as_subject(s), quick({"no_such_check"}), {});
  REQUIRE(report.checks.size() == 1);
  CHECK(report.checks[0].result == verdict::error);
  CHECK_FALSE(report.passed());
}

TEST_CASE("plugins that cannot be used are refused with a message", "[battery][harness]") {
  const auto missing = samplecheck::registry::load_plugin("/nonexistent/libnothing.so");
  CHECK_FALSE(missing.ok());
  CHECK_THAT(missing.error,
             Catch::Contains("/nonexistent/libnothing.so") && Catch::Contains("dlopen failed"));
#ifdef BAD_ABI_PLUGIN_PATH
  const auto bad = samplecheck::registry::load_plugin(BAD_ABI_PLUGIN_PATH);
  CHECK_FALSE(bad.ok());
  CHECK_THAT(bad.error, Catch::Contains("ABI version mismatch") && Catch::Contains("ABI 99."));
#endif
#ifdef EXAMPLE_PLUGIN_PATH
  const auto good = samplecheck::registry::load_plugin(EXAMPLE_PLUGIN_PATH);
  REQUIRE(good.ok());
  CHECK_FALSE(good.library->samplers().empty());
#endif
}

TEST_CASE("a malformed descriptor is named field by field", "[battery][harness]") {
  sc_sampler s = fake("test.bad", lazy_sample);
  s.sample = nullptr;
  CHECK_THAT(samplecheck::registry::validate_sampler(s), Catch::Contains("field sample is NULL"));
  s = fake("test.bad", lazy_sample);
  s.input_kind = 7;
  CHECK_THAT(samplecheck::registry::validate_sampler(s),
             Catch::Contains("field input_kind has unknown value 7"));
}

TEST_CASE("sample counts come from the power target, not a constant", "[battery][harness]") {
  subject_roster roster;
  roster.add_in_tree();
  const subject* s = roster.find("cpu.multinomial");
  REQUIRE(s != nullptr);
  const checks::judged_row row = checks::make_row(*s, samplecheck::fixtures::shape::peaked,
                                                  {.vocab_size = 32000, .seed = 4}, {});
  REQUIRE(row.target.ok());
  const auto coarse = checks::plan_gof_draws(row, 1e-7, 0.1, 0.99, 100000000);
  const auto fine = checks::plan_gof_draws(row, 1e-7, 0.05, 0.99, 100000000);
  CHECK_FALSE(coarse.capped);
  // Noncentrality grows like n * TVD^2 and df grows with n: halving the target TVD
  // needs at least 4x the draws.
  CHECK(fine.draws >= 4 * coarse.draws);
  // And the plan meets its target: the TVD detectable at the planned draws is <= 0.1.
  // (at the level of the row's Pearson sub-test: Sidak over its sub-tests).
  const double level = checks::pearson_level(row, 1e-7);
  CHECK(samplecheck::stats::detectable_tvd(coarse.df, level, coarse.draws, 0.99) <= 0.1 + 1e-9);
  const auto capped = plan_gof_draws(row, 1e-7, 0.001, 0.99, 5000);
  CHECK(capped.capped);
  CHECK(capped.draws == 5000);
}

TEST_CASE("a write past the end of an output fails the call on the guard row it hit",
          "[battery][harness]") {
  const auto t = run_alone(fake("test.past_token_end", past_token_end_sample), quick({"replay"}));
  CHECK(t.result == verdict::fail);
  CHECK_THAT(t.detail,
             Catch::Contains("the subject wrote past the end of out_token: element ") &&
                 Catch::Contains("+0 (a guard row) changed from 0x5ca1ab1e to 0x00000000"));
  const auto v = run_alone(fake("test.past_valid_end", past_valid_end_sample), quick({"replay"}));
  CHECK(v.result == verdict::fail);
  CHECK_THAT(v.detail, Catch::Contains("the subject wrote past the end of out_valid: element ") &&
                           Catch::Contains("+0 (a guard row) changed from 0xc3 to 0x01"));
}

TEST_CASE("out_valid = 2 is named as written, not as unwritten", "[battery][harness]") {
  const auto c = run_alone(fake("test.valid_two", valid_two_sample), quick({"replay"}));
  CHECK(c.result == verdict::fail);
  CHECK_THAT(c.detail,
             Catch::Contains("out_valid[0] = 2: the subject wrote a value other than 0 or 1"));
  CHECK_THAT(c.detail, !Catch::Contains("never wrote"));
}

TEST_CASE("a valid row's token V is reported with row, token and V", "[battery][harness]") {
  const auto c = run_alone(fake("test.token_v", token_v_sample), quick({"replay"}));
  CHECK(c.result == verdict::fail);
  const int64_t v = quick_budget().vocab_size;
  const std::string words = "output row 0 is valid but out_token[0] = " + std::to_string(v) +
                            " is outside [0, " + std::to_string(v) + ")";
  CHECK_THAT(c.detail, Catch::Contains(words));
}

TEST_CASE("a subject that exits inside sample() is said to have ended the check",
          "[battery][harness]") {
  const auto c = run_alone(fake("test.exit", exit_sample), quick({"replay"}));
  CHECK(c.result == verdict::fail);
  CHECK_THAT(c.detail, Catch::Contains("the subject process exited with status 0 before replying "
                                       "to sample request 1"));
}

TEST_CASE("a check ends with its reply, though a helper holds the subject's socket",
          "[battery][harness]") {
  g_helper_pid_file = fresh_pid_file("correct");
  run_options o = quick({"replay"});
  o.timeout_s = 60;
  const auto c = run_alone(fake("test.helper", helper_then_correct_sample), o);
  CHECK(c.result == verdict::pass);
  CHECK(c.seconds < 20);
  CHECK(helper_died(5));  // the subject process's group went with it at the end of the run
  std::filesystem::remove(g_helper_pid_file);
}

TEST_CASE("a timeout kills the subject's helpers with its process", "[battery][harness]") {
  g_helper_pid_file = fresh_pid_file("hang");
  run_options o = quick({"replay"});
  o.timeout_s = 2;
  const auto c = run_alone(fake("test.helper_hang", helper_then_hang_sample), o);
  CHECK(c.result == verdict::timeout);
  CHECK_THAT(c.detail, Catch::Contains("timed out after 2 s"));
  CHECK(helper_died(5));
  std::filesystem::remove(g_helper_pid_file);
}
