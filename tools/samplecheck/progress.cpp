#include "tools/samplecheck/progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "suites/battery/subject.h"

namespace samplecheck::cli {

using clock_type = std::chrono::steady_clock;

struct progress_printer::state {
  bool terminal;
  double every;  // off a terminal: seconds between a running check's lines
  std::string unit;
  int batteries;
  clock_type::time_point start = clock_type::now(), check_start = start, last_line = start;
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false, drawing = false;
  std::string subject, check;
  int index = 0, total = 0, batteries_done = 0, checks_done = 0;
  uint64_t samples = 0;      // every finished check's, over all batteries
  double check_seconds = 0;  // finished checks' time
  // This battery: its checks' planned samples (counted beside the checks, so the total grows
  // until every plan is counted), what its finished checks drew and took, and the plans of
  // the checks not yet finished (this one included).
  uint64_t planned_total = 0, planned_left = 0, planned_finished = 0, battery_samples = 0,
           check_planned = 0;
  double battery_seconds = 0;
  bool all_planned = true, check_plan_stated = true;
  std::thread ticker;

  double elapsed() const {
    return std::chrono::duration<double>(clock_type::now() - start).count();
  }
};

namespace {

// Writes with write(2), not stdio: a line reaches stderr whole, never held in a buffer that
// a process forked later (a subject process, calibrate's workers) would inherit and repeat.
void put(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}

// "about 0:40 left". With batteries: the mean battery time times the batteries left.
// Else from samples: the plans of the checks not yet finished at the rate (samples a
// second) this battery's finished checks drew, less the time this check has run; from
// the mean check time times the checks left while no finished check drew a sample.
std::string left_text(const progress_printer::state& s, double in_check) {
  const double elapsed = s.elapsed();
  if (s.batteries > 0) {
    if (s.batteries_done == 0) return "";
    const double per = elapsed / s.batteries_done;
    return fmt::format(", about {} left", clock_text(per * (s.batteries - s.batteries_done)));
  }
  if (s.checks_done == 0) return "";
  if (s.battery_samples > 0 && s.battery_seconds > 0 && s.planned_total > 0) {
    const double rate = static_cast<double>(s.battery_samples) / s.battery_seconds;
    const double left = static_cast<double>(s.planned_left) / rate - in_check;
    return fmt::format(", about {} left", clock_text(std::max(left, 0.0)));
  }
  const double per = s.check_seconds / s.checks_done;
  const int left = s.total - s.index + (s.drawing ? 1 : 0);
  return fmt::format(", about {} left", clock_text(per * std::max(left, 0)));
}

// "1,234,567": a plan's digits grouped, so a terminal line reads at a glance.
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "of 1,234 planned" ("1,234+" when a check of the battery states no plan).
std::string planned_text(uint64_t planned, bool all_planned) {
  return fmt::format("{}{} planned", grouped(planned), all_planned ? "" : "+");
}

std::string battery_text(const progress_printer::state& s) {
  if (s.unit.empty()) return "";
  return s.batteries > 0 ? fmt::format("{} {}/{} ", s.unit, s.batteries_done + 1, s.batteries)
                         : fmt::format("{} {} ", s.unit, s.batteries_done + 1);
}

// The redrawn line, cut to the terminal's width: a wrapped line could not be redrawn.
std::string status_line(const progress_printer::state& s) {
  const double in_check = std::chrono::duration<double>(clock_type::now() - s.check_start).count();
  // The running check's samples as its subject returns them, not only when it ends.
  const uint64_t drawn =
      s.battery_samples + (s.drawing ? battery::subject_clock::samples_now() : 0);
  std::string line =
      fmt::format("{}[{}/{}] {} {} ({}), samples {} / {}, elapsed {}{}", battery_text(s), s.index,
                  s.total, s.subject, s.check, clock_text(in_check), grouped(drawn),
                  planned_text(s.planned_total, s.all_planned), clock_text(s.elapsed()),
                  left_text(s, s.drawing ? in_check : 0));
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 &&
      line.size() >= size.ws_col)
    line.resize(size.ws_col - 1);
  return "\r\033[K" + line;
}

// Off a terminal, the running check's line: "still drawing", its samples so far.
std::string drawing_line(const progress_printer::state& s) {
  const double in_check = std::chrono::duration<double>(clock_type::now() - s.check_start).count();
  return fmt::format(
      "samplecheck: still drawing {}[{}/{}] {} {}: {}, {} samples of {}; elapsed "
      "{}{}\n",
      battery_text(s), s.index, s.total, s.subject, s.check, clock_text(in_check),
      battery::subject_clock::samples_now(),
      s.check_plan_stated ? fmt::format("{} planned", s.check_planned)
                          : std::string("no stated plan"),
      clock_text(s.elapsed()), left_text(s, in_check));
}

void on_event(progress_printer::state& s, const battery::progress_event& e) {
  std::lock_guard lock(s.mutex);
  s.subject = std::string(e.subject);
  s.check = std::string(e.check);
  s.index = e.index;
  s.total = e.total;
  if (e.index == 1 && !e.finished) {  // a battery starts
    s.planned_finished = 0;
    s.battery_samples = 0;
    s.battery_seconds = 0;
  }
  if (!e.finished) s.planned_total = e.total_planned;
  s.all_planned = e.all_planned;
  s.planned_left = s.planned_total - std::min(s.planned_total, s.planned_finished);
  if (!e.finished) {
    s.check_start = s.last_line = clock_type::now();
    s.check_planned = e.planned, s.check_plan_stated = e.plan_stated;
    s.drawing = true;
    if (s.terminal) put(status_line(s));
    return;
  }
  s.samples += e.samples;
  s.check_seconds += e.seconds;
  s.battery_samples += e.samples;
  s.battery_seconds += e.seconds;
  s.planned_finished += e.planned;
  s.planned_left -= std::min(s.planned_left, e.planned);
  ++s.checks_done;
  s.drawing = false;
  const bool battery_ended = e.index == e.total;
  if (s.terminal) {
    put(battery_ended ? "\r\033[K" : status_line(s));
  } else if (s.batteries == 0) {
    put(fmt::format(
        "samplecheck: {}[{}/{}] {} {}: {:.2f} s, {} samples of {}{}; elapsed {}{}\n",
        battery_text(s), e.index, e.total, s.subject, s.check, e.seconds, e.samples,
        e.plan_stated ? fmt::format("{} planned", e.planned) : std::string("no stated plan"),
        e.failed ? " (failed)" : "", clock_text(s.elapsed()), left_text(s, 0)));
  }
  if (battery_ended) {
    ++s.batteries_done;
    if (!s.terminal && s.batteries > 0)
      put(fmt::format("samplecheck: {} {}/{} done, {} samples, elapsed {}{}\n", s.unit,
                      s.batteries_done, s.batteries, s.samples, clock_text(s.elapsed()),
                      left_text(s, 0)));
  }
}

}  // namespace

progress_printer::progress_printer(bool terminal, double every, std::string unit, int batteries)
    : state_(std::make_shared<state>()) {
  state_->terminal = terminal;
  state_->every = every;
  state_->unit = std::move(unit);
  state_->batteries = batteries;
  // Redraws the line while a check runs (off a terminal: writes one every `every` seconds);
  // the check's own process never sees it.
  const auto tick = std::chrono::duration<double>(terminal ? 0.5 : std::min(every, 0.5));
  state_->ticker = std::thread([s = state_, tick] {
    std::unique_lock lock(s->mutex);
    while (!s->wake.wait_for(lock, tick, [&] { return s->stop; })) {
      if (!s->drawing) continue;
      if (s->terminal) {
        put(status_line(*s));
      } else if (std::chrono::duration<double>(clock_type::now() - s->last_line).count() >=
                 s->every) {
        put(drawing_line(*s));
        s->last_line = clock_type::now();
      }
    }
  });
}

progress_printer::~progress_printer() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
  }
  state_->wake.notify_all();
  if (state_->ticker.joinable()) state_->ticker.join();
  if (state_->terminal && state_->drawing) put("\r\033[K");
}

battery::progress_sink progress_printer::sink() {
  return [s = state_](const battery::progress_event& e) { on_event(*s, e); };
}

std::unique_ptr<progress_printer> make_progress(bool quiet, double every, std::string unit,
                                                int batteries) {
  if (quiet) return nullptr;
  return std::make_unique<progress_printer>(::isatty(STDERR_FILENO) == 1, every, std::move(unit),
                                            batteries);
}

}  // namespace samplecheck::cli
