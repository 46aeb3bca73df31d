"""Routing decisions per second: vectorised OEA (torch, CPU) vs the plain-Python oracle.

Run: PYTHONPATH=. python benchmarks/bench_oea.py [--threads 1,2]  (N=256, k=8, k0=4,
B in {16, 64, 256}). A decision is one token's routed (ids, weights) from its router logits.

What each side's timing includes: scoring (sigmoid + correction bias), ranking and both OEA
phases, from logits to final weights. Neither includes converting its input: the vectorised
side gets a float32 tensor [B, N], the oracle the same logits as Python lists (`tolist()` runs
once, before timing), each side's native form. The vectorised side runs under
torch.inference_mode(), as a serving framework does.

The machine is shared, so the two sides alternate in short rounds and each side's best round
is reported (the least-disturbed run of each, measured under the same conditions); the median
rounds' speed-up is printed beside it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from routescope.oea.config import RouterConfig
from routescope.oea.oracle import oracle_route
from routescope.oea.vectorized import oea_topk

CFG = RouterConfig(num_experts=256, top_k=8, scoring="sigmoid", has_correction_bias=True)
K0 = 4
ROUNDS = 7
ROUND_SECONDS = 0.25


def _round_rate(fn: Callable[[], None], tokens: int) -> float:
    runs, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < ROUND_SECONDS or runs < 3:
        fn()
        runs += 1
    return runs * tokens / elapsed


def _rates(vec: Callable[[], None], ora: Callable[[], None], tokens: int) -> list[list[float]]:
    """-> [vectorised round rates, oracle round rates], rounds alternating between the two."""
    vec()  # warm-up
    ora()
    rates: list[list[float]] = [[], []]
    for _ in range(ROUNDS):
        rates[0].append(_round_rate(vec, tokens))
        rates[1].append(_round_rate(ora, tokens))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", default="1", help="intra-op thread counts, e.g. 1,2")
    args = parser.parse_args()
    torch.manual_seed(0)
    bias = torch.randn(256) * 0.01
    bias_row = bias.tolist()
    print(f"torch {torch.__version__}, N=256 k=8 k0={K0}, best of {ROUNDS} alternating rounds\n")
    print("| threads | B | vectorised decisions/s | oracle decisions/s | speed-up | median |")
    print("|---:|---:|---:|---:|---:|---:|")
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        for b in (16, 64, 256):
            logits = torch.randn(b, 256)
            rows = logits.tolist()

            def vec(logits: torch.Tensor = logits) -> None:
                with torch.inference_mode():
                    oea_topk(logits, CFG, K0, correction_bias=bias)

            def ora(rows: list[list[float]] = rows) -> None:
                oracle_route(rows, CFG, K0, bias_row)

            vs, os_ = _rates(vec, ora, b)
            v, o = max(vs), max(os_)
            med = statistics.median(vs) / statistics.median(os_)
            print(f"| {threads} | {b} | {v:,.0f} | {o:,.0f} | {v / o:.0f}x | {med:.0f}x |")


if __name__ == "__main__":
    main()
