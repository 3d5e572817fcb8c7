// The collective checks of the battery (ABI minor 6): an all-reduce's bits, compared with
// memcmp (suites/harness/bitwise.h), must not depend on what a declared invariant removes.
//
// message_invariance (SC_INVARIANT_SIZE): a probe of kProbe elements a rank, drawn from the
// check's seed with mixed magnitudes (so the order of the additions shows in the float32
// bits), is reduced alone; then inside messages of every size 1 .. 2^16 (quick) or 2^20
// (larger budgets; each power of two and its neighbours), at the first, middle, last and a
// drawn offset, among two different fillers, at world sizes 2, 3, 4 and 8. Each probe
// element must keep the bits it had alone.
// run_to_run (SC_INVARIANT_RUN): the same message, repeated, gives the same bits.
// Every call also checks that every rank got rank 0's bits (harness::call_collective).
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "reference/philox.h"
#include "suites/checks/checks.h"
#include "suites/harness/bitwise.h"

namespace samplecheck::checks {
namespace {

using ranks = std::vector<std::vector<float>>;

constexpr int64_t kProbe = 64;
constexpr int kFillers = 2, kRepeats = 4;
constexpr int32_t kWorldSizes[] = {2, 3, 4, 8};

int64_t largest_count(const battery::check_context& ctx) {
  return ctx.budget.name == "quick" ? int64_t{1} << 16 : int64_t{1} << 20;
}

std::vector<int32_t> world_sizes(const battery::check_context& ctx) {
  std::vector<int32_t> out;
  for (const int32_t w : kWorldSizes)
    if (w <= ctx.subj.collective->max_world_size) out.push_back(w);
  return out;
}

// 1 and every power of two up to the largest, with its neighbours.
std::vector<int64_t> message_sizes(const battery::check_context& ctx) {
  const int64_t top = largest_count(ctx);
  std::vector<int64_t> sizes;
  for (int64_t p = 1; p <= top; p *= 2)
    for (const int64_t n : {p - 1, p, p + 1})
      if (n >= 1 && n <= top) sizes.push_back(n);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// Signed values of magnitude 2^-12 .. 2^12 with random mantissas, from Philox stream
// (seed, stream): sums of such values round differently in different orders.
ranks draw(uint64_t seed, uint64_t stream, int32_t world, int64_t count) {
  ranks in(static_cast<size_t>(world), std::vector<float>(static_cast<size_t>(count)));
  philox_stream rng(seed, stream, 0);
  for (auto& rank : in)
    for (float& v : rank) {
      const uint32_t u = rng.next();
      const uint32_t exponent = 127 - 12 + (u >> 23 & 0xffu) % 25;
      v = std::bit_cast<float>((u & 0x80000000u) | exponent << 23 | (u & 0x7fffffu));
    }
  return in;
}

// The offsets a probe of `length` takes in a message of `count`: first, middle, last, drawn.
std::vector<int64_t> offsets(int64_t count, int64_t length, uint64_t draw) {
  const int64_t room = count - length;
  std::vector<int64_t> out{0, room / 2, room, room > 0 ? static_cast<int64_t>(draw % room) : 0};
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The reply's bits, or an exact failure saying why there are none to judge.
bool usable(const harness::collective_reply& r, battery::check_outcome& out,
            const std::string& where) {
  if (r.status != SC_OK)
    battery::fail_exactly(
        out, fmt::format("{}: the call failed (status {}): {}", where, r.status, r.message));
  else if (!r.fault.empty())
    battery::fail_exactly(out, fmt::format("{}: {}", where, r.fault));
  return !out.exact_failure;
}

struct message_case {
  int32_t world;
  int64_t count, offset;
  int filler;
};

// One probe placement in the filler `in` (left as it was found): a mismatch names the element,
// its index, the size, the offset and both bit patterns, as detail and as evidence.
bool judge_case(const battery::check_context& ctx, const message_case& c, ranks& in,
                const ranks& probe, const std::vector<float>& alone, battery::check_outcome& out) {
  const int64_t length = std::min(kProbe, c.count);
  ranks saved(in.size());
  for (size_t r = 0; r < in.size(); ++r) {
    const auto at = in[r].begin() + c.offset;
    saved[r].assign(at, at + length);
    std::copy_n(probe[r].begin(), length, at);
  }
  const std::string where = fmt::format("world_size {}, count {}, probe at offset {}, filler {}",
                                        c.world, c.count, c.offset, c.filler);
  const auto reply = battery::run_collective(ctx.subj, in, c.count);
  for (size_t r = 0; r < in.size(); ++r)
    std::copy(saved[r].begin(), saved[r].end(), in[r].begin() + c.offset);
  if (!usable(reply, out, where)) return false;
  out.samples += static_cast<uint64_t>(length);
  const int64_t j = harness::first_difference(alone.data(), reply.out.data() + c.offset, length);
  if (j < 0) return true;
  const float want = alone[j], got = reply.out[c.offset + j];
  battery::fail_exactly(
      out,
      fmt::format("{}: probe element {} (message index {}) is {}, alone it is {}: its bits follow "
                  "the message it travels in",
                  where, j, c.offset + j, harness::bits_hex(got), harness::bits_hex(want)),
      {{"world_size", c.world},
       {"count", c.count},
       {"offset", c.offset},
       {"filler", c.filler},
       {"element", j},
       {"index", c.offset + j},
       {"expected_bits", harness::bits_hex(want)},
       {"actual_bits", harness::bits_hex(got)}});
  return false;
}

battery::check_outcome run_message_invariance(const battery::check_context& ctx) {
  battery::check_outcome out;
  const auto sizes = message_sizes(ctx);
  for (const int32_t world : world_sizes(ctx)) {
    const ranks probe = draw(ctx.check_seed, 0, world, kProbe);
    const auto alone = battery::run_collective(ctx.subj, probe, kProbe);
    if (!usable(alone, out, fmt::format("world_size {}, the probe alone", world))) return out;
    philox_stream placement(ctx.check_seed, 100 + static_cast<uint64_t>(world), 0);
    for (const int64_t count : sizes) {
      const uint64_t drawn = placement.next();
      for (int filler = 0; filler < kFillers; ++filler) {
        ranks in = draw(ctx.check_seed, 1 + static_cast<uint64_t>(filler), world, count);
        for (const int64_t offset : offsets(count, std::min(kProbe, count), drawn))
          if (!judge_case(ctx, {world, count, offset, filler}, in, probe, alone.out, out))
            return out;
      }
    }
  }
  out.power = fmt::format("exact (bitwise, {} sizes 1-{}, 4 offsets x {} fillers, world sizes {})",
                          sizes.size(), sizes.back(), kFillers, world_sizes(ctx).size());
  out.detail = fmt::format("{} probe elements kept their bits alone", out.samples);
  return out;
}

uint64_t planned_message_invariance(const battery::check_context& ctx) {
  uint64_t elements = 0;
  for (const int64_t count : message_sizes(ctx))
    elements += static_cast<uint64_t>(4 * kFillers * std::min(kProbe, count));
  return elements * world_sizes(ctx).size();
}

std::vector<int64_t> repeat_sizes(const battery::check_context& ctx) {
  return {1, 4099, largest_count(ctx)};
}

battery::check_outcome run_collective_run_to_run(const battery::check_context& ctx) {
  battery::check_outcome out;
  for (const int32_t world : world_sizes(ctx))
    for (const int64_t count : repeat_sizes(ctx)) {
      const ranks in = draw(ctx.check_seed, 0, world, count);
      const std::string where = fmt::format("world_size {}, count {}", world, count);
      const auto first = battery::run_collective(ctx.subj, in, count);
      if (!usable(first, out, where)) return out;
      for (int repeat = 1; repeat < kRepeats; ++repeat) {
        const auto again = battery::run_collective(ctx.subj, in, count);
        if (!usable(again, out, where)) return out;
        out.samples += static_cast<uint64_t>(count);
        const int64_t i = harness::first_difference(first.out.data(), again.out.data(), count);
        if (i < 0) continue;
        battery::fail_exactly(out,
                              fmt::format("{}: repeat {} gives element {} the bits {}, the first "
                                          "call {}",
                                          where, repeat, i, harness::bits_hex(again.out[i]),
                                          harness::bits_hex(first.out[i])),
                              {{"world_size", world},
                               {"count", count},
                               {"repeat", repeat},
                               {"index", i},
                               {"expected_bits", harness::bits_hex(first.out[i])},
                               {"actual_bits", harness::bits_hex(again.out[i])}});
        return out;
      }
    }
  out.power = fmt::format("exact (bitwise, {} repeats at counts 1, 4099 and {})", kRepeats,
                          largest_count(ctx));
  out.detail = fmt::format("{} elements repeated their bits", out.samples);
  return out;
}

uint64_t planned_collective_run_to_run(const battery::check_context& ctx) {
  uint64_t elements = 0;
  for (const int64_t count : repeat_sizes(ctx)) elements += static_cast<uint64_t>(count);
  return elements * (kRepeats - 1) * world_sizes(ctx).size();
}

std::string undeclared(const battery::subject& s, uint32_t bit, const char* promise) {
  return (s.collective->invariants & bit) != 0
             ? ""
             : fmt::format("the subject does not declare {}: its bits may follow it by declaration",
                           promise);
}

}  // namespace

battery::check_definition collective_message_invariance_check() {
  return {"message_invariance",
          battery::subject_kind::collective,
          battery::check_kind::exact,
          0,
          "each element's all-reduced bits are the same at every message size (1 to 2^16 quick, "
          "2^20 standard), offset and surrounding data, on every rank",
          [](const battery::subject& s, const battery::subject_lookup&) {
            return undeclared(s, SC_INVARIANT_SIZE,
                              "size_invariant (the message size and the element's offset)");
          },
          run_message_invariance,
          planned_message_invariance};
}

battery::check_definition collective_run_to_run_check() {
  return {"run_to_run",
          battery::subject_kind::collective,
          battery::check_kind::exact,
          0,
          "repeated all-reduces of one message give the same bits",
          [](const battery::subject& s, const battery::subject_lookup&) {
            return undeclared(s, SC_INVARIANT_RUN, "run_invariant (the run)");
          },
          run_collective_run_to_run,
          planned_collective_run_to_run};
}

}  // namespace samplecheck::checks
