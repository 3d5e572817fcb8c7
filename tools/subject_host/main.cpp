// samplecheck-subject-host: serves in-tree subjects or a plugin's over the subject-process
// protocol (docs/subject-protocol.md), for anything that speaks it from the other end:
//
//   samplecheck qualify --exec "samplecheck-subject-host --plugin libvendor.so"
//   samplecheck qualify --exec "samplecheck-subject-host --in-tree cpu.dual_pivot"
//
// samplecheck itself forks the same server (suites/harness/subject_server.h) for its
// in-tree subjects and plugins; this program is that server behind an exec, for the
// bench, for a protocol peer's tests, and for running a plugin under a debugger.
// Exit status: 0 after shutdown, 2 bad usage or a plugin refused, 3 a protocol error.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "suites/harness/subject_server.h"

int main(int argc, char** argv) {
  std::string plugin;
  std::vector<std::string> in_tree;
  bool all_in_tree = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--plugin") == 0 && i + 1 < argc) {
      plugin = argv[++i];
    } else if (std::strcmp(argv[i], "--in-tree") == 0) {
      all_in_tree = true;
      while (i + 1 < argc && argv[i + 1][0] != '-') in_tree.emplace_back(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: samplecheck-subject-host (--plugin LIB.so | --in-tree [NAME...])\n"
                   "started by samplecheck --exec; see docs/subject-protocol.md\n");
      return 2;
    }
  }
  if (plugin.empty() == !all_in_tree) {
    std::fprintf(stderr, "samplecheck-subject-host: give exactly one of --plugin and --in-tree\n");
    return 2;
  }
  int control = -1, shm = -1;
  std::string why;
  if (!samplecheck::harness::descriptors_from_environment(control, shm, why)) {
    std::fprintf(stderr, "samplecheck-subject-host: %s\n", why.c_str());
    return 2;
  }
  return plugin.empty() ? samplecheck::harness::serve_in_tree(control, shm, in_tree)
                        : samplecheck::harness::serve_plugin(control, shm, plugin);
}
