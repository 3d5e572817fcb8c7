// The matmul runners hand subjects guarded outputs too (guard.h): a subject that
// writes one element past out[m, n] fails the run with the words the samplers get.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "suites/harness/guard.h"
#include "suites/matmul/matmul_runner.h"

using namespace samplecheck;

namespace {

// Writes bf16 1.0 everywhere, and then `past` elements beyond the end when past > 0.
struct overrun {
  int64_t past = 0;
};

sc_status ones_run(void* context, const sc_matmul_problem* p, char*, size_t) {
  const int64_t cells = p->m * p->n;
  for (int64_t i = 0; i < cells; ++i) p->out[i] = 0x3f80;
  const int64_t past = static_cast<overrun*>(context)->past;
  if (past > 0) p->out[cells + past - 1] = 0x3f80;
  return SC_OK;
}

sc_matmul ones_subject(overrun& o) {
  sc_matmul s{};
  s.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  s.name = "test.ones";
  s.memory_space = SC_MEMORY_HOST;
  s.context = &o;
  s.run = ones_run;
  return s;
}

matmul_suite::matmul_operands two_by_three() {
  matmul_suite::matmul_operands ops;
  ops.n = 3;
  ops.k = 2;
  ops.weight.assign(6, 0x3f80);
  ops.pool.assign(8, 0x3f80);
  ops.pool_rows = 4;
  return ops;
}

}  // namespace

TEST_CASE("the host matmul runner catches a write past the end of out", "[harness][canary]") {
  overrun o;
  const sc_matmul s = ones_subject(o);
  const auto ops = two_by_three();
  const auto runner = matmul_suite::make_host_runner(s);
  runner->load(ops);
  CHECK(runner->run({0, 1}, -1, {}) == std::vector<uint16_t>(6, 0x3f80));
  o.past = 1;
  CHECK_THROWS_WITH(runner->run({0, 1}, -1, {}),
                    "test.ones: the subject wrote past the end of out: element 6+0 (a guard row) "
                    "changed from 0x7fa5 "
                    "to 0x3f80");
  o.past = harness::kGuardRows;  // the last guard row
  CHECK_THROWS_WITH(runner->run({2}, -1, {}), Catch::Contains("element 3+63 (a guard row)"));
}
