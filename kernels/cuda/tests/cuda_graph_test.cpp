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

// Captures one call, then replays it with offsets advanced by the declared
// philox_outputs_per_call, the way a decode loop does between steps.
replay_verdict check_graph_replay(const sc_sampler& s) {
  const int64_t outputs = 64;
  const host_batch h = one_row(s, 32768, outputs);
  device_batch d(h);
  const call_result warm = d.run(s);  // sizes the subject's scratch outside capture
  REQUIRE(warm.status == SC_OK);

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

  check_cuda(cudaGraphLaunch(exec, stream), "replay");
  check_cuda(cudaStreamSynchronize(stream), "sync");
  const auto step0 = d.tokens();
  std::vector<uint64_t> advanced(h.offset);
  for (auto& o : advanced) o += s.philox_outputs_per_call;
  d.set_streams(h.seed, advanced);
  check_cuda(cudaGraphLaunch(exec, stream), "replay");
  check_cuda(cudaStreamSynchronize(stream), "sync");
  const auto step1 = d.tokens();
  const auto direct1 = d.run(s).token;

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  int64_t same = 0;
  for (int64_t r = 0; r < outputs; ++r) same += step0[r] == step1[r];
  // Fresh draws from this 32768-token row agree with probability < 1/16000 each:
  // 4 or more agreements among 64 have probability < 1e-12.
  return {step0 == warm.token && step1 == direct1, same < 4};
}

}  // namespace

TEST_CASE("a captured call replayed after the offset tensor advances draws fresh numbers", "[graph]") {
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
    host_batch h;
    h.vocab_size = v;
    std::vector<float> p(v);
    double total = 0;
    for (int64_t i = 0; i < v; ++i) total += p[i] = static_cast<float>(1.0 / std::pow(1.0 + (i * 40503) % v, 1.1));
    for (auto& x : p) x = static_cast<float>(x / total);
    h.input = gpu.input_kind == SC_INPUT_LOGITS ? logits_of(p) : p;
    h.row_index.assign(rows, 0);
    distinct_streams(h, rows);
    for (int64_t r = 0; r < rows; ++r) h.offset[r] = 4 * r + (r % 3);  // unaligned offsets too
    const call_result on_gpu = device_batch(h).run(gpu);
    REQUIRE(on_gpu.status == SC_OK);

    std::vector<int32_t> token(rows);
    std::vector<uint8_t> valid(rows);
    sc_sample_batch b{};
    b.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
    b.input = h.input.data(), b.input_dtype = SC_DTYPE_F32;
    b.num_input_rows = 1, b.vocab_size = v, b.num_output_rows = rows;
    b.row_index = h.row_index.data(), b.seed = h.seed.data(), b.offset = h.offset.data();
    b.out_token = token.data(), b.out_valid = valid.data();
    char message[256] = "";
    REQUIRE(cpu.sample(cpu.context, &b, message, sizeof message) == SC_OK);
    int64_t same = 0;
    for (int64_t r = 0; r < rows; ++r) same += token[r] == on_gpu.token[r] && valid[r] == on_gpu.valid[r];
    WARN(name << ": " << same << " of " << rows << " rows identical");
    CHECK(same >= rows - 1);
    // The comparison can fail: the twin one stream output later draws independent
    // tokens, which agree with probability sum p_i^2 (about 3% on this row).
    for (auto& o : h.offset) ++o;
    REQUIRE(cpu.sample(cpu.context, &b, message, sizeof message) == SC_OK);
    int64_t shifted = 0;
    for (int64_t r = 0; r < rows; ++r) shifted += token[r] == on_gpu.token[r];
    CHECK(shifted < rows / 2);
  }
}
#endif
