"""Loops the engine cannot unroll within its budget, and loops whose passes make new objects.

A loop over known items is unrolled; one whose remaining passes, each costing what the last
cost, would take it past its step budget is run from there as a loop of unknown trip count
(vLLM 0.34.0 marlin_utils_fp4.py:270 and :379 repack and permute each of 128 experts' weights
after loading, ~2,000 steps a pass: unrolled, the phase ran out of its budget and the experts'
kernel object was never built). A loop of unknown trip count runs passes until one changes
nothing; what a pass makes anew (a list a callee builds) is new on every pass and is not what
has to settle."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.budget import Budget
from tests.engine.test_engine_synthetic import SCORES, make_tree, run

HEAD = """
import os
import torch
from fastk import topk_fast

"""


def _paths(tmp_path: Path, body: str, steps: int | None = None) -> list:
    budget = None
    if steps is not None:
        budget = Budget()
        budget.push(steps, "over budget")
    return run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES(),
               budget=budget)  # fmt: skip


def _kinds(paths: list) -> set[str | None]:
    return {p.sink.kind if p.sink else None for p in paths}


REPACK = """
def repack(w, i):
    perm = []
    for j in range(4):
        perm.append(j * i)
    return w

def route(x):
    out = None
    for i in range(NUM):
        w = repack(x, i)
        if out is None:
            out = []
        out.append(w)
    assert out is not None
    if len(out) == NUM:
        return topk_fast(x)
    return torch.topk(x, 2)
"""


def test_a_loop_too_long_to_unroll_in_the_budget_goes_on_past_it(tmp_path: Path) -> None:
    """Unrolled, 2,000 passes of ~60 steps outgrow a 30,000-step budget and the way stops with
    nothing; summarized, the way goes on. What the loop computed is not known then (its length),
    so the test after it forks: unknown, never a wrong decided answer."""
    paths = _paths(tmp_path, REPACK.replace("NUM", "2_000"), steps=30_000)
    assert paths and not any(p.stopped for p in paths)
    assert _kinds(paths) == {"cuda_kernel", "torch"}


def test_a_loop_that_fits_its_budget_is_unrolled_to_the_end(tmp_path: Path) -> None:
    """The same loop over 20 items fits: unrolled, its list's length is known and decided."""
    paths = _paths(tmp_path, REPACK.replace("NUM", "20"), steps=30_000)
    assert len(paths) == 1 and not paths[0].stopped
    assert _kinds(paths) == {"cuda_kernel"}


def test_an_unknown_trip_count_settles_though_each_pass_makes_new_lists(tmp_path: Path) -> None:
    """Each pass calls a helper that builds a list of its own: before, those lists differed
    between every two passes and the loop never settled (the way stopped)."""
    body = """
def helper(v):
    acc = []
    acc.append(v)
    return acc

def route(x):
    n = x.shape[0]  # the batch's tokens: not known
    for i in range(n):
        helper(i)
    return topk_fast(x)
"""
    paths = _paths(tmp_path, body)
    assert len(paths) == 1 and not paths[0].stopped
    assert _kinds(paths) == {"cuda_kernel"}


def test_an_object_a_pass_made_is_compared_once_a_later_pass_changes_it(tmp_path: Path) -> None:
    """The list made in the first pass is older than the second pass and is changed by it: the
    loop has not settled, and its length after the loop is not known. Python: n == 1 gives
    topk_fast, any other n torch.topk; both must remain."""
    body = """
def route(x):
    n = x.shape[0]  # the batch's tokens: not known
    holder = [None]
    for i in range(n):
        if holder[0] is None:
            holder[0] = []
        holder[0].append(i)
    if holder[0] is not None and len(holder[0]) == 1:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    paths = _paths(tmp_path, body)
    assert not any(p.stopped for p in paths)
    assert _kinds(paths) == {"cuda_kernel", "torch"}
