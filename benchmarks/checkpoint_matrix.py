"""Every published checkpoint in examples/checkpoints through one framework release on several
GPUs: the status and the routing kernel(s) of each trace, one line each, and a count by status.
A status ending in "+" has blockers beyond the path (a kernel the GPU has no build of, from the
provider's own declaration): "selected+" is a path every run takes that does not run there.
"[weights]" marks a report whose weights caveat is set (the checkpoint's quantized experts are
built unquantized).

Usage: python benchmarks/checkpoint_matrix.py FRAMEWORK==VERSION [--gpus sm100,sm90,sm120]
       [--tp 8] [--only NAME ...] [--configs]

Each trace runs in this process with the report cache off (ROUTESCOPE_TRACE_CACHE=0), so the
figures are what a new deployment costs; the source must be cached or reachable. A trace that
routescope refuses prints its one-line error (an input error, not a crash).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", help="e.g. sglang==0.5.23 or vllm==0.33.0")
    parser.add_argument("--gpus", default="sm100,sm90,sm120")
    parser.add_argument("--tp", type=int, default=8)
    parser.add_argument("--only", nargs="*", default=None, help="checkpoint directory names")
    parser.add_argument(
        "--configs",
        action="store_true",
        help="the bf16 config.json files of examples/configs instead of the checkpoints",
    )
    args = parser.parse_args()
    os.environ.setdefault("ROUTESCOPE_TRACE_CACHE", "0")
    from routescope import api
    from routescope.errors import RoutescopeError
    from routescope.report import experts_text

    if args.configs:
        files = {p.stem: p for p in (ROOT / "examples" / "configs").glob("*.json")}
    else:
        found = (ROOT / "examples" / "checkpoints").iterdir()
        files = {p.name: p / "config.json" for p in found if p.is_dir()}
    names = sorted(files)
    if args.only:
        names = [n for n in names if n in set(args.only)]
    counts: collections.Counter[str] = collections.Counter()
    for name in names:
        config = files[name]
        for gpu in args.gpus.split(","):
            start = time.monotonic()
            try:
                req = api.InspectRequest(
                    model=str(config), framework=args.framework, gpu=gpu, tp=args.tp
                )
                rep = api.inspect(req)
                d = rep["dispatch"]
                sinks = sorted({(p["sink"] or {}).get("name", "-") for p in d["paths"]})
                status, shown = d["status"], " | ".join(sinks)
                past = [b for b in rep.get("blockers", []) if b.get("kind") != "raises"]
                if past:  # a kernel the GPU cannot run, found past the path (not a stop)
                    status += "+"
                    shown += f"  [{len(past)} blocker(s)]"
                if d.get("weights"):  # the checkpoint's weights do not fit the layers built
                    shown += "  [weights]"
                launched = experts_text(d["paths"][0], limit=4, brief=True) if d["paths"] else ""
                if launched:  # what the experts launch past the router, checked on the GPU
                    shown += f"  -> {launched}"
            except RoutescopeError as exc:
                status, shown = "refused", str(exc)[:160]
            counts[status] += 1
            took = time.monotonic() - start
            print(f"{name:46s} {gpu:6s} {took:6.1f}s {status:10s} {shown}", flush=True)
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
