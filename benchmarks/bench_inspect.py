"""Wall time of `routescope inspect`, as a user runs it (a fresh process each time).

Usage: python benchmarks/bench_inspect.py [--runs 5] [--skip-cold] [--phases] [--python PATH]
  intake only:   routescope inspect <config.json> --format json
  with a trace:  routescope inspect <config.json> --framework sglang==V --gpu G --tp 8 --format json
Cold = an empty ROUTESCOPE_CACHE (the transformers defaults and the framework source are fetched
and built); warm = the same cache again, where an unchanged trace is read back from the report
cache; "traced again" = a warm source cache with the report cache off (ROUTESCOPE_TRACE_CACHE=0),
i.e. what a new model or deployment costs. Prints a markdown table: median and max seconds,
and the peak memory of the largest process among a case's runs (benchmarks/measured.py).
Beside each cold trace, in the same run, the naive script (benchmarks/naive_read.py: pip
download the wheel, unzip it, ast-parse the routing slice) and the ratio cold / naive.

--phases: after the table, where each case's time goes, phase by phase (ROUTESCOPE_TIMINGS=1:
the cold run's table and one more traced-again run's, each a fresh process as above).

--baseline DIR: an A/B in the same run. DIR is another checkout of routescope (e.g. `git
worktree add DIR <commit>`); each "traced again" run of this checkout is followed by one of DIR's
(the same interpreter, the same warm source cache, its own code and rules), and the table gains
the baseline's median and the ratio. Only the traced-again column is compared: it is the trace.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measured import as_installed, run_measured
from naive_read import naive

ROOT = Path(__file__).resolve().parent.parent
GLM5 = "examples/configs/zai-org--GLM-5.json"
DSV3 = "examples/configs/deepseek-ai--DeepSeek-V3.json"
QWEN3 = "examples/configs/Qwen--Qwen3-30B-A3B.json"
CASES = [
    ("intake: GLM-5 config.json", [GLM5]),
    ("trace: GLM-5, sglang 0.5.9, sm120", [GLM5, "--framework", "sglang==0.5.9", "--gpu", "sm120"]),
    ("trace: DeepSeek-V3, sglang 0.5.12, sm120",
     [DSV3, "--framework", "sglang==0.5.12", "--gpu", "sm120"]),
    ("trace: Qwen3-30B-A3B, sglang 0.5.9, sm100",
     [QWEN3, "--framework", "sglang==0.5.9", "--gpu", "sm100"]),
    ("trace: GLM-5, sglang 0.5.23, sm120",
     [GLM5, "--framework", "sglang==0.5.23", "--gpu", "sm120"]),
    ("trace: Qwen3-30B-A3B, sglang 0.5.23, sm100",
     [QWEN3, "--framework", "sglang==0.5.23", "--gpu", "sm100"]),
]  # fmt: skip


PYTHON = sys.executable  # --python: another install (the core one has no torch, imports faster)


PHASES: list[tuple[str, str]] = []  # (what was run, its timings table)
PEAK_MB: list[float] = []  # this checkout's runs of the case being measured


def run(args: list[str], cache: str, trace_cache: bool = True, root: Path = ROOT,
        phases: str = "") -> float:  # fmt: skip
    env = dict(os.environ, ROUTESCOPE_CACHE=cache, NO_COLOR="1",
               ROUTESCOPE_TRACE_CACHE="1" if trace_cache else "0",
               ROUTESCOPE_TIMINGS="1" if phases else "0")  # fmt: skip
    cmd = [PYTHON, "-m", "routescope", "inspect", *args, "--tp", "8", "--format", "json"]
    if "--framework" not in args:
        cmd = [*cmd[:-4], "--format", "json"]  # intake only: no --tp
    done = run_measured(cmd, root, env)
    elapsed = done.seconds
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
    if root == ROOT:
        PEAK_MB.append(done.peak_mb)
    if phases:
        table = done.stderr[done.stderr.find("routescope timings") :].rstrip()
        PHASES.append((f"{phases} (this process: {elapsed:.2f} s)", table))
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-cold", action="store_true")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to A/B")
    parser.add_argument("--phases", action="store_true", help="where each case's time goes")
    opts = parser.parse_args()
    global PYTHON
    PYTHON = opts.python
    base: Path | None = opts.baseline.resolve() if opts.baseline else None
    for checkout in (ROOT, base):
        if checkout is not None:
            as_installed(checkout, PYTHON)
    head = ("| case | cold (s) | naive script (s) | cold / naive | warm median (s) | warm max (s) "
            "| traced again, median (s) | peak memory (MB) |")  # fmt: skip
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|"
    if base is not None:
        head += " baseline traced again (s) | this / baseline |"
        rule += "---:|---:|"
    print(head)
    print(rule)
    for name, args in CASES:
        if opts.only not in name:
            continue
        framework = args[args.index("--framework") + 1] if "--framework" in args else None
        PEAK_MB.clear()
        with tempfile.TemporaryDirectory() as cache:
            took = (
                None
                if opts.skip_cold
                else run(args, cache, phases=f"{name}, cold" if opts.phases else "")
            )
            cold = "-" if took is None else f"{took:.2f}"
            floor = naive(framework)[0] if framework and took is not None else None
            versus = ("-", "-") if floor is None or took is None else (
                f"{floor:.2f}", f"{took / floor:.1f}")  # fmt: skip
            if opts.skip_cold:
                run(args, cache)  # fill the cache
            warm = [run(args, cache) for _ in range(opts.runs)]
            again: list[float] = []
            before: list[float] = []
            for _ in range(opts.runs):  # interleaved, so load on the machine hits both alike
                again.append(run(args, cache, trace_cache=False))
                if base is not None:
                    before.append(run(args, cache, trace_cache=False, root=base))
            if opts.phases:
                run(args, cache, trace_cache=False, phases=f"{name}, traced again")
        line = (f"| {name} | {cold} | {versus[0]} | {versus[1]} "
                f"| {statistics.median(warm):.2f} | {max(warm):.2f} "
                f"| {statistics.median(again):.2f} | {max(PEAK_MB):.0f} |")  # fmt: skip
        if base is not None:
            ratio = statistics.median(again) / statistics.median(before)
            line += f" {statistics.median(before):.2f} | {ratio:.2f} |"
        print(line)
    for what, table in PHASES:
        print(f"\n{what}:\n\n```\n{table}\n```")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
