"""A trace is a function of its inputs: not of PYTHONHASHSEED, which orders Python's sets."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.engine.test_engine_synthetic import SCORES, make_tree, run

ROUTE = """
    import torch
    from fastk import topk_fast

    MODES = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
    FLAGS = frozenset({"x", "y", "z"})

    def route(x):
        last = None
        for m in MODES:
            last = m
        order = list(FLAGS)
        text = str(FLAGS) == "frozenset({'x', 'y', 'z'})" and str(set()) == "set()"
        if last == "zeta" and order == ["x", "y", "z"] and ",".join(FLAGS) == "x,y,z" and text:
            return topk_fast(x)
        return torch.topk(x, 2)
"""

PROBE = """
import sys
from pathlib import Path
from tests.engine.test_engine_synthetic import SCORES, make_tree, run
paths = run(make_tree(Path(sys.argv[1]), {"route.py": sys.argv[2]}), "fw.route:route", SCORES())
print(",".join(sorted(str(p.sink.kind if p.sink else None) for p in paths)))
"""


def test_set_iteration_has_one_order(tmp_path: Path) -> None:
    paths = run(make_tree(tmp_path, {"route.py": ROUTE}), "fw.route:route", SCORES())
    assert [p.sink.kind if p.sink else None for p in paths] == ["cuda_kernel"]


def test_same_trace_under_every_hash_seed(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    seen = set()
    for seed in ("1", "2", "3", "4", "5"):
        tree = tmp_path / seed
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        out = subprocess.run(
            [sys.executable, "-c", PROBE, str(tree), textwrap.dedent(ROUTE)],
            env=env, capture_output=True, text=True, check=True, cwd=root,
        )  # fmt: skip
        seen.add(out.stdout.strip())
    assert seen == {"cuda_kernel"}


def test_a_trace_collects_garbage_rarely_and_restores_the_thresholds() -> None:
    """few_collections raises the collector's thresholds for the call it wraps (a trace made
    millions of short-lived values, and rescanning spent 20-25% of it) and puts the caller's
    back after, also when the call raises; a library caller's process keeps its own."""
    import gc

    from routescope.analysis.engine.budget import GC_THRESHOLDS, few_collections

    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []

    @few_collections()
    def traced(fail: bool) -> None:
        seen.append(gc.get_threshold())
        if fail:
            raise ValueError("a trace that raises")

    traced(False)
    with contextlib.suppress(ValueError):
        traced(True)
    assert seen == [GC_THRESHOLDS, GC_THRESHOLDS] and gc.get_threshold() == before


def test_a_short_lived_process_that_traces_again_frees_the_trace_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A CLI worker freezes what exists when a trace starts (the libraries); what the trace
    before it left (an engine's values refer to each other in cycles) is collected first, not
    frozen with them for the rest of the worker's life."""
    import gc
    import weakref

    from routescope.analysis.engine import budget

    class Node:
        def __init__(self) -> None:
            self.me = self  # a cycle: only the collector frees it

    monkeypatch.setattr(budget, "_SHORT_LIVED", [True])
    monkeypatch.setattr(budget, "_TRACED", [0])
    left: list[weakref.ref[Node]] = []

    @budget.few_collections()
    def traced() -> None:
        left.append(weakref.ref(Node()))  # the trace's garbage, cyclic

    gc.disable()  # no collection in between but the one the next trace's start makes
    try:
        traced()
        assert left[0]() is not None
        traced()
        assert left[0]() is None  # collected, not frozen for the rest of the process
    finally:
        gc.unfreeze()
        gc.enable()
