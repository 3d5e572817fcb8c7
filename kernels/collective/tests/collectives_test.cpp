// The CPU collectives against sums written out here: rank order for fixed_order, the ring's
// chunk rotation for ring, rank order below the threshold for X13; and the ABI's refusals,
// each naming its field and writing nothing.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/collective/cpu_collectives.h"

using namespace samplecheck::collective;
using Catch::Matchers::Contains;

namespace {

const sc_collective& named(std::string_view name) {
  for (const sc_collective* c : cpu_collectives())
    if (name == c->name) return *c;
  FAIL("no collective " << name);
  throw;
}

// Mixed magnitudes (2^-12 .. 2^12, both signs): the order of the additions shows in the bits.
std::vector<std::vector<float>> ranks_of(int32_t world, int64_t count) {
  std::vector<std::vector<float>> in(world, std::vector<float>(count));
  uint32_t state = 2463534242u;
  for (auto& rank : in)
    for (float& v : rank) {
      state ^= state << 13, state ^= state >> 17, state ^= state << 5;
      const float mantissa = 1.0f + static_cast<float>(state % 1000) / 1000.0f;
      v = ((state >> 10) & 1 ? -1.0f : 1.0f) * std::ldexp(mantissa, int((state >> 11) % 25) - 12);
    }
  return in;
}

struct call {
  std::vector<std::vector<float>> out;
  sc_status status;
  std::string error;
};

call run(const sc_collective& c, const std::vector<std::vector<float>>& in, int32_t world,
         int64_t count, int32_t dtype = SC_DTYPE_F32, uint64_t flags = 0) {
  std::vector<const void*> ins;
  std::vector<void*> outs;
  call result{std::vector<std::vector<float>>(in.size(), std::vector<float>(in[0].size(), -7.0f)),
              SC_OK, ""};
  for (size_t r = 0; r < in.size(); ++r) {
    ins.push_back(in[r].data());
    outs.push_back(result.out[r].data());
  }
  const sc_collective_problem p{{SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
                                world,
                                dtype,
                                count,
                                ins.data(),
                                outs.data(),
                                nullptr,
                                flags};
  char error[256] = "";
  result.status = c.run(c.context, &p, error, sizeof error);
  result.error = error;
  return result;
}

float sum_from(const std::vector<std::vector<float>>& in, int64_t i, size_t first) {
  float acc = in[first][i];
  for (size_t s = 1; s < in.size(); ++s) acc += in[(first + s) % in.size()][i];
  return acc;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("fixed_order sums every element in rank order and gives every rank its bits") {
  const int32_t world = 4;
  const int64_t count = 1000;
  const auto in = ranks_of(world, count);
  const call c = run(named("cpu.allreduce.fixed_order"), in, world, count);
  REQUIRE(c.status == SC_OK);
  for (int64_t i = 0; i < count; ++i)
    for (int32_t r = 0; r < world; ++r) REQUIRE(same_bits(c.out[r][i], sum_from(in, i, 0)));
}

TEST_CASE("tree sums ((r0 + r1) + (r2 + r3)) at four ranks, (r0 + r1) + r2 at three") {
  for (const int32_t world : {3, 4}) {
    const auto in = ranks_of(world, 500);
    const call c = run(named("cpu.allreduce.tree"), in, world, 500);
    REQUIRE(c.status == SC_OK);
    int64_t other_than_rank_order = 0;
    for (int64_t i = 0; i < 500; ++i) {
      const float want = world == 4 ? (in[0][i] + in[1][i]) + (in[2][i] + in[3][i])
                                    : (in[0][i] + in[1][i]) + in[2][i];
      REQUIRE(same_bits(c.out[world - 1][i], want));
      other_than_rank_order += same_bits(want, sum_from(in, i, 0)) ? 0 : 1;
    }
    CHECK((other_than_rank_order > 0) == (world == 4));  // at three ranks the tree is rank order
  }
}

TEST_CASE("ring starts chunk c's sum at rank c, chunks of ceil(count / world)") {
  const int32_t world = 3;
  const int64_t count = 1000, chunk = (count + world - 1) / world;
  const auto in = ranks_of(world, count);
  const call c = run(named("cpu.allreduce.ring"), in, world, count);
  REQUIRE(c.status == SC_OK);
  int64_t other_than_rank_order = 0;
  for (int64_t i = 0; i < count; ++i) {
    const float want = sum_from(in, i, static_cast<size_t>(i / chunk));
    for (int32_t r = 0; r < world; ++r) REQUIRE(same_bits(c.out[r][i], want));
    other_than_rank_order += same_bits(want, sum_from(in, i, 0)) ? 0 : 1;
  }
  CHECK(other_than_rank_order > 0);  // the inputs tell the orders apart
}

TEST_CASE("X13 keeps rank order below 4,096 elements and a ring's order from there") {
  const int32_t world = 4;
  for (const int64_t count : {kX13ChunkedFrom - 1, kX13ChunkedFrom}) {
    const auto in = ranks_of(world, count);
    const call c = run(named("cpu.allreduce.fixed_order:X13"), in, world, count);
    REQUIRE(c.status == SC_OK);
    const int64_t chunk = (count + world - 1) / world;
    for (int64_t i = 0; i < count; ++i) {
      const size_t first = count < kX13ChunkedFrom ? 0 : static_cast<size_t>(i / chunk);
      REQUIRE(same_bits(c.out[0][i], sum_from(in, i, first)));
    }
  }
}

TEST_CASE("a collective refuses a problem the ABI forbids, naming the field, writing nothing") {
  const auto in = ranks_of(2, 8);
  const struct {
    int32_t world;
    int64_t count;
    int32_t dtype;
    uint64_t flags;
    sc_status status;
    const char* field;
  } table[] = {
      {0, 8, SC_DTYPE_F32, 0, SC_ERR_INVALID_ARGUMENT, "world_size"},
      {kCpuMaxWorldSize + 1, 8, SC_DTYPE_F32, 0, SC_ERR_INVALID_ARGUMENT, "world_size"},
      {2, 0, SC_DTYPE_F32, 0, SC_ERR_INVALID_ARGUMENT, "count"},
      {2, 8, SC_DTYPE_F32, 1, SC_ERR_INVALID_ARGUMENT, "flags"},
      {2, 8, SC_DTYPE_BF16, 0, SC_ERR_UNSUPPORTED, "dtype"},
  };
  for (const sc_collective* subject : cpu_collectives())
    for (const auto& t : table) {
      CAPTURE(subject->name, t.field, t.world);
      const call c = run(*subject, in, t.world, t.count, t.dtype, t.flags);
      CHECK(c.status == t.status);
      CHECK_THAT(c.error, Contains(t.field));
      for (const auto& rank : c.out)
        for (const float v : rank) REQUIRE(v == -7.0f);
    }
}
