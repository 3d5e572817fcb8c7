#!/usr/bin/env python3
"""torch.multinomial and SGLang v0.5.20's Gumbel rule, timed like sampler_gpu_bench.

The grid of sampler_gpu_bench: B in {1, 8, 32, 64}, V in {32768, 151936}; 30 warm-up calls, then
200 timed calls, once measuring the host-side call alone and once synchronising the
GPU; median and interquartile range in microseconds. Rows are Zipf(1.1) on a random
permutation per row, as in the C++ bench. The two rules are the published lines:

  v0.5.19: torch.multinomial(probs, num_samples=1)
  v0.5.20: q = torch.empty_like(probs, dtype=torch.float32).exponential_(1.0)
           q.clamp_min_(torch.finfo(torch.float32).tiny)
           (probs.float() / q).argmax(dim=-1, keepdim=True)

Two more modes time the same rule captured once in a torch.cuda.CUDAGraph and
replayed, as the C++ bench's graph rows do: graph_sync (replay, then synchronise)
and graph_burst (device time per replay: CUDA events around 50 replays issued back
to back). They take Python's dispatch out of the comparison, which moves the eager
rows by tens of microseconds from one machine to the next.

Run it on the GPU machine right after the C++ bench, so both tables share the
device, driver and clocks.
"""

import argparse
import csv
import statistics
import sys
import time

import torch


def zipf_rows(rows, vocab, generator):
    ranks = torch.arange(1, vocab + 1, dtype=torch.float64)
    weights = 1.0 / ranks.pow(1.1)
    weights = (weights / weights.sum()).float()
    out = torch.empty(rows, vocab, dtype=torch.float32)
    for r in range(rows):
        out[r, torch.randperm(vocab, generator=generator)] = weights
    return out


def multinomial_rule(probs):
    return torch.multinomial(probs, num_samples=1)


def gumbel_rule(probs):
    q = torch.empty_like(probs, dtype=torch.float32).exponential_(1.0)
    q.clamp_min_(torch.finfo(torch.float32).tiny)
    return (probs.float() / q).argmax(dim=-1, keepdim=True)


def time_calls(call, probs, synchronise, warmup, calls):
    for _ in range(warmup):
        call(probs)
    torch.cuda.synchronize()
    us = []
    for _ in range(calls):
        t0 = time.perf_counter()
        call(probs)
        if synchronise:
            torch.cuda.synchronize()
        us.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return us


def graph_of(rule, probs, warmup):
    """The rule captured in a CUDA graph (torch's own RNG state advances per replay)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            rule(probs)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        rule(probs)
    for _ in range(warmup):
        graph.replay()
    torch.cuda.synchronize()
    return graph


def time_burst(graph, samples=20, per_sample=50):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    us = []
    for _ in range(samples):
        start.record()
        for _ in range(per_sample):
            graph.replay()
        stop.record()
        stop.synchronize()
        us.append(start.elapsed_time(stop) * 1e3 / per_sample)
    return us


def summarise(us):
    q = statistics.quantiles(us, n=4, method="inclusive")
    return statistics.median(us), q[2] - q[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", help="also write the rows as CSV here")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--vocabs", type=int, nargs="+", default=[32768, 151936])
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("SKIPPED: torch sees no CUDA device")
        return 77
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    generator = torch.Generator().manual_seed(2026)
    rows_out = []
    print(f"{'impl':<30} {'mode':<10} {'B':>4} {'V':>7} {'median_us':>12} {'iqr_us':>10} {'hbm_us':>9}")
    for vocab in args.vocabs:
        all_rows = zipf_rows(max(args.batches), vocab, generator).cuda()
        for batch in args.batches:
            probs = all_rows[:batch].contiguous()
            hbm_us = batch * vocab * 4 / 4.8e12 * 1e6
            for name, rule in (("torch.multinomial", multinomial_rule), ("torch.gumbel_rule", gumbel_rule)):
                timings = [
                    ("host", time_calls(rule, probs, False, args.warmup, args.calls)),
                    ("sync", time_calls(rule, probs, True, args.warmup, args.calls)),
                ]
                # torch.multinomial checks its input on the host, which a capture refuses.
                if rule is gumbel_rule:
                    graph = graph_of(rule, probs, args.warmup)
                    timings += [
                        ("graph_sync", time_calls(lambda _, g=graph: g.replay(), probs, True, args.warmup, args.calls)),
                        ("graph_burst", time_burst(graph)),
                    ]
                for mode, us in timings:
                    median, iqr = summarise(us)
                    rows_out.append((name, mode, batch, vocab, median, iqr, hbm_us))
                    print(
                        f"{name:<30} {mode:<11} {batch:>4} {vocab:>7} {median:>12.1f} {iqr:>10.1f} {hbm_us:>9.2f}",
                        flush=True,
                    )
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["impl", "mode", "B", "V", "median_us", "iqr_us", "hbm_read_us"])
            writer.writerows(rows_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
