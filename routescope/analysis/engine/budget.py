"""Budgets that end a path as Unknown: evaluation steps, paths, depth, loops."""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from routescope.analysis.engine.state import PathState


class BudgetExceeded(Exception):
    """A path outgrew a budget; it ends as Unknown with this reason."""


class Budget:
    """Limits that end a path as Unknown. Work is counted in evaluation steps (expressions and
    statements), not seconds, so the same inputs give the same report on a loaded machine; a
    wall-clock deadline remains only as a last guard against a runaway analysis. It sits far
    above what the step budgets allow, so an answer never depends on the machine's load."""

    def __init__(
        self,
        max_paths: int = 256,
        max_depth: int = 28,
        # (at 120 s, vLLM 0.33.0's DeepSeek-R1 FP8 trace on SM90, 87 s alone, forked on a box
        # busy with two other traces, 196 s)
        seconds: float = 900.0,
        loop_limit: int = 64,
    ) -> None:
        self.max_paths = max_paths
        self.max_depth = max_depth
        self.deadline = time.monotonic() + seconds
        self.loop_limit = loop_limit
        self.seconds = seconds
        self.steps = 0
        self.local: list[tuple[int, str]] = []  # nested step limits, innermost last
        # more live paths than this (after a statement, a loop pass, a part of an expression)
        # are merged where they reached the same routing kernels: a control-flow join, the
        # values they disagree on becoming Unknown (set-up phases use fewer)
        self.merge_at = 24
        # in a trace whose sink is the first kernel that routes (a layer that routes, then runs
        # the experts): paths that all routed join at this many instead, since only the kernels
        # they go on to launch are read past that point (None: no such trace)
        self.routed_merge_at: int | None = None
        # in such a trace, the steps its paths may take together past their first kernel that
        # routes: the experts the ways that routed run do not spend the budget of the ways
        # still to reach their router (`routed_spent`: taken so far)
        self.routed_steps: int | None = None
        self.routed_spent = 0

    def merge_limit(self, states: list[PathState]) -> int:
        """How many live paths are kept apart before those that reached the same kernels
        join."""
        routed = self.routed_merge_at
        if (
            routed is not None
            and len(states) > routed
            and all(any(h.routes for h in s.sinks) for s in states)
        ):
            return min(routed, self.merge_at)
        return self.merge_at

    def past(self, st: PathState) -> None:
        """After a step is counted (`steps += 1`, inline in the engine's two hottest places,
        ev and exec_stmt, where a call per step was a measurable cost; they call this only
        where the step may end something: a local limit passed, a path past the kernel that
        routes, every 4096th step): raise where it went past a budget."""
        if self.local and self.steps > self.local[-1][0]:
            raise BudgetExceeded(self.local[-1][1])
        if st.routed and self.routed_steps is not None:
            self.routed_spent += 1
            if self.routed_spent > self.routed_steps:
                raise BudgetExceeded("the experts past the kernel that routes outgrew their share")
        if self.steps % 4096 == 0 and time.monotonic() > self.deadline:
            raise BudgetExceeded(f"time budget of {self.seconds:g} s exhausted")

    def push(self, steps: int, reason: str) -> None:
        self.local.append((self.steps + steps, reason))

    def pop(self) -> None:
        self.local.pop()


# young objects before a collection, and collections before an older generation's. At 200k
# young objects, SGLang 0.5.23's GLM-5 / SM120 trace spent 0.11 s of its 3.0 s in 49 young
# collections, each rescanning the same medium-lived values (a pipeline's records, a loop's
# paths); at 2M the same collections take 3 ms and the peak memory is the same (197 MB): a
# trace makes almost no cyclic garbage, so the threshold bounds garbage that is never made
GC_THRESHOLDS = (2_000_000, 10, 1000)
_SHORT_LIVED = [False]  # set by a process that exits after a few traces (the CLI)
_TRACED = [0]  # traces this process has started


def short_lived_process() -> None:
    """For a process that runs a few traces and exits (a CLI command, its workers): collect
    rarely for the whole process, and let each trace freeze what exists when it starts (the
    imported libraries, torch and transformers among them, and the modules parsed so far) out
    of the collector's reach; a long-lived process (a test run, a service) keeps only the
    thresholds around each trace, since frozen objects are never freed."""
    gc.set_threshold(*GC_THRESHOLDS)
    _SHORT_LIVED[0] = True


@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """Run a trace with the cyclic garbage collector triggered far less often: a trace makes
    millions of short-lived values over a heap of parsed modules and imported libraries, and
    the default thresholds spent 20-25% of the largest traces measured (1.9-3.4 s)
    rescanning it; peak memory is the same with the collector off (219 MB: a trace leaves
    almost no cyclic garbage). The thresholds are restored after.

    A process that traces again (a timeline or check worker) first collects what the trace
    before left: an engine's values are cyclic (a module's functions refer to the module), and
    frozen uncollected they stayed for the process's life, 50-130 MB a release (a worker of a
    19-release timeline reached 1.4 GB)."""
    if _SHORT_LIVED[0]:
        if _TRACED[0]:
            gc.collect()  # (only what is not frozen: the trace before, not the libraries)
        gc.freeze()
    _TRACED[0] += 1
    before = gc.get_threshold()
    gc.set_threshold(*(max(b, t) for b, t in zip(before, GC_THRESHOLDS, strict=True)))
    try:
        yield
    finally:
        gc.set_threshold(*before)
