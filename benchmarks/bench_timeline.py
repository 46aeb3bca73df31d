"""Wall time of `routescope timeline`, as a user runs it (a fresh process each time).

Usage: python benchmarks/bench_timeline.py [--from 0.5.9] [--to 0.5.23] [--jobs N] [--skip-cold]
  "cold":   an empty ROUTESCOPE_CACHE: every release's routing code fetched from PyPI, then traced;
  "traced": the framework source already cached, the report cache off (ROUTESCOPE_TRACE_CACHE=0):
            every release is traced, in parallel over the cores;
  "warm":   the same again with the report cache on, after one run has filled it.
  "naive":  in the same run, the naive script (benchmarks/naive_read.py: pip download, unzip,
            ast-parse the routing slice) for every release of the range, as many at once as
            there are cores.
Prints a markdown table (with each run's largest process: benchmarks/measured.py) and the
releases grouped by path (the answer, to check it)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measured import as_installed, run_measured
from naive_read import naive

ROOT = Path(__file__).resolve().parent.parent
GLM5 = "examples/configs/zai-org--GLM-5.json"


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, str, float]:
    done = run_measured(argv, ROOT, env)
    if done.returncode not in (0, 2):
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.seconds, done.stdout, done.peak_mb


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="start", default="0.5.9")
    ap.add_argument("--to", dest="end", default="0.5.23")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--skip-cold", action="store_true")
    args = ap.parse_args()
    as_installed(ROOT, args.python)
    argv = [args.python, "-m", "routescope", "timeline", GLM5, "--framework", "sglang",
            "--gpu", "sm120", "--tp", "8", "--from", args.start, "--to", args.end]  # fmt: skip
    if args.jobs:
        argv += ["--jobs", str(args.jobs)]
    with tempfile.TemporaryDirectory() as cache:  # its own cache: the runs below start empty
        base = {**os.environ, "ROUTESCOPE_CACHE": cache}
        # cold: nothing cached; with --skip-cold the same run fills the source cache, untimed
        cold = _run(argv, {**base, "ROUTESCOPE_TRACE_CACHE": "0"})
        traced, out, traced_mb = _run(argv, {**base, "ROUTESCOPE_TRACE_CACHE": "0"})
        _run(argv, base)  # fill the report cache
        warm, _, warm_mb = _run(argv, base)
        _, doc, _ = _run([*argv, "--format", "json"], base)
    versions = [r["version"] for r in json.loads(doc)["releases"]]
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs or os.cpu_count() or 1) as pool:
        list(pool.map(naive, [f"sglang=={v}" for v in versions]))
    floor = time.monotonic() - start
    print(f"GLM-5 on SGLang {args.start} .. {args.end} ({len(versions)} releases), SM120, TP8, "
          f"{os.cpu_count()} cores\n")  # fmt: skip
    print("| run | seconds | / naive | largest process (MB) |\n|---|---:|---:|---:|")
    if not args.skip_cold:
        print(f"| cold (empty cache: fetched, then traced) | {cold[0]:.1f} | "
              f"{cold[0] / floor:.1f} | {cold[2]:.0f} |")  # fmt: skip
    print(f"| traced (source cached, report cache off) | {traced:.1f} | {traced / floor:.1f} "
          f"| {traced_mb:.0f} |")  # fmt: skip
    print(f"| warm (report cache) | {warm:.1f} | {warm / floor:.2f} | {warm_mb:.0f} |")
    print(f"| naive script, every release (download, unzip, parse) | {floor:.1f} | 1 | - |")
    print()
    print(out)


if __name__ == "__main__":
    main()
