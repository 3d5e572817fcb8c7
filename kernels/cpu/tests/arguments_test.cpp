// Bad calls: each is refused with the right status and a message naming the row and the
// field, and the caller's output buffers are left exactly as they were.
#include <cstring>
#include <functional>

#include "kernels/batch_rules.h"
#include "kernels/cpu/tests/batch_harness.h"

using namespace samplecheck;
using namespace samplecheck::cpu_test;

namespace {

struct bad_call {
  const char* what;
  std::function<void(call&, sc_sample_batch&)> spoil;
  sc_status expected;
  std::vector<const char*> message_has;
};

// Two input rows, four outputs through the row-index map, every filter array present
// at its "off" value so a single entry can be spoiled.
call two_rows(const sc_sampler& s) {
  const std::vector<float> row{0.5f, 0.25f, 0.25f};
  call c = rows_of({is_logits(s) ? log_of(row) : row, is_logits(s) ? log_of(row) : row});
  c.row_index = {0, 1, 1, 0};
  c.seed = {1, 2, 3, 4};
  c.offset = {0, 0, 0, 0};
  c.top_k = {0, 0};
  c.top_p = {1.0f, 1.0f};
  c.min_p = {0.0f, 0.0f};
  c.temperature = {1.0f, 1.0f};
  return c;
}

// Each call spoils one field of a valid call; the subject must refuse it with `expected`
// and a message naming the field.
const std::vector<bad_call> kBadCalls{
    {"negative top_k",
     [](call& c, sc_sample_batch&) { c.top_k[1] = -1; },
     SC_ERR_INVALID_ARGUMENT,
     {"input row 1", "top_k"}},
    {"top_p = 0",
     [](call& c, sc_sample_batch&) { c.top_p[1] = 0.0f; },
     SC_ERR_INVALID_ARGUMENT,
     {"input row 1", "top_p"}},
    {"top_p > 1",
     [](call& c, sc_sample_batch&) { c.top_p[0] = 1.5f; },
     SC_ERR_INVALID_ARGUMENT,
     {"input row 0", "top_p"}},
    {"top_p NaN",
     [](call& c, sc_sample_batch&) { c.top_p[0] = std::nanf(""); },
     SC_ERR_INVALID_ARGUMENT,
     {"input row 0", "top_p"}},
    {"min_p < 0",
     [](call& c, sc_sample_batch&) { c.min_p[1] = -0.1f; },
     SC_ERR_INVALID_ARGUMENT,
     {"input row 1", "min_p"}},
    {"min_p > 1",
     [](call& c, sc_sample_batch&) { c.min_p[1] = 1.1f; },
     SC_ERR_INVALID_ARGUMENT,
     {"input row 1", "min_p"}},
    {"negative temperature",
     [](call& c, sc_sample_batch&) { c.temperature[0] = -1.0f; },
     SC_ERR_INVALID_ARGUMENT,
     {"input row 0", "temperature"}},
    {"row_index out of range",
     [](call& c, sc_sample_batch&) { c.row_index[2] = 2; },
     SC_ERR_INVALID_ARGUMENT,
     {"output row 2", "row_index"}},
    {"negative row_index",
     [](call& c, sc_sample_batch&) { c.row_index[3] = -1; },
     SC_ERR_INVALID_ARGUMENT,
     {"output row 3", "row_index"}},
    {"NULL seed",
     [](call&, sc_sample_batch& b) { b.seed = nullptr; },
     SC_ERR_INVALID_ARGUMENT,
     {"seed"}},
    {"NULL offset",
     [](call&, sc_sample_batch& b) { b.offset = nullptr; },
     SC_ERR_INVALID_ARGUMENT,
     {"offset"}},
    {"NULL out_token",
     [](call&, sc_sample_batch& b) { b.out_token = nullptr; },
     SC_ERR_INVALID_ARGUMENT,
     {"out_token"}},
    {"NULL out_valid",
     [](call&, sc_sample_batch& b) { b.out_valid = nullptr; },
     SC_ERR_INVALID_ARGUMENT,
     {"out_valid"}},
    {"NULL input",
     [](call&, sc_sample_batch& b) { b.input = nullptr; },
     SC_ERR_INVALID_ARGUMENT,
     {"input"}},
    {"vocab_size 0",
     [](call&, sc_sample_batch& b) { b.vocab_size = 0; },
     SC_ERR_INVALID_ARGUMENT,
     {"vocab_size"}},
    {"negative vocab_size",
     [](call&, sc_sample_batch& b) { b.vocab_size = -3; },
     SC_ERR_INVALID_ARGUMENT,
     {"vocab_size"}},
    {"no row_index with fewer outputs",
     [](call&, sc_sample_batch& b) { b.row_index = nullptr; },
     SC_ERR_INVALID_ARGUMENT,
     {"row_index", "num_output_rows"}},
    {"ABI major mismatch",
     [](call&, sc_sample_batch& b) { b.abi_version.major = SC_ABI_VERSION_MAJOR + 1; },
     SC_ERR_INVALID_ARGUMENT,
     {"abi_version"}},
    {"nonzero flags",
     [](call&, sc_sample_batch& b) { b.flags = 1; },
     SC_ERR_INVALID_ARGUMENT,
     {"flags"}},
    {"unknown dtype",
     [](call&, sc_sample_batch& b) { b.input_dtype = 9; },
     SC_ERR_UNSUPPORTED,
     {"input_dtype"}},
};

}  // namespace

TEST_CASE("invalid calls are refused, named, and write nothing") {
  for (const sc_sampler* s : cpu_samplers()) {
    for (const bad_call& bad : kBadCalls) {
      CAPTURE(s->name, bad.what);
      call c = two_rows(*s);
      sc_sample_batch b = c.view();
      bad.spoil(c, b);
      const sc_status status = c.run(*s, b);
      CAPTURE(c.error);
      REQUIRE(status == bad.expected);
      REQUIRE(c.status.fault == call_fault::subject_status);  // no guard row touched either
      for (const char* part : bad.message_has) REQUIRE(c.error.find(part) != std::string::npos);
      REQUIRE(c.error.find(s->name) != std::string::npos);
      for (size_t r = 0; r < c.tokens.size(); ++r) {
        REQUIRE(c.tokens[r] == kUnwrittenToken);
        REQUIRE(c.valid[r] == kUnwrittenValid);
      }
    }
  }
}

TEST_CASE("the untouched two-row call is accepted, so each refusal above is the spoiled field's") {
  for (const sc_sampler* s : cpu_samplers()) {
    CAPTURE(s->name);
    call c = two_rows(*s);
    c.sample(*s);
    for (size_t r = 0; r < c.tokens.size(); ++r) {
      REQUIRE(c.valid[r] == 1);
      REQUIRE((c.tokens[r] >= 0 && c.tokens[r] < 3));
    }
  }
}

TEST_CASE("a filter the subject does not implement is SC_ERR_UNSUPPORTED") {
  for (const sc_sampler* s : correct_samplers()) {
    CAPTURE(s->name);
    call k = two_rows(*s), p = two_rows(*s), t = two_rows(*s);
    k.top_k[0] = 2;
    p.top_p[1] = 0.5f;
    t.temperature[1] = 0.5f;
    const sc_status k_status = k.run(*s, k.view()), p_status = p.run(*s, p.view()),
                    t_status = t.run(*s, t.view());
    REQUIRE(k_status == (s->filters & SC_FILTER_TOP_K ? SC_OK : SC_ERR_UNSUPPORTED));
    REQUIRE(p_status == (s->filters & SC_FILTER_TOP_P ? SC_OK : SC_ERR_UNSUPPORTED));
    REQUIRE(t_status == (s->filters & SC_FILTER_TEMPERATURE ? SC_OK : SC_ERR_UNSUPPORTED));
    if (k_status != SC_OK) REQUIRE(k.error.find("top_k") != std::string::npos);
  }
}

TEST_CASE("Gumbel subjects refuse rows longer than their declared stream budget covers") {
  for (const char* name : {"cpu.gumbel_probs", "cpu.gumbel_logits"}) {
    const sc_sampler& s = sampler_named(name);
    const auto vocab = static_cast<int64_t>(s.philox_outputs_per_call) + 1;
    call c = draws_of(std::vector<float>(vocab, 1.0f), 1);
    REQUIRE(c.run(s, c.view()) == SC_ERR_UNSUPPORTED);
    REQUIRE(c.error.find("vocab_size") != std::string::npos);
  }
}

TEST_CASE("a NULL batch, a short error buffer and no error buffer are all safe") {
  const sc_sampler& s = sampler_named("cpu.dual_pivot");
  char small[8];
  std::memset(small, 'x', sizeof small);
  REQUIRE(s.sample(s.context, nullptr, small, sizeof small) == SC_ERR_INVALID_ARGUMENT);
  REQUIRE(std::memchr(small, '\0', sizeof small) != nullptr);
  call c = two_rows(s);
  sc_sample_batch b = c.view();
  b.seed = nullptr;
  REQUIRE(s.sample(s.context, &b, nullptr, 0) == SC_ERR_INVALID_ARGUMENT);
  call empty = two_rows(s);
  sc_sample_batch none = empty.view();
  none.num_output_rows = 0;
  REQUIRE(s.sample(s.context, &none, nullptr, 0) == SC_OK);
}

// The CPU subjects word every refusal through kernels/batch_rules.h, which the CUDA
// driver uses too: each message must be exactly the one the rules format, so the
// two families cannot drift apart.
TEST_CASE("each refused field is worded exactly as batch_rules.h formats it") {
  using rules::field;
  struct spoiled {
    field f;
    int64_t row;  // output row for row_index, input row otherwise
    std::function<void(call&)> spoil;
    std::function<const void*(const call&)> value;
  };
  const std::vector<spoiled> cases{
      {field::row_index, 2, [](call& c) { c.row_index[2] = 7; },
       [](const call& c) { return &c.row_index[2]; }},
      {field::top_k, 1, [](call& c) { c.top_k[1] = -4; },
       [](const call& c) { return &c.top_k[1]; }},
      {field::top_p, 0, [](call& c) { c.top_p[0] = 1.25f; },
       [](const call& c) { return &c.top_p[0]; }},
      {field::min_p, 1, [](call& c) { c.min_p[1] = -0.5f; },
       [](const call& c) { return &c.min_p[1]; }},
      {field::temperature, 0, [](call& c) { c.temperature[0] = INFINITY; },
       [](const call& c) { return &c.temperature[0]; }},
      {field::top_k_unsupported, 1, [](call& c) { c.top_k[1] = 2; },
       [](const call& c) { return &c.top_k[1]; }},
      {field::top_p_unsupported, 0, [](call& c) { c.top_p[0] = 0.5f; },
       [](const call& c) { return &c.top_p[0]; }},
      {field::min_p_unsupported, 1, [](call& c) { c.min_p[1] = 0.25f; },
       [](const call& c) { return &c.min_p[1]; }},
      {field::temperature_unsupported, 1, [](call& c) { c.temperature[1] = 0.5f; },
       [](const call& c) { return &c.temperature[1]; }},
  };
  int unsupported_seen = 0;
  for (const sc_sampler* s : correct_samplers()) {
    for (const spoiled& x : cases) {
      CAPTURE(s->name, rules::field_name(x.f), static_cast<int>(x.f));
      if (rules::is_unsupported(x.f) && rules::declares(x.f, s->input_kind, s->filters)) continue;
      unsupported_seen += rules::is_unsupported(x.f);
      call c = two_rows(*s);
      x.spoil(c);
      const sc_status status = c.run(*s, c.view());
      char expected[256];
      const sc_status want =
          rules::report_refusal(s->name, x.f, x.row, x.value(c),
                                static_cast<int64_t>(c.top_k.size()), expected, sizeof expected);
      REQUIRE(status == want);
      REQUIRE(want == rules::status_of(x.f));
      REQUIRE(c.error == expected);
      REQUIRE(c.error.find(rules::field_name(x.f)) != std::string::npos);
      // row_index's bound is printed as a number.
      if (x.f != field::row_index)
        REQUIRE(c.error.find(rules::rule_text(x.f)) != std::string::npos);
    }
  }
  REQUIRE(unsupported_seen >
          0);  // some subject lacks some filter, so those messages are pinned too
}

TEST_CASE(
    "batch_rules.h: the messages, and a row's precedence: a forbidden value before a missing "
    "filter") {
  using rules::field;
  char text[256];
  const int32_t k = -1, index = 9;
  const float p = 1.5f, t = 0.5f;
  REQUIRE(rules::report_refusal("x", field::top_k, 2, &k, 4, text, sizeof text) ==
          SC_ERR_INVALID_ARGUMENT);
  REQUIRE(std::string(text) == "x: input row 2: top_k = -1 is negative");
  REQUIRE(rules::report_refusal("x", field::top_p, 1, &p, 4, text, sizeof text) ==
          SC_ERR_INVALID_ARGUMENT);
  REQUIRE(std::string(text) == "x: input row 1: top_p = 1.5 is outside (0, 1]");
  REQUIRE(rules::report_refusal("x", field::row_index, 3, &index, 4, text, sizeof text) ==
          SC_ERR_INVALID_ARGUMENT);
  REQUIRE(std::string(text) == "x: output row 3: row_index = 9 is outside [0, 4)");
  REQUIRE(rules::report_refusal("x", field::temperature_unsupported, 0, &t, 4, text, sizeof text) ==
          SC_ERR_UNSUPPORTED);
  REQUIRE(std::string(text) ==
          "x: input row 0: temperature = 0.5 asks for a filter this subject does not implement");
  REQUIRE(rules::report_refusal("x", field::min_p, 0, nullptr, 4, text, sizeof text) ==
          SC_ERR_INVALID_ARGUMENT);
  REQUIRE(std::string(text) == "x: input row 0: min_p = ? is outside [0, 1]");

  // The CUDA kernels keep the lowest (row, field) word; row_refusal picks the same.
  const rules::row_values both{.top_k = 2, .top_p = 0.0f};
  REQUIRE(rules::row_refusal(both, 10, SC_INPUT_PROBS, 0) == field::top_p);
  REQUIRE(rules::row_refusal({.top_k = 2}, 10, SC_INPUT_PROBS, 0) == field::top_k_unsupported);
  REQUIRE(rules::row_refusal({.top_k = 10}, 10, SC_INPUT_PROBS, 0) ==
          field::none);  // k >= V is off
  REQUIRE(rules::row_refusal({.temperature = 0.5f}, 10, SC_INPUT_PROBS, SC_FILTER_TEMPERATURE) ==
          field::temperature_unsupported);  // a logits filter only
  REQUIRE(rules::row_refusal({.temperature = 0.0f}, 10, SC_INPUT_LOGITS, SC_FILTER_TEMPERATURE) ==
          field::none);
  REQUIRE(rules::row_refusal({.temperature = -INFINITY}, 10, SC_INPUT_LOGITS, ~0u) ==
          field::temperature);
  REQUIRE(rules::row_refusal({.temperature = NAN}, 10, SC_INPUT_LOGITS, ~0u) == field::temperature);
  REQUIRE(rules::row_refusal({.min_p = 1.0f}, 10, SC_INPUT_LOGITS, ~0u) == field::none);

  // A CPU subject refuses that doubly bad row the same way.
  for (const sc_sampler* s : correct_samplers()) {
    if (s->filters & SC_FILTER_TOP_K) continue;
    CAPTURE(s->name);
    call c = two_rows(*s);
    c.top_k[1] = 2;
    c.top_p[1] = 0.0f;
    REQUIRE(c.run(*s, c.view()) == SC_ERR_INVALID_ARGUMENT);
    REQUIRE(c.error.find("top_p = 0 is outside (0, 1]") != std::string::npos);
  }
}

TEST_CASE("the shape refusals are batch_rules.h's check_shape, word for word") {
  const std::vector<std::function<void(sc_sample_batch&)>> spoils{
      [](sc_sample_batch& b) { b.abi_version.major = SC_ABI_VERSION_MAJOR + 1; },
      [](sc_sample_batch& b) { b.reserved0 = 1; },
      [](sc_sample_batch& b) { b.vocab_size = 0; },
      [](sc_sample_batch& b) { b.vocab_size = int64_t{1} << 31; },
      [](sc_sample_batch& b) { b.num_input_rows = -1; },
      [](sc_sample_batch& b) { b.input_dtype = 0; },
      [](sc_sample_batch& b) { b.input = nullptr; },
      [](sc_sample_batch& b) { b.out_valid = nullptr; },
      [](sc_sample_batch& b) { b.row_index = nullptr; },
      [](sc_sample_batch& b) { b.num_input_rows = 0; },
  };
  for (const sc_sampler* s : cpu_samplers()) {
    for (size_t i = 0; i < spoils.size(); ++i) {
      CAPTURE(s->name, i);
      call c = two_rows(*s);
      sc_sample_batch b = c.view();
      spoils[i](b);
      const sc_status status = c.run(*s, b);
      char expected[256];
      const sc_status want = rules::check_shape({s->name}, &b, expected, sizeof expected);
      REQUIRE(want != SC_OK);
      REQUIRE(status == want);
      REQUIRE(c.error == expected);
    }
  }
}
