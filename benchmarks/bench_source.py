"""Cold and warm cost of making a framework's MoE routing modules available.

Cold: an empty cache (a new temp dir each run), open the published wheel and fetch the seed
import closure (rules/frameworks/<name>.seeds.toml) by range requests; median and max over
--runs. Warm: the same cache, a fresh open + Index + one function lookup, which must make no
request. --latency MS adds a delay to every request (log-normal, median MS, a heavy tail) to
show how the fetch behaves on a slow link; --gap KB and --connections override the defaults.
Run: PYTHONPATH=. python benchmarks/bench_source.py [--runs 5] [sglang==0.5.23 vllm==0.33.0 ...]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

import httpx

SPECS = ["sglang==0.5.9", "sglang==0.5.23", "vllm==0.33.0"]
LOOKUP = {
    "sglang": "sglang.srt.layers.moe.topk:select_experts",
    "vllm": "vllm.model_executor.layers.fused_moe.router.base_router:BaseRouter.select_experts",
}


class SlowTransport(httpx.HTTPTransport):
    """The real transport, each request delayed as on a distant or congested link."""

    def __init__(self, latency_s: float) -> None:
        super().__init__()
        self.latency_s = latency_s
        self.rng = random.Random(0)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        time.sleep(self.latency_s * self.rng.lognormvariate(0.0, 0.7))
        return super().handle_request(request)


def cold(spec: str, latency_s: float) -> tuple[float, int, int, int, int, int]:
    """One cold fetch: (seconds, bytes, requests, wheel size, closure modules, import levels)."""
    from routescope.analysis.closure import import_closure, load_seeds
    from routescope.analysis.index import Index
    from routescope.source import open_source
    from routescope.source.registry import make_client
    from routescope.source.wheel import WheelTree

    client = make_client(SlowTransport(latency_s)) if latency_s else None
    start = time.perf_counter()
    tree = open_source(spec, progress=False, client=client)
    assert isinstance(tree, WheelTree)
    closure = import_closure(Index(tree), load_seeds(tree.name))
    seconds = time.perf_counter() - start
    reader = tree.reader
    assert reader is not None
    size = tree.wheel_size()
    return (
        seconds,
        reader.bytes_transferred,
        reader.requests,
        size,
        len(closure.modules),
        (closure.rounds),
    )


def warm(spec: str, name: str) -> float:
    from routescope.analysis.index import Index
    from routescope.source import open_source
    from routescope.source.wheel import WheelTree

    start = time.perf_counter()
    tree = open_source(spec, progress=False)
    sym = Index(tree).find_function(LOOKUP[name])
    seconds = time.perf_counter() - start
    assert sym is not None and isinstance(tree, WheelTree)
    assert not tree.has_reader(), "a warm lookup must make no request"
    return seconds


def bench(spec: str, runs: int, latency_s: float) -> str:
    times, sent, requests = [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            os.environ["ROUTESCOPE_CACHE"] = cache
            seconds, nbytes, nreq, size, modules, levels = cold(spec, latency_s)
            times.append(seconds)
            sent.append(nbytes)
            requests.append(nreq)
            warm_s = warm(spec, spec.split("==")[0])
    mb = statistics.median(sent)
    return (
        f"| {spec} | {size / 1e6:.1f} MB | {modules} | {mb / 1e6:.2f} MB ({mb / size:.1%}) "
        f"| {statistics.median(requests):.0f} | {levels} | {statistics.median(times):.2f} s "
        f"| {max(times):.2f} s | {warm_s:.3f} s |"
    )


def main(argv: list[str]) -> int:
    from routescope.source import stream

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=SPECS)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.0, help="added per request, ms")
    parser.add_argument("--gap", type=int, help=f"coalescing gap, KB (default {stream.GAP >> 10})")
    parser.add_argument("--connections", type=int, help=f"default {stream.CONNECTIONS}")
    args = parser.parse_args(argv)
    if args.gap is not None:
        stream.GAP = args.gap * 1024
    if args.connections is not None:
        stream.CONNECTIONS = args.connections
    print(
        f"gap {stream.GAP >> 10} KB, {stream.CONNECTIONS} connections, {args.runs} cold runs, "
        f"added latency {args.latency:g} ms\n"
    )
    print(
        "| version | wheel | closure modules | transferred (share) | requests | import levels "
        "| cold median | cold max | warm open+lookup |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for spec in args.specs:
        print(bench(spec, args.runs, args.latency / 1000), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
