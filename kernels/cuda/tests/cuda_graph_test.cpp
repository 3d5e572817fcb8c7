// Two properties a serving engine relies on beyond the distribution:
//  - a sampling call captured in a CUDA graph and replayed after the seed / offset
//    DEVICE tensors were rewritten draws from the new streams (Megatron-LM #5697:
//    an offset frozen at capture repeats the same numbers every decode step);
//  - the Gumbel subjects pick the same token as their CPU twins on the same stream.
#include <catch2/catch.hpp>

#include "kernels/cuda/tests/device_batch_support.h"
#ifdef SAMPLECHECK_TEST_HAS_CPU
#include "kernels/cpu/cpu_samplers.h"
#endif

using namespace samplecheck::cuda_test;
namespace sc = samplecheck;

namespace {

struct replay_verdict {
  bool replay_matches_direct;  // the graph computes what a direct call computes
  bool fresh_after_advance;    // advancing the offset tensor changes the draws
};

// The outputs of the call last run on `d`, judged like any other call.
std::vector<int32_t> judged_tokens(const sc::harness::device_call& d, sample_call& call) {
  const sc::harness::call_status st = d.finish(SC_OK, "", call);
  INFO(st.describe());
  REQUIRE(st.ok());
  return call.tokens;
}

// A direct call on `d`'s buffers, required to succeed.
std::vector<int32_t> direct_tokens(const sc_sampler& s, sc::harness::device_call& d,
                                   sample_call& call) {
  const sc::harness::call_status st = sc::harness::run_device_call(s, d, call);
  INFO(st.describe());
  REQUIRE(st.ok());
  return call.tokens;
}

// Captures one call, then replays it with offsets advanced by the declared
// philox_outputs_per_call, the way a decode loop does between steps.
replay_verdict check_graph_replay(const sc_sampler& s) {
  const int64_t outputs = 64;
  sample_call h = one_row(s, 32768, outputs);
  sc::harness::device_call d(h);
  const auto warm = direct_tokens(s, d, h);  // sizes the subject's scratch outside capture

  cudaStream_t stream;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaGraph_t graph;
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  const sc_sample_batch b = d.view(stream);
  char message[256] = "";
  const sc_status captured = s.sample(s.context, &b, message, sizeof message);
  check_cuda(cudaStreamEndCapture(stream, &graph), "end capture");
  INFO(message);
  REQUIRE(captured == SC_OK);
  cudaGraphExec_t exec;
  check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");

  d.reset_outputs();  // sentinels again, so a replay that writes nothing cannot pass
  check_cuda(cudaGraphLaunch(exec, stream), "replay");
  check_cuda(cudaStreamSynchronize(stream), "sync");
  const auto step0 = judged_tokens(d, h);
  for (auto& o : h.offset) o += s.philox_outputs_per_call;
  d.set_streams(h.seed, h.offset);  // in place: the graph holds these addresses
  d.reset_outputs();
  check_cuda(cudaGraphLaunch(exec, stream), "replay");
  check_cuda(cudaStreamSynchronize(stream), "sync");
  const auto step1 = judged_tokens(d, h);
  const auto direct1 = direct_tokens(s, d, h);

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  int64_t same = 0;
  for (int64_t r = 0; r < outputs; ++r) same += step0[r] == step1[r];
  // Fresh draws from this 32768-token row agree with probability < 1/16000 each:
  // 4 or more agreements among 64 have probability < 1e-12.
  return {step0 == warm && step1 == direct1, same < 4};
}

}  // namespace

TEST_CASE("a captured call replayed after the offset tensor advances draws fresh numbers",
          "[graph]") {
  for (const sc_sampler* s : sc::cuda_samplers()) {
    if (is_mutant(*s)) continue;
    INFO(s->name);
    const replay_verdict verdict = check_graph_replay(*s);
    CHECK(verdict.replay_matches_direct);
    CHECK(verdict.fresh_after_advance);
  }
}

TEST_CASE("the graph replay check catches an offset frozen at capture (S02)", "[graph][mutant]") {
  const replay_verdict verdict = check_graph_replay(subject("cuda.dual_pivot:S02"));
  CHECK(verdict.replay_matches_direct);
  CHECK_FALSE(verdict.fresh_after_advance);
}

#ifdef SAMPLECHECK_TEST_HAS_CPU
namespace {

const sc_sampler& cpu_subject(std::string_view name) {
  for (const sc_sampler* s : sc::cpu_samplers())
    if (name == s->name) return *s;
  throw std::runtime_error("no CPU subject named " + std::string(name));
}

}  // namespace

// Same rule, same Philox numbers: the tokens can differ only where two keys fall
// within the float rounding of logf (device) against std::log (host), at most an ulp
// or two. At V = 32768 such near-ties decide well under one row in 1000, so we
// require >= 99.9% of rows identical (at most 1 of 1024).
TEST_CASE("Gumbel subjects pick the CPU twin's token on the same stream", "[gumbel][cpu]") {
  const int64_t v = 32768, rows = 1024;
  for (const char* name : {"gumbel_probs", "gumbel_logits", "gumbel_probs:S05"}) {
    INFO(name);
    const sc_sampler& gpu = subject(std::string("cuda.") + name);
    const sc_sampler& cpu = cpu_subject(std::string("cpu.") + name);
    sample_call h;
    std::vector<float> p(v);
    double total = 0;
    for (int64_t i = 0; i < v; ++i)
      total += p[i] = static_cast<float>(1.0 / std::pow(1.0 + (i * 40503) % v, 1.1));
    for (auto& x : p) x = static_cast<float>(x / total);
    add_row(h, gpu.input_kind == SC_INPUT_LOGITS ? logits_of(p) : p);
    h.row_index.assign(rows, 0);
    distinct_streams(h, rows);
    for (int64_t r = 0; r < rows; ++r) h.offset[r] = 4 * r + (r % 3);  // unaligned offsets too
    const call_result on_gpu = run(gpu, h);
    INFO(on_gpu.status.describe());
    REQUIRE(on_gpu.status.ok());

    call_result on_cpu = run(cpu, h);
    INFO(on_cpu.status.describe());
    REQUIRE(on_cpu.status.ok());
    int64_t same = 0;
    for (int64_t r = 0; r < rows; ++r)
      same += on_cpu.token[r] == on_gpu.token[r] && on_cpu.valid[r] == on_gpu.valid[r];
    WARN(name << ": " << same << " of " << rows << " rows identical");
    CHECK(same >= rows - 1);
    // The comparison can fail: the twin one stream output later draws independent
    // tokens, which agree with probability sum p_i^2 (about 3% on this row).
    for (auto& o : h.offset) ++o;
    on_cpu = run(cpu, h);
    REQUIRE(on_cpu.status.ok());
    int64_t shifted = 0;
    for (int64_t r = 0; r < rows; ++r) shifted += on_cpu.token[r] == on_gpu.token[r];
    CHECK(shifted < rows / 2);
  }
}
#endif
