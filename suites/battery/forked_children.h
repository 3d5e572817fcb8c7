// Work done in forked children that send JSON values back to the parent: calibrate's
// workers (runs shared among processes) and the fingerprint's device query (a child
// initialises CUDA so that this process never does). One value is one line on the
// child's pipe; the parent takes them as they come, from every child at once.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>

namespace samplecheck::battery {

using json_sender = std::function<void(const nlohmann::json&)>;

// body(w, send) runs in child w of `children` (w = 0 ..); on_value(w, v) in the parent,
// for each value child w sent, in the order it sent them. A child that throws, dies or
// exits non-zero is a std::runtime_error here naming it (after all children ended).
void run_forked_children(int children, const std::function<void(int, const json_sender&)>& body,
                         const std::function<void(int, nlohmann::json)>& on_value);

}  // namespace samplecheck::battery
