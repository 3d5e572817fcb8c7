// The subject's side of the subject-process protocol for subjects behind the C ABI: the
// in-tree samplers, matmuls and collectives, and a plugin's, which is dlopen()ed here, in the
// subject process, so a plugin whose samplecheck_plugin() crashes or loops takes only this process
// with it. Device subjects get their batches copied to the device and their outputs (guard rows
// included) copied back here; samplecheck never touches a device. A device collective is not
// copied: its hello entry says it is unavailable.
//
// Used by samplecheck's forked subject processes and by samplecheck-subject-host.
#pragma once

#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::harness {

struct served_subjects {
  std::vector<const sc_sampler*> samplers = {};
  std::vector<const sc_matmul*> matmuls = {};
  std::vector<const sc_collective*> collectives = {};
};

// Serves the subjects until shutdown or end of file on `control_fd`; the exit status.
int serve(int control_fd, int shm_fd, const served_subjects& subjects);
// Loads the plugin (registry::load_plugin) and serves its subjects; a refusal is sent as
// an error frame naming the field (exit status 2).
int serve_plugin(int control_fd, int shm_fd, const std::string& path);
// The in-tree subjects named (all when `names` is empty); an unknown name is an error
// frame (exit status 2).
int serve_in_tree(int control_fd, int shm_fd, const std::vector<std::string>& names);
// The two descriptors from SAMPLECHECK_CONTROL_FD / SAMPLECHECK_SHM_FD; false (and why)
// when they are missing or not numbers.
bool descriptors_from_environment(int& control_fd, int& shm_fd, std::string& why);

}  // namespace samplecheck::harness
