// run_call against fake host subjects that break the ABI one way each: every breach is
// caught on the call that makes it, with the fault kind and the exact words a report
// prints; a call the harness cannot make as asked never reaches the subject.
#include "suites/harness/sampler_call.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "suites/harness/host_call.h"

using namespace samplecheck::harness;

namespace {

// What a fake subject does with a batch; it sees every batch the harness sends.
using sample_fn = std::function<sc_status(const sc_sample_batch&, char* error, size_t size)>;

struct fake_behaviour {
  explicit fake_behaviour(sample_fn fn) : sample(std::move(fn)) {}
  sample_fn sample;
  int calls = 0;
  std::vector<sc_sample_batch> seen;
  std::vector<uint16_t> input_bits;  // the 16-bit input of the last call
};

sc_status fake_sample(void* context, const sc_sample_batch* b, char* error, size_t size) {
  auto& f = *static_cast<fake_behaviour*>(context);
  ++f.calls;
  f.seen.push_back(*b);
  if (b->input_dtype != SC_DTYPE_F32) {
    const auto* bits = static_cast<const uint16_t*>(b->input);
    f.input_bits.assign(bits, bits + b->num_input_rows * b->vocab_size);
  }
  return f.sample(*b, error, size);
}

sc_sampler fake_subject(fake_behaviour& f, uint32_t dtypes = SC_DTYPE_BIT(SC_DTYPE_F32)) {
  sc_sampler s{};
  s.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  s.name = "test.fake";
  s.memory_space = SC_MEMORY_HOST;
  s.input_kind = SC_INPUT_PROBS;
  s.input_dtypes = dtypes;
  s.philox_outputs_per_call = 2;
  s.context = &f;
  s.sample = fake_sample;
  return s;
}

// Token r % V on every output row, all valid: what a well-behaved subject might write.
void write_all(const sc_sample_batch& b) {
  for (int64_t r = 0; r < b.num_output_rows; ++r) {
    b.out_token[r] = static_cast<int32_t>(r % b.vocab_size);
    b.out_valid[r] = 1;
  }
}

// Two input rows of V = 5, four outputs through the row-index map.
sample_call four_outputs() {
  sample_call c;
  c.vocab_size = 5;
  c.num_input_rows = 2;
  c.input = {0.5f, 0.25f, 0.25f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f};
  c.row_index = {0, 1, 1, 0};
  c.seed = {1, 2, 3, 4};
  c.offset = {0, 0, 0, 0};
  return c;
}

call_status run_with(const sample_fn& sample, sample_call& c) {
  fake_behaviour f{sample};
  const sc_sampler s = fake_subject(f);
  const call_status st = run_call(s, c);
  REQUIRE(f.calls == 1);
  return st;
}

}  // namespace

TEST_CASE("a call that keeps every promise comes back ok with its outputs", "[harness]") {
  sample_call c = four_outputs();
  const call_status st = run_with(
      [](const sc_sample_batch& b, char*, size_t) {
        write_all(b);
        return SC_OK;
      },
      c);
  CHECK(st.ok());
  CHECK(st.describe() == "the call succeeded");
  CHECK(c.tokens == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(c.valid == std::vector<uint8_t>{1, 1, 1, 1});
}

TEST_CASE("the batch carries the call's shape, arrays and dtype", "[harness]") {
  sample_call c = four_outputs();
  c.top_p = {0.9f, 1.0f};
  fake_behaviour f{[](const sc_sample_batch& b, char*, size_t) {
    write_all(b);
    return SC_OK;
  }};
  const sc_sampler s = fake_subject(f);
  REQUIRE(run_call(s, c).ok());
  const sc_sample_batch& b = f.seen.at(0);
  CHECK(b.abi_version.major == SC_ABI_VERSION_MAJOR);
  CHECK(b.input_dtype == SC_DTYPE_F32);
  CHECK(b.num_input_rows == 2);
  CHECK(b.vocab_size == 5);
  CHECK(b.num_output_rows == 4);
  CHECK(b.input == c.input.data());
  CHECK(b.row_index == c.row_index.data());
  CHECK(b.top_p == c.top_p.data());
  CHECK(b.top_k == nullptr);  // empty: the filter is off
  CHECK(b.min_p == nullptr);
  CHECK(b.temperature == nullptr);
  CHECK(b.subsequence == nullptr);
  CHECK(b.seed == c.seed.data());
  CHECK(b.offset == c.offset.data());
  CHECK(b.flags == 0);
}

TEST_CASE("a write one past the end of an output is caught by its guard row", "[harness][canary]") {
  SECTION("out_token") {
    sample_call c = four_outputs();
    const call_status st = run_with(
        [](const sc_sample_batch& b, char*, size_t) {
          write_all(b);
          b.out_token[b.num_output_rows] = 7;
          return SC_OK;
        },
        c);
    CHECK(st.fault == call_fault::contract);
    CHECK(st.message ==
          "the subject wrote past the end of out_token: element 4+0 (a guard row) changed from "
          "0x5ca1ab1e to "
          "0x00000007");
    CHECK(st.describe() == "the subject broke the ABI contract: " + st.message);
    CHECK(c.tokens.size() == 4);  // the output rows still come back, without the guards
  }
  SECTION("out_valid, three rows past the end") {
    sample_call c = four_outputs();
    const call_status st = run_with(
        [](const sc_sample_batch& b, char*, size_t) {
          write_all(b);
          b.out_valid[b.num_output_rows + 3] = 1;
          return SC_OK;
        },
        c);
    CHECK(st.fault == call_fault::contract);
    CHECK(st.message ==
          "the subject wrote past the end of out_valid: element 4+3 (a guard row) changed from "
          "0xc3 to 0x01");
  }
  SECTION("the last guard row, by a subject that also refused the call") {
    sample_call c = four_outputs();
    const call_status st = run_with(
        [](const sc_sample_batch& b, char* error, size_t size) {
          b.out_token[b.num_output_rows + kGuardRows - 1] = -1;
          std::snprintf(error, size, "refused");
          return SC_ERR_INVALID_ARGUMENT;
        },
        c);
    CHECK(st.fault == call_fault::contract);
    CHECK(st.status == SC_ERR_INVALID_ARGUMENT);
    CHECK(st.message ==
          "the subject wrote past the end of out_token: element 4+63 (a guard row) changed from "
          "0x5ca1ab1e to "
          "0xffffffff");
  }
}

TEST_CASE("out_valid must be 0 or 1 and written; each breach is named for what it is",
          "[harness]") {
  SECTION("a value other than 0 or 1") {
    sample_call c = four_outputs();
    const call_status st = run_with(
        [](const sc_sample_batch& b, char*, size_t) {
          write_all(b);
          b.out_valid[1] = 2;
          return SC_OK;
        },
        c);
    CHECK(st.fault == call_fault::contract);
    CHECK(st.row == 1);
    CHECK(st.message == "out_valid[1] = 2: the subject wrote a value other than 0 or 1");
  }
  SECTION("never written: the sentinel is still there") {
    sample_call c = four_outputs();
    const call_status st = run_with(
        [](const sc_sample_batch& b, char*, size_t) {
          write_all(b);
          b.out_valid[2] = kUnwrittenValid;
          return SC_OK;
        },
        c);
    CHECK(st.fault == call_fault::contract);
    CHECK(st.row == 2);
    CHECK(st.message == "the subject returned SC_OK but never wrote out_valid[2]");
  }
  SECTION("a valid row whose token was never written") {
    sample_call c = four_outputs();
    const call_status st = run_with(
        [](const sc_sample_batch& b, char*, size_t) {
          for (int64_t r = 0; r < b.num_output_rows; ++r) b.out_valid[r] = 1;
          for (int64_t r = 1; r < b.num_output_rows; ++r) b.out_token[r] = 0;
          return SC_OK;
        },
        c);
    CHECK(st.fault == call_fault::contract);
    CHECK(st.message == "output row 0 is valid but the subject never wrote out_token[0]");
  }
  SECTION("an invalid row's token is unspecified: the sentinel left there is fine") {
    sample_call c = four_outputs();
    const call_status st = run_with(
        [](const sc_sample_batch& b, char*, size_t) {
          for (int64_t r = 0; r < b.num_output_rows; ++r) b.out_valid[r] = 0;
          return SC_OK;
        },
        c);
    CHECK(st.ok());
  }
}

TEST_CASE("a valid row's token outside [0, V) is reported with row, token and V", "[harness]") {
  sample_call c = four_outputs();
  const call_status st = run_with(
      [](const sc_sample_batch& b, char*, size_t) {
        write_all(b);
        b.out_token[3] = static_cast<int32_t>(b.vocab_size);
        return SC_OK;
      },
      c);
  CHECK(st.fault == call_fault::out_of_range);
  CHECK(st.row == 3);
  CHECK(st.message == "output row 3 is valid but out_token[3] = 5 is outside [0, 5)");
  CHECK(st.describe() == "the subject returned a token outside the vocabulary: " + st.message);
  CHECK(c.tokens[3] == 5);  // the draw itself comes back for the caller to tally

  SECTION("a negative token too, and a broken flag later in the batch wins over both") {
    sample_call d = four_outputs();
    const call_status later = run_with(
        [](const sc_sample_batch& b, char*, size_t) {
          write_all(b);
          b.out_token[0] = -3;
          b.out_valid[2] = 9;
          return SC_OK;
        },
        d);
    CHECK(later.fault == call_fault::contract);
    CHECK(later.message == "out_valid[2] = 9: the subject wrote a value other than 0 or 1");
    sample_call e = four_outputs();
    const call_status negative = run_with(
        [](const sc_sample_batch& b, char*, size_t) {
          write_all(b);
          b.out_token[0] = -3;
          return SC_OK;
        },
        e);
    CHECK(negative.message == "output row 0 is valid but out_token[0] = -3 is outside [0, 5)");
  }
}

TEST_CASE("a status other than SC_OK is the subject's, with its message", "[harness]") {
  sample_call c = four_outputs();
  const call_status st = run_with(
      [](const sc_sample_batch&, char* error, size_t size) {
        std::snprintf(error, size, "boom");
        return SC_ERR_INTERNAL;
      },
      c);
  CHECK(st.fault == call_fault::subject_status);
  CHECK(st.status == SC_ERR_INTERNAL);
  CHECK(st.describe() == "the subject returned status 4 (SC_ERR_INTERNAL): boom");
  sample_call d = four_outputs();
  const call_status silent =
      run_with([](const sc_sample_batch&, char*, size_t) { return SC_ERR_UNSUPPORTED; }, d);
  CHECK(silent.message == "status 2 with no message");
  CHECK(silent.describe() ==
        "the subject returned status 2 (SC_ERR_UNSUPPORTED): status 2 with no message");
  // A refusal need not write the outputs: they keep their sentinels.
  CHECK(d.valid == std::vector<uint8_t>(4, kUnwrittenValid));
  CHECK(d.tokens == std::vector<int32_t>(4, kUnwrittenToken));
}

TEST_CASE("a dtype the subject does not declare is refused without calling it",
          "[harness][dtype]") {
  fake_behaviour f{[](const sc_sample_batch& b, char*, size_t) {
    write_all(b);
    return SC_OK;
  }};
  const sc_sampler s = fake_subject(f, SC_DTYPE_BIT(SC_DTYPE_F32) | SC_DTYPE_BIT(SC_DTYPE_F16));
  sample_call c = four_outputs();
  c.input_dtype = SC_DTYPE_BF16;
  const call_status st = run_call(s, c);
  CHECK(st.fault == call_fault::harness);
  CHECK(st.message == "the subject does not declare dtype bf16");
  CHECK(st.describe() ==
        "the harness did not call the subject: the subject does not declare dtype bf16");
  c.input_dtype = 7;
  CHECK(run_call(s, c).message ==
        "the subject does not declare dtype 7 (no SC_DTYPE_* has that value)");
  CHECK(f.calls == 0);
  c.input_dtype = SC_DTYPE_F16;
  CHECK(run_call(s, c).ok());
  CHECK(f.calls == 1);
}

TEST_CASE("a value the dtype cannot hold exactly is the harness's error, naming row and column",
          "[harness][dtype]") {
  fake_behaviour f{[](const sc_sample_batch& b, char*, size_t) {
    write_all(b);
    return SC_OK;
  }};
  const sc_sampler s = fake_subject(f, SC_DTYPE_BIT(SC_DTYPE_BF16));
  sample_call c = four_outputs();
  c.input_dtype = SC_DTYPE_BF16;
  c.input[7] = 0.1f;  // row 1, column 2
  const call_status st = run_call(s, c);
  CHECK(st.fault == call_fault::harness);
  CHECK(
      st.message ==
      "input row 1, column 2: 0.100000001 is not exactly representable in bf16 (round_to_dtype the "
      "row first)");
  CHECK(f.calls == 0);
  // Rounded first, the same row goes through.
  c.input = round_to_dtype(c.input, SC_DTYPE_BF16);
  CHECK(run_call(s, c).ok());
  CHECK(f.calls == 1);
}

TEST_CASE("bf16 and f16 inputs reach the subject as their exact bit patterns", "[harness][dtype]") {
  for (const int32_t dtype : {SC_DTYPE_BF16, SC_DTYPE_F16}) {
    CAPTURE(dtype);
    fake_behaviour f{[](const sc_sample_batch& b, char*, size_t) {
      write_all(b);
      return SC_OK;
    }};
    const sc_sampler s = fake_subject(f, SC_DTYPE_BIT(dtype));
    sample_call c = four_outputs();
    c.input_dtype = dtype;
    c.input = {0.5f, -0.0f, 0.375f, 1.0f / 1024, 0.0f, INFINITY, NAN, 2.0f, 65280.0f, 0.25f};
    REQUIRE(run_call(s, c).ok());
    CHECK(f.seen.at(0).input_dtype == dtype);
    const std::vector<uint16_t> expected =
        dtype == SC_DTYPE_BF16 ? std::vector<uint16_t>{0x3f00, 0x8000, 0x3ec0, 0x3a80, 0x0000,
                                                       0x7f80, 0x7fc0, 0x4000, 0x477f, 0x3e80}
                               : std::vector<uint16_t>{0x3800, 0x8000, 0x3600, 0x1400, 0x0000,
                                                       0x7c00, 0x7e00, 0x4000, 0x7bf8, 0x3400};
    CHECK(f.input_bits == expected);
  }
}

TEST_CASE("host_call's view reads the call's arrays in place, so a test can spoil one",
          "[harness]") {
  sample_call c = four_outputs();
  c.top_k = {0, 0};
  host_call h(c);
  sc_sample_batch b = h.view();
  c.top_k[1] = -1;
  CHECK(b.top_k[1] == -1);
  b.out_token[0] = 2;
  b.out_valid[0] = 1;
  const call_status st = h.finish(SC_OK, "");
  CHECK(st.fault == call_fault::contract);
  CHECK(st.message == "the subject returned SC_OK but never wrote out_valid[1]");
  CHECK(c.tokens[0] == 2);
}

TEST_CASE("a memory space this build cannot reach is refused, not called", "[harness]") {
  fake_behaviour f{[](const sc_sample_batch&, char*, size_t) { return SC_OK; }};
  sc_sampler s = fake_subject(f);
  s.memory_space = SC_MEMORY_HIP;
  sample_call c = four_outputs();
  const call_status st = run_call(s, c);
  CHECK(st.fault == call_fault::harness);
  CHECK(st.message == "memory space 10 is not available");
  CHECK(f.calls == 0);
  std::string why;
  CHECK_FALSE(memory_space_available(SC_MEMORY_HIP, &why));
  CHECK(why == "memory space 10 is not supported by this samplecheck");
  CHECK(memory_space_available(SC_MEMORY_HOST, &why));
}

namespace {
// A subject that notes when it was entered and when it returned, and writes token 0.
struct clocked_subject {
  std::chrono::steady_clock::time_point entered, left;
};
sc_status clocked_sample(void* context, const sc_sample_batch* b, char*, size_t) {
  auto& c = *static_cast<clocked_subject*>(context);
  c.entered = std::chrono::steady_clock::now();
  std::fill_n(b->out_token, b->num_output_rows, 0);
  std::fill_n(b->out_valid, b->num_output_rows, uint8_t{1});
  c.left = std::chrono::steady_clock::now();
  return SC_OK;
}
}  // namespace

TEST_CASE("a call's subject_seconds is the subject's own time, not the harness's encoding",
          "[harness][clock]") {
  // 4M bf16 elements: encoding them takes the harness milliseconds before the subject is
  // called, which the subject's time must leave out (the report's judge column holds it).
  using clock = std::chrono::steady_clock;
  clocked_subject times;
  fake_behaviour unused{nullptr};
  sc_sampler s = fake_subject(unused, SC_DTYPE_BIT(SC_DTYPE_BF16));
  s.context = &times, s.sample = clocked_sample;
  sample_call c;
  c.vocab_size = 4096;
  c.num_input_rows = 1024;
  c.input.assign(size_t{4096} * 1024, 1.0f / 4096);
  c.input_dtype = SC_DTYPE_BF16;
  c.seed = {1, 2}, c.offset = {0, 0};
  const clock::time_point before = clock::now();
  const call_status st = run_call(s, c);
  const clock::time_point after = clock::now();
  REQUIRE(st.ok());
  const std::chrono::duration<double> inside = times.left - times.entered,
                                      encoding = times.entered - before,
                                      from_entry = after - times.entered;
  CAPTURE(st.subject_seconds, inside.count(), encoding.count(), from_entry.count());
  CHECK(st.subject_seconds >= inside.count());
  // The clock starts just before the subject is called (a function call's nanoseconds
  // before `entered`), long after the encoding began.
  CHECK(st.subject_seconds <= from_entry.count() + 1e-4);
  CHECK(encoding.count() > 1e-4);  // else the line above could not tell the two apart
}

TEST_CASE("a call the harness refuses carries no subject time", "[harness][clock]") {
  fake_behaviour f{[](const sc_sample_batch&, char*, size_t) { return SC_OK; }};
  const sc_sampler s = fake_subject(f);  // f32 only
  sample_call c = four_outputs();
  c.input_dtype = SC_DTYPE_BF16;
  const call_status st = run_call(s, c);
  CHECK(st.fault == call_fault::harness);
  CHECK(st.subject_seconds == -1);
}
