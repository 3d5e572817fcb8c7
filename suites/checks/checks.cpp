#include "suites/checks/checks.h"

#include <mutex>

namespace samplecheck::checks {

void register_checks() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Every check, in the order reports print them: one line a check.
    for (const auto row : {
             support_check,
             goodness_of_fit_check,
             ties_check,
             degenerate_rows_check,
             replay_check,
             offset_advancement_check,
             per_request_seeds_check,
             batch_reorder_check,
             parallel_samples_check,
             parameter_routing_check,
             tail_check,
             spelling_agreement_check,
             sampler_batch_invariance_check,
             sampler_run_to_run_check,
             round_advancement_check,
             stream_position_check,
             stream_agreement_check,
             matmul_batch_invariance_check,
             matmul_run_to_run_check,
             matmul_launch_configs_check,
             matmul_accuracy_check,
             matmul_all_ones_check,
             matmul_short_odd_k_check,
             collective_message_invariance_check,
             collective_run_to_run_check,
             collective_tp_invariance_check,
         })
      battery::register_check(row());
  });
}

}  // namespace samplecheck::checks
