// The collective's part of the subject protocol (docs/subject-protocol.md, protocol 1.3): the
// hello's collective descriptor, each bad field refused naming it, and the collective request
// as the C-ABI server (subject_server.h) reads it: each malformed field an error frame naming
// it, a problem the header refuses a status naming the field, a good one the all-reduce.
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "kernels/registry/registry.h"
#include "suites/harness/protocol.h"
#include "suites/harness/subject_server.h"

using namespace samplecheck;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json good_entry() {
  return {{"kind", "collective"},   {"name", "t.allreduce"},         {"dtypes", {"f32"}},
          {"max_world_size", 8},    {"invariants", {"size", "run"}}, {"reduce_op", "sum"},
          {"memory_space", "host"}, {"description", "a test entry"}};
}

// The refusal of good_entry() with `field` set to `value` (null: removed).
std::string refusal(const std::string& field, const json& value) {
  json e = good_entry();
  if (value.is_null())
    e.erase(field);
  else
    e[field] = value;
  try {
    protocol::from_json(e);
  } catch (const std::invalid_argument& x) {
    return x.what();
  }
  return "(accepted)";
}

const sc_collective& fixed_order() {
  const sc_collective* c = registry::find_collective("cpu.allreduce.fixed_order");
  REQUIRE(c != nullptr);
  return *c;
}

// One server of cpu.allreduce.fixed_order on a socket pair and a memfd of `bytes`: its hello,
// then `request` sent; the frame it answers with.
json answer(json request, size_t bytes, std::vector<float>* region_out = nullptr,
            const std::vector<float>& region_in = {}) {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  const int shm = ::memfd_create("protocol-collective-test", 0);
  REQUIRE(shm >= 0);
  REQUIRE(::ftruncate(shm, static_cast<off_t>(bytes)) == 0);
  if (!region_in.empty())
    REQUIRE(::pwrite(shm, region_in.data(), region_in.size() * 4, 0) ==
            static_cast<ssize_t>(region_in.size() * 4));
  const int served_shm = ::dup(shm);
  std::thread server([&] { harness::serve(sv[1], served_shm, {.collectives = {&fixed_order()}}); });
  json hello, reply;
  std::string why;
  REQUIRE(protocol::recv_frame(sv[0], protocol::kNoDeadline, hello, why) ==
          protocol::frame_status::ok);
  REQUIRE(hello["subjects"].size() == 1);
  CHECK(hello["subjects"][0]["kind"] == "collective");
  request["type"] = "collective", request["id"] = 1, request["shm_size"] = bytes;
  REQUIRE(protocol::send_frame(sv[0], request));
  REQUIRE(protocol::recv_frame(sv[0], protocol::kNoDeadline, reply, why) ==
          protocol::frame_status::ok);
  protocol::send_frame(sv[0], {{"type", "shutdown"}});
  server.join();
  if (region_out != nullptr) {
    region_out->resize(bytes / 4);
    REQUIRE(::pread(shm, region_out->data(), bytes, 0) == static_cast<ssize_t>(bytes));
  }
  ::close(sv[0]), ::close(sv[1]), ::close(shm);
  return reply;
}

// Two ranks of 4 elements: inputs at 0 and 64, outputs at 128 and 192.
json two_ranks() {
  return {{"subject", "cpu.allreduce.fixed_order"},
          {"world_size", 2},
          {"count", 4},
          {"dtype", "f32"},
          {"arrays",
           {{"inputs", {{{"at", 0}, {"count", 4}}, {{"at", 64}, {"count", 4}}}},
            {"outputs", {{{"at", 128}, {"count", 4}}, {{"at", 192}, {"count", 4}}}}}}};
}

}  // namespace

TEST_CASE("a collective descriptor round-trips, and each bad field is refused by name",
          "[protocol][collective]") {
  for (const sc_collective* c : registry::in_tree_collectives()) {
    const json entry = protocol::to_json(*c, "");
    const auto d = protocol::from_json(entry);
    CHECK(d->kind == protocol::subject_kind::collective);
    CHECK(d->collective.max_world_size == c->max_world_size);
    CHECK(d->collective.invariants == c->invariants);
    CHECK(d->collective.dtypes == c->dtypes);
    CHECK(protocol::to_json(d->collective, "") == entry);
  }
  CHECK(refusal("name", "x") == "(accepted)");
  CHECK_THAT(refusal("kind", "allreduce"), Contains("field kind"));
  CHECK_THAT(refusal("max_world_size", nullptr), Contains("field max_world_size is missing"));
  CHECK_THAT(refusal("max_world_size", 0), Contains("field max_world_size is 0"));
  CHECK_THAT(refusal("max_world_size", "8"), Contains("field max_world_size is not an integer"));
  CHECK_THAT(refusal("invariants", nullptr), Contains("field invariants is missing"));
  CHECK_THAT(refusal("invariants", {"size", "sized"}),
             Contains("field invariants holds \"sized\""));
  CHECK_THAT(refusal("invariants", {"run", "run"}), Contains("field invariants holds \"run\""));
  CHECK_THAT(refusal("dtypes", {"f16"}), Contains("field dtypes"));
  CHECK_THAT(refusal("dtypes", {"bf16"}), Contains("field dtypes does not hold \"f32\""));
  CHECK_THAT(refusal("dtypes", {"int8"}), Contains("field dtypes holds \"int8\""));
  CHECK_THAT(refusal("reduce_op", "max"), Contains("field reduce_op is \"max\""));
  CHECK_THAT(refusal("memory_space", "tpu"), Contains("field memory_space is \"tpu\""));
}

TEST_CASE("the server answers a collective request, each malformed field named",
          "[protocol][collective]") {
  std::vector<float> in(256 / 4, 0.0f), region;
  for (int i = 0; i < 4; ++i) in[i] = 1.0f + i, in[16 + i] = 10.0f * (i + 1);
  json ok = answer(two_ranks(), 256, &region, in);
  CHECK(ok["type"] == "result");
  CHECK(ok["status"] == SC_OK);
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 4; ++i) CHECK(region[32 + 16 * r + i] == in[i] + in[16 + i]);

  const auto error_of = [](json request) {
    const json reply = answer(std::move(request), 256);
    CHECK(reply["type"] == "error");
    return reply.value("message", std::string());
  };
  json q = two_ranks();
  q.erase("world_size");
  CHECK_THAT(error_of(q), Contains("field world_size is missing"));
  q = two_ranks(), q["count"] = "4";
  CHECK_THAT(error_of(q), Contains("field count is missing or not an integer"));
  q = two_ranks(), q["dtype"] = "bf16";
  CHECK_THAT(error_of(q), Contains("field dtype is \"bf16\", not \"f32\""));
  q = two_ranks(), q["dtype"] = 1;
  CHECK_THAT(error_of(q), Contains("field dtype is 1, not \"f32\""));
  q = two_ranks(), q["arrays"]["inputs"].erase(1);
  CHECK_THAT(error_of(q), Contains("array inputs is not a list of world_size = 2 arrays"));
  q = two_ranks(), q["arrays"]["outputs"][1]["count"] = 3;
  CHECK_THAT(error_of(q), Contains("array outputs[1] does not hold count = 4 elements"));
  q = two_ranks(), q["arrays"]["outputs"][1]["at"] = 250;
  CHECK_THAT(error_of(q), Contains("array outputs[1] (4 elements at 250) is not inside"));
  q = two_ranks(), q.erase("arrays");
  CHECK_THAT(error_of(q), Contains("field arrays is missing or not an object"));
  q = two_ranks(), q["subject"] = "cpu.allreduce.none";
  CHECK_THAT(error_of(q), Contains("no subject named 'cpu.allreduce.none'"));

  // A problem the header makes the collective refuse: a status naming the field, not a call.
  q = two_ranks(), q["world_size"] = 65;
  json refused = answer(q, 256);
  CHECK(refused["status"] == SC_ERR_INVALID_ARGUMENT);
  CHECK_THAT(refused["message"].get<std::string>(), Contains("field world_size is 65"));
  q = two_ranks(), q["count"] = 0;
  refused = answer(q, 256);
  CHECK(refused["status"] == SC_ERR_INVALID_ARGUMENT);
  CHECK_THAT(refused["message"].get<std::string>(), Contains("field count is 0"));
}
