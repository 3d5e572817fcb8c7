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
// tp_invariance (SC_INVARIANT_TREE): a row-parallel linear layer y = x W^T (kTpRows x kTpCols
// outputs, K in kSegments segments of kSegmentK), its K split over TP = 1, 2, 4, 8 ranks: each
// rank sums its segments' float32 dot products (each in k order) by the balanced tree, and
// the subject all-reduces the ranks' partials. y must have the same bits at every TP.
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

// Every message a world size's probe travels in: its count and the probe's offsets in it.
struct placement {
  int64_t count;
  std::vector<int64_t> offsets;
};
std::vector<placement> placements(const battery::check_context& ctx, int32_t world) {
  philox_stream drawn(ctx.check_seed, 100 + static_cast<uint64_t>(world), 0);
  std::vector<placement> out;
  for (const int64_t count : message_sizes(ctx))
    out.push_back({count, offsets(count, std::min(kProbe, count), drawn.next())});
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
    for (const auto& [count, at] : placements(ctx, world))
      for (int filler = 0; filler < kFillers; ++filler) {
        ranks in = draw(ctx.check_seed, 1 + static_cast<uint64_t>(filler), world, count);
        for (const int64_t offset : at)
          if (!judge_case(ctx, {world, count, offset, filler}, in, probe, alone.out, out))
            return out;
      }
  }
  out.power = fmt::format("exact (bitwise, {} sizes 1-{}, 4 offsets x {} fillers, world sizes {})",
                          sizes.size(), sizes.back(), kFillers, world_sizes(ctx).size());
  out.detail = fmt::format("{} probe elements kept their bits alone", out.samples);
  return out;
}

uint64_t planned_message_invariance(const battery::check_context& ctx) {
  uint64_t elements = 0;
  for (const int32_t world : world_sizes(ctx))
    for (const auto& [count, at] : placements(ctx, world))
      elements += at.size() * kFillers * static_cast<uint64_t>(std::min(kProbe, count));
  return elements;
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

constexpr int64_t kTpRows = 4, kTpCols = 64, kSegments = 8, kSegmentK = 64;
constexpr int32_t kTpSizes[] = {1, 2, 4, 8};

// v[lo, hi) summed by the balanced tree of SC_INVARIANT_TREE (split at the largest power of
// two below the width): the ranks' own pre-reduction, which the subject's tree continues.
float tree_sum(const float* v, int64_t lo, int64_t hi) {
  if (hi - lo == 1) return v[lo];
  const int64_t mid = lo + static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(hi - lo)) / 2);
  return tree_sum(v, lo, mid) + tree_sum(v, mid, hi);
}

// Each output's segment sums, [kTpRows * kTpCols][kSegments], from the check's seed.
std::vector<float> segment_sums(uint64_t seed) {
  const int64_t k = kSegments * kSegmentK;
  const auto x = draw(seed, 200, 1, kTpRows * k)[0], w = draw(seed, 201, 1, kTpCols * k)[0];
  std::vector<float> sums(static_cast<size_t>(kTpRows * kTpCols * kSegments));
  for (int64_t o = 0; o < kTpRows * kTpCols; ++o)
    for (int64_t s = 0; s < kSegments; ++s) {
      float acc = 0;
      for (int64_t t = s * kSegmentK; t < (s + 1) * kSegmentK; ++t)
        acc += x[(o / kTpCols) * k + t] * w[(o % kTpCols) * k + t];
      sums[o * kSegments + s] = acc;
    }
  return sums;
}

// The layer at one TP size: rank r pre-reduces segments [r S / tp, (r + 1) S / tp).
ranks tp_partials(const std::vector<float>& sums, int32_t tp) {
  const int64_t per_rank = kSegments / tp, outputs = kTpRows * kTpCols;
  ranks partials(static_cast<size_t>(tp), std::vector<float>(static_cast<size_t>(outputs)));
  for (int32_t r = 0; r < tp; ++r)
    for (int64_t o = 0; o < outputs; ++o)
      partials[r][o] = tree_sum(sums.data() + o * kSegments, r * per_rank, (r + 1) * per_rank);
  return partials;
}

battery::check_outcome run_tp_invariance(const battery::check_context& ctx) {
  battery::check_outcome out;
  const auto sums = segment_sums(ctx.check_seed);
  const int64_t outputs = kTpRows * kTpCols;
  std::vector<float> tp1;
  for (const int32_t tp : kTpSizes) {
    if (tp > ctx.subj.collective->max_world_size) break;
    const auto reply = battery::run_collective(ctx.subj, tp_partials(sums, tp), outputs);
    if (!usable(reply, out, fmt::format("TP {}", tp))) return out;
    if (tp == 1) {
      tp1 = reply.out;
      continue;
    }
    out.samples += static_cast<uint64_t>(outputs);
    const int64_t i = harness::first_difference(tp1.data(), reply.out.data(), outputs);
    if (i < 0) continue;
    battery::fail_exactly(
        out,
        fmt::format("TP {}: layer output row {}, column {} is {}, at TP 1 it is {} (K = {} in {} "
                    "segments split over the ranks)",
                    tp, i / kTpCols, i % kTpCols, harness::bits_hex(reply.out[i]),
                    harness::bits_hex(tp1[i]), kSegments * kSegmentK, kSegments),
        {{"tp", tp},
         {"row", i / kTpCols},
         {"column", i % kTpCols},
         {"expected_bits", harness::bits_hex(tp1[i])},
         {"actual_bits", harness::bits_hex(reply.out[i])}});
    return out;
  }
  out.power = fmt::format("exact (bitwise, a {}x{}x{} layer at TP 1, 2, 4, 8 up to {})", kTpRows,
                          kTpCols, kSegments * kSegmentK, ctx.subj.collective->max_world_size);
  out.detail = fmt::format("{} layer outputs kept their TP 1 bits", out.samples);
  return out;
}

uint64_t planned_tp_invariance(const battery::check_context& ctx) {
  uint64_t compared = 0;  // every TP size but 1 is compared with TP 1
  for (const int32_t tp : kTpSizes)
    compared += tp > 1 && tp <= ctx.subj.collective->max_world_size ? 1 : 0;
  return compared * static_cast<uint64_t>(kTpRows * kTpCols);
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

battery::check_definition collective_tp_invariance_check() {
  return {"tp_invariance",
          battery::subject_kind::collective,
          battery::check_kind::exact,
          0,
          "a row-parallel linear layer (K split over TP ranks, each pre-reducing its segments by "
          "the tree, then all-reduced) gives the same bits at TP 1, 2, 4 and 8",
          [](const battery::subject& s, const battery::subject_lookup&) {
            return undeclared(s, SC_INVARIANT_TREE, "tree (the balanced tree over ranks)");
          },
          run_tp_invariance,
          planned_tp_invariance};
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
