// How samplecheck ends a subject process and everything it started: the subject runs in
// a process group of its own, and samplecheck is the child subreaper
// (PR_SET_CHILD_SUBREAPER), so a helper that left the group (setsid, setpgid) and lost its
// parent is reparented to samplecheck rather than to init, and is ended with the subject.
#pragma once

#include <sys/types.h>

#include <string>

namespace samplecheck::harness {

// Makes this process the subreaper of its descendants (once; the subject's parent side).
void become_subreaper();

// Whether the child has ended, without reaping it (its pid keeps the group id reserved).
bool child_ended(pid_t pid);

// Waits up to `seconds` for the child to end; its wait status, or -1 if it is alive.
int reap_within(pid_t pid, double seconds);

// Kills what is left of the subject `pid`: every process below it by parent links (while
// the subject lives its helpers are below it, whatever their group or session), its process
// group, the subject itself, reaped unless `reaped` already, and the children this process
// adopted from it: those in its group, and those in another session (samplecheck itself
// never calls setsid).
void end_subject(pid_t pid, bool reaped);

// "crashed: signal 11 (Segmentation fault)", "exited with status 3".
std::string wait_status_words(int status);

}  // namespace samplecheck::harness
