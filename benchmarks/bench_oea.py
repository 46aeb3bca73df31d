"""Routing decisions per second: vectorised OEA (torch, CPU) vs the plain-Python oracle.

Run: PYTHONPATH=. python benchmarks/bench_oea.py  (N=256, k=8, k0=4, B in {16, 64, 256}).
A decision is one token's routed (ids, weights) from its router logits: both sides score
(sigmoid + correction bias), rank and run OEA. The vectorised side runs under
torch.inference_mode(), as a serving framework does. Prints a markdown table.
"""

from __future__ import annotations

import time

import torch

from routescope.oea.config import RouterConfig
from routescope.oea.oracle import oracle_route
from routescope.oea.vectorized import oea_topk

CFG = RouterConfig(num_experts=256, top_k=8, scoring="sigmoid", has_correction_bias=True)
K0 = 4


def _rate(fn: object, tokens: int, min_seconds: float) -> float:
    assert callable(fn)
    fn()  # warm-up
    runs, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < min_seconds or runs < 3:
        fn()
        runs += 1
    return runs * tokens / elapsed


def main() -> None:
    # One intra-op thread: on a 2-core machine shared with other work, torch's thread pool
    # stalls on these small ops (measured 10 ms per call with 2 threads vs 1 ms with 1).
    torch.set_num_threads(1)
    torch.manual_seed(0)
    bias = torch.randn(256) * 0.01
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, N=256 k=8 k0={K0}\n")
    print("| B | vectorised decisions/s | oracle decisions/s | speed-up |")
    print("|---:|---:|---:|---:|")
    for b in (16, 64, 256):
        logits = torch.randn(b, 256)
        rows = logits.tolist()

        def vec(logits: torch.Tensor = logits) -> None:
            with torch.inference_mode():
                oea_topk(logits, CFG, K0, correction_bias=bias)

        def ora(rows: list[list[float]] = rows) -> None:
            oracle_route(rows, CFG, K0, bias.tolist())

        v, o = _rate(vec, b, 1.0), _rate(ora, b, 1.0)
        print(f"| {b} | {v:,.0f} | {o:,.0f} | {v / o:.0f}x |")


if __name__ == "__main__":
    main()
