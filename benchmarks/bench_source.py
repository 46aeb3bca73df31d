"""Cold and warm cost of making a framework's MoE routing modules available.

Cold: an empty cache, open the published wheel and fetch the seed import closure
(rules/frameworks/<name>.seeds.toml) by range requests. Warm: the same cache, a fresh
open + Index + one function lookup, which must make no request.
Run: PYTHONPATH=. python benchmarks/bench_source.py [sglang==0.5.23 vllm==0.33.0 ...]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

SPECS = ["sglang==0.5.9", "sglang==0.5.23", "vllm==0.33.0"]
LOOKUP = {
    "sglang": "sglang.srt.layers.moe.topk:select_experts",
    "vllm": "vllm.model_executor.layers.fused_moe.router.base_router:BaseRouter.select_experts",
}


def bench(spec: str) -> str:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["ROUTESCOPE_CACHE"] = cache
        from routescope.analysis.closure import import_closure, load_seeds
        from routescope.analysis.index import Index
        from routescope.source import open_source
        from routescope.source.wheel import WheelTree

        start = time.perf_counter()
        tree = open_source(spec, progress=False)
        assert isinstance(tree, WheelTree)
        closure = import_closure(Index(tree), load_seeds(tree.name))
        cold = time.perf_counter() - start
        reader = tree.reader
        assert reader is not None
        sent, requests, size = reader.bytes_transferred, reader.requests, tree.wheel_size()

        start = time.perf_counter()
        warm_tree = open_source(spec, progress=False)
        sym = Index(warm_tree).find_function(LOOKUP[tree.name])
        warm = time.perf_counter() - start
        assert sym is not None and isinstance(warm_tree, WheelTree)
        assert not warm_tree.has_reader(), "a warm lookup must make no request"
    return (
        f"| {spec} | {size / 1e6:.1f} MB | {len(closure.modules)} | {sent / 1e6:.2f} MB "
        f"({sent / size:.1%}) | {requests} | {closure.rounds} | {cold:.1f} s | {warm:.3f} s |"
    )


def main(argv: list[str]) -> int:
    print(
        "| version | wheel | closure modules | transferred (share) | requests | rounds "
        "| cold | warm open+lookup |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for spec in argv or SPECS:
        print(bench(spec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
