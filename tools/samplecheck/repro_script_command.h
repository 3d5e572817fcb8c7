// samplecheck repro-script FILE.json [-o OUT.py]: a standalone Python reproduction of a
// failed check's record. The generator is samplecheck_subject.repro_script (Python: the
// adapters that know how to call each subject are Python); this command only starts it.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace samplecheck::cli {

struct repro_script_request {
  std::string file;
  std::string output;  // empty: the generator's default (beside the record)
};

void add_repro_script_options(CLI::App* app, repro_script_request& r);

// Replaces this process with the generator; returns (2) only when it cannot be started.
int run_repro_script(const repro_script_request& r);

}  // namespace samplecheck::cli
