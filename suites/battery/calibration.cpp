#include "suites/battery/calibration.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "suites/stats/binomial_intervals.h"

namespace samplecheck::battery {

namespace {

// What calibrate keeps of one run's battery_report.
struct run_record {
  bool passed = true;
  uint64_t samples = 0;
  double seconds = 0;
  struct entry {
    std::string name;  // check[dtype]
    double p_value = 1;
    bool failed = false;
    double alpha_share = 0;
  };
  std::vector<entry> checks;
};

run_record record_of(const battery_report& r) {
  run_record out{r.passed(), r.samples, r.seconds, {}};
  for (const auto& c : r.checks)
    if (c.p_value >= 0)
      out.checks.push_back({c.dtype.empty() ? c.check : c.check + "[" + c.dtype + "]", c.p_value,
                            c.failed(), std::max(c.alpha_share, 0.0)});
  return out;
}

nlohmann::json to_json(const run_record& r) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : r.checks) checks.push_back({c.name, c.p_value, c.failed, c.alpha_share});
  return {{"passed", r.passed}, {"samples", r.samples}, {"seconds", r.seconds}, {"checks", checks}};
}

run_record from_json(const nlohmann::json& j) {
  run_record r{j.at("passed"), j.at("samples"), j.at("seconds"), {}};
  for (const auto& c : j.at("checks")) r.checks.push_back({c.at(0), c.at(1), c.at(2), c.at(3)});
  return r;
}

void tell_progress(const run_options& o, const std::string& subject, const run_record& r) {
  if (!o.progress) return;
  progress_event e{.subject = subject, .check = "", .index = 1, .total = 1};
  e.plan_stated = e.all_planned = false;
  o.progress(e);
  e.finished = true;
  e.samples = r.samples;
  e.seconds = r.seconds;
  e.failed = !r.passed;
  o.progress(e);
}

void write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(3);
    done += static_cast<size_t>(n);
  }
}

// Worker w: runs w, w + jobs, ..., one JSON line each ([run, record]) into fd. An
// exception ends the worker (status 4, its text on stderr), never returns into the parent's
// code.
[[noreturn]] void work(const subject& s, run_options options, const subject_lookup& lookup,
                       int runs, uint64_t first_seed, int jobs, int w, int fd) {
  try {
    options.progress = nullptr;
    for (int i = w; i < runs; i += jobs) {
      options.seed = first_seed + static_cast<uint64_t>(i);
      const auto record = to_json(record_of(run_battery(s, options, lookup)));
      write_all(fd, nlohmann::json::array({i, record}).dump() + "\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "calibrate: worker %d: %s\n", w + 1, e.what());
    std::_Exit(4);
  }
  std::_Exit(0);
}

struct workers {
  std::vector<pollfd> fds;  // the read end of each worker's pipe (-1 once it closed)
  std::vector<pid_t> pids;
};

workers start_workers(const subject& s, const run_options& options, const subject_lookup& lookup,
                      int runs, uint64_t first_seed, int jobs) {
  workers out;
  for (int w = 0; w < jobs; ++w) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("calibrate: pipe failed");
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("calibrate: fork failed");
    if (pid == 0) {
      ::close(p[0]);
      work(s, options, lookup, runs, first_seed, jobs, w, p[1]);
    }
    ::close(p[1]);
    out.fds.push_back({p[0], POLLIN, 0});
    out.pids.push_back(pid);
  }
  return out;
}

// The workers' lines as they come, each run's record into got[run] (and progress told).
void collect(workers& ws, const run_options& options, const std::string& subject,
             std::vector<std::optional<run_record>>& got) {
  std::vector<std::string> pending(ws.fds.size());
  for (size_t open = ws.fds.size(); open > 0;) {
    if (::poll(ws.fds.data(), ws.fds.size(), -1) < 0 && errno != EINTR)
      throw std::runtime_error("calibrate: poll failed");
    for (size_t w = 0; w < ws.fds.size(); ++w) {
      if (ws.fds[w].fd < 0 || ws.fds[w].revents == 0) continue;
      char buf[1 << 16];
      const ssize_t n = ::read(ws.fds[w].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(ws.fds[w].fd);
        ws.fds[w].fd = -1;
        --open;
        continue;
      }
      pending[w].append(buf, static_cast<size_t>(n));
      for (size_t eol; (eol = pending[w].find('\n')) != std::string::npos;) {
        const auto line = nlohmann::json::parse(pending[w].substr(0, eol));
        pending[w].erase(0, eol + 1);
        auto& slot = got.at(line.at(0).get<size_t>());
        slot = from_json(line.at(1));
        tell_progress(options, subject, *slot);
      }
    }
  }
}

void reap(const workers& ws) {
  for (size_t w = 0; w < ws.pids.size(); ++w) {
    int status = 0;
    ::waitpid(ws.pids[w], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error(
          fmt::format("calibrate: worker {} of {} died ({})", w + 1, ws.pids.size(),
                      WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                                          : fmt::format("exit {}", WEXITSTATUS(status))));
  }
}

std::vector<run_record> run_in_workers(const subject& s, const run_options& options,
                                       const subject_lookup& lookup, int runs, uint64_t first_seed,
                                       int jobs) {
  workers ws = start_workers(s, options, lookup, runs, first_seed, jobs);
  std::vector<std::optional<run_record>> got(static_cast<size_t>(runs));
  collect(ws, options, s.name(), got);
  reap(ws);
  std::vector<run_record> out;
  for (int i = 0; i < runs; ++i) {
    if (!got[static_cast<size_t>(i)])
      throw std::runtime_error(fmt::format("calibrate: run {} never reported", i + 1));
    out.push_back(std::move(*got[static_cast<size_t>(i)]));
  }
  return out;
}

}  // namespace

calibration_summary calibrate(const subject& s, run_options options, const subject_lookup& lookup,
                              int runs, uint64_t first_seed, int jobs) {
  std::vector<run_record> records;
  if (jobs > 1) {
    records = run_in_workers(s, options, lookup, runs, first_seed, std::min(jobs, runs));
  } else {
    for (int i = 0; i < runs; ++i) {
      options.seed = first_seed + static_cast<uint64_t>(i);
      records.push_back(record_of(run_battery(s, options, lookup)));
    }
  }
  calibration_summary out;
  out.runs = runs;
  out.alpha = options.alpha;
  for (const run_record& r : records) {
    out.failed_runs += r.passed ? 0 : 1;
    for (const auto& c : r.checks) {
      auto& u = out.checks[c.name];
      u.p_values.push_back(c.p_value);
      u.false_alarms += c.failed ? 1 : 0;
      u.expected_false_alarms += c.alpha_share;
    }
  }
  out.failure_p_value = stats::binomial_upper_tail(static_cast<uint64_t>(out.failed_runs),
                                                   static_cast<uint64_t>(runs), out.alpha);
  for (auto& [name, u] : out.checks) {
    const auto n = static_cast<uint64_t>(u.p_values.size());
    u.false_alarm_p = stats::binomial_upper_tail(
        u.false_alarms, n, std::min(1.0, u.expected_false_alarms / static_cast<double>(n)));
    u.uniformity = stats::uniformity(u.p_values);
  }
  return out;
}

bool calibration_summary::acceptable(double fail_below) const {
  bool ok = failure_p_value >= fail_below;
  for (const auto& [name, u] : checks)
    ok &= u.false_alarm_p >= fail_below && u.uniformity.ks_lower_p >= fail_below &&
          u.uniformity.median <= kMaxMedianP;
  return ok;
}

std::string format_calibration(const std::string& subject, const calibration_summary& s) {
  std::string out = fmt::format(
      "calibration of {}: {} runs with fresh seeds, alpha {:g}: {} failed runs "
      "(expected <= {:.3g}; P(X >= {}) = {:.3g})\n",
      subject, s.runs, s.alpha, s.failed_runs, s.runs * s.alpha, s.failed_runs, s.failure_p_value);
  out += fmt::format(
      "  {:<26} {:>5} {:>6} {:>8} {:>9} {:>7} {:>9} {:>7} {:>9} {:>7} {:<15} {:>9} {:>9}\n",
      "check", "n", "alarms", "expected", "P(>=)", "KS D", "KS p", "AD A2", "AD p", "median",
      "band (99.9%)", "sign p", "D- p");
  for (const auto& [name, u] : s.checks) {
    const auto& f = u.uniformity;
    out += fmt::format(
        "  {:<26} {:>5} {:>6} {:>8.3g} {:>9.3g} {:>7.4f} {:>9.3g} {:>7.3f} {:>9.3g} {:>7.3f} "
        "[{:.3f}, {:.3f}]  {:>9.3g} {:>9.3g}\n",
        name, f.n, u.false_alarms, u.expected_false_alarms, u.false_alarm_p, f.ks_distance, f.ks_p,
        f.ad_statistic, f.ad_p, f.median, f.median_low, f.median_high, f.sign_p, f.ks_lower_p);
  }
  return out;
}

}  // namespace samplecheck::battery
