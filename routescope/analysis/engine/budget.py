"""Budgets that end a path as Unknown: evaluation steps, paths, depth, loops."""

from __future__ import annotations

import time


class BudgetExceeded(Exception):
    """A path outgrew a budget; it ends as Unknown with this reason."""


class Budget:
    """Limits that end a path as Unknown. Work is counted in evaluation steps (expressions and
    statements), not seconds, so the same inputs give the same report on a loaded machine; a
    wall-clock deadline remains only as a last guard against a runaway analysis."""

    def __init__(
        self,
        max_paths: int = 256,
        max_depth: int = 28,
        seconds: float = 120.0,
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

    def check_time(self) -> None:
        self.steps += 1
        if self.local and self.steps > self.local[-1][0]:
            raise BudgetExceeded(self.local[-1][1])
        if self.steps % 4096 == 0 and time.monotonic() > self.deadline:
            raise BudgetExceeded(f"time budget of {self.seconds:g} s exhausted")

    def push(self, steps: int, reason: str) -> None:
        self.local.append((self.steps + steps, reason))

    def pop(self) -> None:
        self.local.pop()
