"""A differential-testing campaign: the trace engine against CPython on many generated programs.

Programs come from tests/engine/progen.py, checks from tests/engine/differential.py (see there
for what is compared and the discrepancy classes). The campaign runs the programs in chunks,
each a hypothesis run with its own seed; the first discrepancy of a kind not seen yet (its class,
which check, how the answers differ, and the features it needs) is shrunk to a minimal program,
which is written to --out with what CPython and the engine gave. Discrepancies that look like one
already shrunk are counted, not shrunk again (a program whose features include a known minimal
program's, with the same class and shape). Shrinking is hypothesis's, then
differential.reduce_program (statements deleted while the same discrepancy remains). After
--max-shrinks, new kinds are written as generated (unshrunk-*.py) and the run goes on.

Run: PYTHONPATH=. python benchmarks/bench_differential.py --programs 100000 --seed 0 --jobs 2
Prints programs run, outcomes checked, discrepancies by class, and the distinct minimal
programs written.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).absolute().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@dataclass
class ChunkResult:
    programs: int = 0
    outcomes: int = 0
    engine_runs: int = 0
    by_class: collections.Counter[str] = field(default_factory=collections.Counter)
    programs_by_class: collections.Counter[str] = field(default_factory=collections.Counter)
    # the minimal program of a new discrepancy: (signature, features, text) or None
    found: tuple[tuple[str, ...], frozenset[str], str] | None = None
    # with shrinking off: the first program of each new kind, as generated (not stopping)
    unshrunk: list[tuple[tuple[str, ...], frozenset[str], str]] = field(default_factory=list)
    shrink_calls: int = 0
    seconds: float = 0.0


class _Found(Exception):
    pass


class _StopShrinking(BaseException):  # not an Exception: hypothesis lets it through at once
    pass


def _found() -> None:
    """Every failure raises from this one line: hypothesis tells failures apart by where they
    were raised, and all of a chunk's are to be one failure, shrunk together."""
    raise _Found()


def _signature(d: Any) -> tuple[str, str, str]:
    return tuple(d.signature)  # type: ignore[return-value]


def _text(program: Any, shown: list[Any]) -> str:
    return (
        program.describe()
        + "\n# "
        + "\n# ".join(line for d in shown[:3] for line in str(d).splitlines())
        + "\n"
    )


def run_chunk(seed: int, n: int, skip: frozenset[str], known_runs: int,
              known: list[tuple[tuple[str, ...], frozenset[str]]], shrink: bool,
              shrink_seconds: float, precision: bool) -> ChunkResult:  # fmt: skip
    """Up to `n` programs from hypothesis seed `seed`; stops at the first discrepancy that is
    not like one in `known`, shrinks it (when `shrink`) and returns it."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hyp_seed

    from tests.engine import differential as D
    from tests.engine.progen import FEATURES, programs

    out = ChunkResult()
    start = time.perf_counter()
    state: dict[str, Any] = {"target": None, "last": None, "since": 0.0}

    def is_known(sig: tuple[str, ...], features: frozenset[str]) -> bool:
        return any(sig == s and f <= features for s, f in known)

    @hyp_seed(seed)
    @settings(max_examples=n, deadline=None, database=None, print_blob=False,
              report_multiple_bugs=False, derandomize=False,
              phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(programs(FEATURES - skip))
    def one(program: Any) -> None:
        report = D.check_program(program, known_runs=known_runs, seed=seed)
        failures = report.failures(precision=precision)
        target = state["target"]
        if target is None:  # generating: count, and look for a new kind of discrepancy
            out.programs += 1
            out.outcomes += report.outcomes
            out.engine_runs += report.engine_runs
            for d in report.discrepancies:
                out.by_class[d.kind] += 1
            for kind in {d.kind for d in report.discrepancies}:
                out.programs_by_class[kind] += 1
            for d in failures:
                if not is_known(_signature(d), program.features):
                    if not shrink:
                        known.append((_signature(d), program.features))
                        out.unshrunk.append((_signature(d), program.features,
                                             _text(program, [d])))  # fmt: skip
                        continue
                    state["target"] = _signature(d)
                    state["last"] = (program, report)
                    state["since"] = time.perf_counter()
                    _found()
            return
        out.shrink_calls += 1  # shrinking: fail only in the same way, within the time allowed
        if time.perf_counter() - state["since"] > shrink_seconds:
            raise _StopShrinking()  # keep the smallest failure so far
        if any(_signature(d) == target for d in failures):
            state["last"] = (program, report)
            _found()

    try:
        one()
    except (_Found, _StopShrinking):
        pass
    except Exception as exc:  # hypothesis itself (a flaky shrink): keep what was found
        if state["last"] is None:
            raise
        print(f"  (seed {seed}: {type(exc).__name__} while shrinking: keeping the last): {exc}",
              file=sys.stderr)  # fmt: skip
    if state["target"] is not None and state["last"] is not None:
        program, report = state["last"]
        target = state["target"]
        if shrink:  # hypothesis's minimum, then statements deleted while it still fails
            program = D.reduce_program(program, target, known_runs=known_runs, seed=seed)
            report = D.check_program(program, known_runs=known_runs, seed=seed)
        shown = [d for d in report.discrepancies if _signature(d) == target] or \
            report.discrepancies  # fmt: skip
        out.found = (target, program.features, _text(program, shown))
    out.seconds = time.perf_counter() - start
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=500, help="programs per hypothesis run")
    ap.add_argument("--known-runs", type=int, default=2,
                    help="engine runs with every input known, per program")  # fmt: skip
    ap.add_argument("--out", type=Path, default=Path("differential-failures"))
    ap.add_argument("--skip", default="", help="comma-separated progen features to leave out")
    ap.add_argument("--max-shrinks", type=int, default=40)
    ap.add_argument("--shrink-seconds", type=float, default=30.0)
    ap.add_argument("--no-precision", action="store_true",
                    help="do not treat imprecision as a failure (still counted)")  # fmt: skip
    args = ap.parse_args()

    from tests.engine.progen import FEATURES

    skip = frozenset(s.strip() for s in args.skip.split(",") if s.strip())
    if skip - FEATURES:
        ap.error(f"--skip names no progen feature: {sorted(skip - FEATURES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    known: list[tuple[tuple[str, ...], frozenset[str]]] = []
    total = ChunkResult()
    written: list[Path] = []
    started = time.perf_counter()
    shrinks = 0
    next_chunk = 0

    def submit(pool: ProcessPoolExecutor) -> Any:
        nonlocal next_chunk
        chunk_seed = args.seed * 1_000_003 + next_chunk
        next_chunk += 1
        return pool.submit(run_chunk, chunk_seed, args.chunk, skip, args.known_runs,
                           list(known), shrinks < args.max_shrinks, args.shrink_seconds,
                           not args.no_precision)  # fmt: skip

    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        pending = [submit(pool) for _ in range(max(1, args.jobs))]
        while pending:
            res: ChunkResult = pending.pop(0).result()
            total.programs += res.programs
            total.outcomes += res.outcomes
            total.engine_runs += res.engine_runs
            total.by_class.update(res.by_class)
            total.programs_by_class.update(res.programs_by_class)
            total.shrink_calls += res.shrink_calls
            found = [(f, True) for f in res.unshrunk]
            if res.found is not None:
                shrinks += 1
                found.append((res.found, False))
            for (sig, features, text), raw in found:
                if any(sig == s and f <= features for s, f in known):
                    continue
                known.append((sig, features))
                digest = hashlib.sha1(text.encode()).hexdigest()[:8]
                name = "-".join(p.replace("/", "_").replace(":", "_") for p in sig)
                path = args.out / f"{'unshrunk-' if raw else ''}{name}-{digest}.py"
                path.write_text(text)
                written.append(path)
                print(f"  new{' (unshrunk)' if raw else ''}: {' / '.join(sig)}  needs "
                      f"{', '.join(sorted(features))}  -> {path}", flush=True)  # fmt: skip
            elapsed = time.perf_counter() - started
            print(f"[{elapsed:7.0f} s] {total.programs} programs, {total.outcomes} outcomes, "
                  f"{dict(total.programs_by_class)}", flush=True)  # fmt: skip
            if total.programs + len(pending) * args.chunk < args.programs:
                pending.append(submit(pool))

    elapsed = time.perf_counter() - started
    print()
    print(f"programs run:      {total.programs}")
    print(f"engine runs:       {total.engine_runs}")
    print(f"outcomes checked:  {total.outcomes}")
    print(f"shrinking calls:   {total.shrink_calls}")
    print(f"time:              {elapsed:.0f} s")
    print("discrepancies by class (programs with one / all of them):")
    for kind in ("wrong", "missing", "imprecise", "crash", "generator"):
        print(f"  {kind:10s} {total.programs_by_class.get(kind, 0):8d} "
              f"{total.by_class.get(kind, 0):8d}")  # fmt: skip
    raw = sum(p.name.startswith("unshrunk-") for p in written)
    print(f"distinct failing programs written: {len(written)} ({len(written) - raw} minimal, "
          f"{raw} unshrunk after --max-shrinks) in {args.out}")  # fmt: skip
    for s, f in known:
        print(f"  {' / '.join(s):60s} {', '.join(sorted(f))}")


if __name__ == "__main__":
    main()
