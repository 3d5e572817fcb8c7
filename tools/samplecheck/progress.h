// Progress of a long run on stderr. On a terminal: one line redrawn twice a second (the
// check, its place among the checks, the battery's samples done / planned, elapsed and
// the time left, estimated from the samples still planned); otherwise one line as each
// check ends, its samples "of N planned", and a "still drawing" line every `every` seconds
// while a check draws, so a log shows a long check's samples as they are drawn. It only
// reads the runner's events
// (battery::progress_sink), so no sample plan can depend on it.
#pragma once

#include <memory>
#include <string>

#include "suites/battery/runner.h"

namespace samplecheck::cli {

class progress_printer {
 public:
  // `batteries` > 0: the command runs that many batteries (calibrate's runs), counted as
  // `unit`s; the line then names the battery and, off a terminal, one line per battery.
  progress_printer(bool terminal, double every, std::string unit = "", int batteries = 0);
  ~progress_printer();
  progress_printer(const progress_printer&) = delete;
  progress_printer& operator=(const progress_printer&) = delete;

  battery::progress_sink sink();

  struct state;

 private:
  std::shared_ptr<state> state_;
};

// A printer for stderr unless quiet (then null): redrawn when stderr is a terminal.
std::unique_ptr<progress_printer> make_progress(bool quiet, double every, std::string unit = "",
                                                int batteries = 0);

}  // namespace samplecheck::cli
