"""Where a command's time goes, phase by phase: `ROUTESCOPE_TIMINGS=1 routescope inspect ...`
prints the table on stderr after the answer. Off (the default), a phase costs one test of a
module flag; nothing is ever written into a report (a cached report must not carry the
timings of the run that made it)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(slots=True)
class _Row:
    depth: int
    label: str
    seconds: float = 0.0


_ON = os.environ.get("ROUTESCOPE_TIMINGS", "") not in ("", "0")
_START = time.perf_counter()
_rows: list[_Row] = []  # in the order the phases started
_depth = 0
_within: dict[str, list[float]] = {}  # label -> [seconds, count]: spread over the phases


def enabled() -> bool:
    return _ON


def enable(on: bool = True) -> None:
    """Turn the timings on or off for this process (a library caller, a benchmark)."""
    global _ON, _START, _depth
    _ON, _START, _depth = on, time.perf_counter(), 0
    _rows.clear()
    _within.clear()


@contextmanager
def phase(label: str) -> Iterator[None]:
    """Time the block as one phase, nested under the phase it runs in."""
    if not _ON:
        yield
        return
    global _depth
    row = _Row(_depth, label)
    _rows.append(row)
    _depth += 1
    start = time.perf_counter()
    try:
        yield
    finally:
        _depth -= 1
        row.seconds = time.perf_counter() - start


def mark() -> int:
    """Where the phases recorded so far end (for rows_since)."""
    return len(_rows)


def rows_since(at: int) -> list[tuple[int, str, float]]:
    """The phases recorded since `mark()` gave `at`, as (depth, label, seconds), the shallowest
    at depth 0: what a worker process sends back to be adopted."""
    got = _rows[at:]
    top = min((r.depth for r in got), default=0)
    return [(r.depth - top, r.label, r.seconds) for r in got]


def adopt(label: str, seconds: float, rows: list[tuple[int, str, float]]) -> None:
    """Another process's phases (rows_since), nested under one phase `label` here."""
    if _ON:
        _rows.append(_Row(_depth, label, seconds))
        _rows.extend(_Row(_depth + 1 + depth, text, took) for depth, text, took in rows)


def spent(label: str, seconds: float) -> None:
    """Time spent on one kind of work wherever it happens (parsing a module): summed, and
    shown apart from the phases it falls in."""
    if _ON:
        got = _within.setdefault(label, [0.0, 0])
        got[0] += seconds
        got[1] += 1


def table() -> str:
    """The phases as an indented table, seconds on the right; then the work spread over them."""
    width = 64
    lines = ["routescope timings (wall seconds):"]
    for row in _rows:
        text = f"{'  ' * (row.depth + 1)}{row.label}"
        if len(text) > width:  # cut in the middle: a label's end names the step or the GPU
            keep = (width - 1) // 2
            text = text[:keep] + "…" + text[len(text) - (width - 1 - keep) :]
        lines.append(f"{text:<{width}} {row.seconds:7.2f}")
    for label, (seconds, count) in _within.items():
        text = f"  within the phases: {label} ({int(count)})"
        lines.append(f"{text[:width]:<{width}} {seconds:7.2f}")
    total = time.perf_counter() - _START
    lines.append(f"{'  total since routescope started':<{width}} {total:7.2f}")
    return "\n".join(lines)
