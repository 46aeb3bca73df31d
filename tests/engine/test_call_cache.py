"""Calls made again with the same arguments (engine/callcache.py): the result is taken where the
path holds what the call read, and what the call made is made again for each caller, as Python
makes it again. Each test calls its helper three times or more: the first call runs, the second
runs recording what it reads, the third and later take the result."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.budget import Budget
from tests.engine.test_engine_synthetic import SCORES, make_tree, run

HEAD = """
import os
import torch
from fastk import topk_fast

"""


def _kinds(tmp_path: Path, body: str, budget: Budget | None = None) -> set[str | None]:
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES(),
                budget=budget)  # fmt: skip
    assert paths and not any(p.stopped for p in paths)
    return {p.sink.kind if p.sink else None for p in paths}


PERMS = """
def perms():
    table = []
    for i in range(8):
        table.extend([i + 8 * j for j in range(8)])
    return table, [0, 2, 1, 3]
"""


def test_a_list_a_remembered_call_made_is_a_new_list_for_each_caller(tmp_path: Path) -> None:
    """vLLM 0.34.0 marlin_utils.py:509 get_scale_perms builds its tables for each expert. The
    tables taken from the remembered call are not the earlier callers' lists: appending to one
    leaves the others as they were, and no two are one object."""
    body = (
        PERMS
        + """
def route(x):
    a, _ = perms()
    a.append(-1)
    b, _ = perms()
    c, small = perms()
    d, _ = perms()
    if len(a) == 65 and len(b) == 64 and len(c) == 64 and c[9] == 9 and small[1] == 2:
        if c is not b and c is not d and d is not a:
            return topk_fast(x)
    return torch.topk(x, 2)
"""
    )
    assert _kinds(tmp_path, body) == {"cuda_kernel"}


def test_a_remembered_call_costs_no_steps_again(tmp_path: Path) -> None:
    """A hundred calls of the table builder: the first two are evaluated, the rest taken."""
    body = (
        PERMS
        + """
def route(x):
    total = 0
    for _ in range(100):
        table, _ = perms()
        total = total + len(table)
    if total == 6400:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    )
    budget = Budget()
    assert _kinds(tmp_path, body, budget) == {"cuda_kernel"}
    assert budget.steps < 20_000  # (each call evaluated: about 100 x 400 steps)


def test_a_call_that_read_what_changed_since_runs_again(tmp_path: Path) -> None:
    """The helper reads a module dict the caller writes between calls: a path that no longer
    holds what the remembered call read does not take its result."""
    body = """
SETTINGS = {"backend": "a"}

def backend():
    name = SETTINGS["backend"]
    parts = []
    for ch in name * 20:
        parts.append(ch)
    return "".join(parts[:1])

def route(x):
    first = backend()
    backend()
    backend()
    SETTINGS["backend"] = "b"
    now = backend()
    if first == "a" and now == "b":
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == {"cuda_kernel"}


def test_a_nested_function_reads_its_enclosing_frame_as_it_is_now(tmp_path: Path) -> None:
    """A closure reads its enclosing frame, whose names no record follows (the name is bound
    again between calls): it is never remembered."""
    body = """
def route(x):
    width = 1

    def count():
        n = 0
        for _ in range(30):
            n = n + width
        return n

    count()
    count()
    width = 2
    if count() == 60:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == {"cuda_kernel"}


def test_arguments_equal_in_python_but_of_other_types_are_other_calls(tmp_path: Path) -> None:
    """1, 1.0 and True are equal and hash alike, but a call may tell them apart."""
    body = """
def kind(v):
    out = ""
    for _ in range(10):
        if isinstance(v, bool):
            out = "bool"
        elif isinstance(v, float):
            out = "float"
        else:
            out = "int"
    return out

def route(x):
    kind(1)
    kind(1)
    a = kind(1)
    b = kind(True)
    c = kind(1.0)
    if a == "int" and b == "bool" and c == "float":
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == {"cuda_kernel"}


def test_the_decisions_of_a_remembered_call_are_the_takers_too(tmp_path: Path) -> None:
    """Each taker's record holds the branch the call decided, as if it had run."""
    body = """
def choose(n):
    acc = 0
    for i in range(n):
        acc = acc + i
    if acc > 10:
        return "big"
    return "small"

def route(x):
    for _ in range(5):
        choose(10)
    return topk_fast(x)
"""
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES())
    assert len(paths) == 1
    lines = [d.line for d in paths[0].decisions if d.text == "acc > 10"]
    assert len(lines) == 5
