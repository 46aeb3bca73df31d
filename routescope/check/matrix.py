"""Run a policy's model x GPU matrix over the machine's cores, one parsed index per process.

api.inspect builds a fresh Index per call; here the source tree is opened once, each worker
indexes it once for its share of the cells, and each model's config is read once per worker.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import time
from dataclasses import dataclass
from typing import Any

from routescope import timing
from routescope.analysis.phases.deployment import Deployment, ep_given_once
from routescope.check.policy import Policy
from routescope.errors import RoutescopeError
from routescope.hardware import resolve_gpu
from routescope.intake import load_spec
from routescope.tracecache import traced_report


@dataclass(frozen=True, slots=True)
class Cell:
    """One model on one GPU: the full report, or why there is none."""

    model: str  # as written in the policy
    gpu: str  # as written in the policy
    report: dict[str, Any] | None
    error: str | None = None


def run_matrix(policy: Policy, *, offline: bool = False, workers: int | None = None) -> list[Cell]:
    """Every (model, gpu) of `policy` in policy order. Opening the framework source can raise
    RoutescopeError (unreachable registry, nothing cached): then no cell can be decided.

    The cells are split over the machine's cores (`workers`, default: one process per core, at
    most one per cell); each process parses the index once for its share. The result does not
    depend on how the cells were split."""
    from routescope.api import open_framework  # the policy validated the spelling

    with timing.phase(f"source: open {policy.framework}"):
        rules, tree, version = open_framework(policy.framework, offline=offline)
    jobs = [(model, gpu) for model in policy.models for gpu in policy.gpus]
    n = min(workers or os.cpu_count() or 1, len(jobs))
    if n <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return _cells(policy, offline, rules, tree, version, jobs)
    global _SHARED
    _SHARED = (policy, offline, rules, tree, version)
    try:
        ctx = multiprocessing.get_context("fork")  # the children inherit the opened source
        with ctx.Pool(n) as pool:
            shares = pool.map(_share, [jobs[i::n] for i in range(n)])
    finally:
        _SHARED = None
    for i, (share, (took, rows)) in enumerate(shares):  # each worker's phases, with the timings
        cells = f"{len(share)} cell{'' if len(share) == 1 else 's'}"
        timing.adopt(f"worker {i + 1} of {n} ({cells}, beside the others)", took, rows)
    done = {(c.model, c.gpu): c for share, _ in shares for c in share}
    return [done[job] for job in jobs]


_SHARED: Any = None  # what a forked worker reads: the policy and the opened framework


def _share(
    jobs: list[tuple[str, str]],
) -> tuple[list[Cell], tuple[float, list[tuple[int, str, float]]]]:
    policy, offline, rules, tree, version = _SHARED
    start, at = time.perf_counter(), timing.mark()
    cells = _cells(policy, offline, rules, tree, version, jobs)
    return cells, (time.perf_counter() - start, timing.rows_since(at))


def _cells(policy: Policy, offline: bool, rules: Any, tree: Any, version: str | None,
           jobs: list[tuple[str, str]]) -> list[Cell]:  # fmt: skip
    @functools.cache
    def index() -> Any:  # parsed once, and only when a cell is traced
        from routescope.analysis.index import Index

        return Index(tree)

    @functools.cache
    def spec(model: str) -> Any:
        try:
            return load_spec(policy.model_ref(model), offline=offline)
        except RoutescopeError as exc:
            return exc

    cells: list[Cell] = []
    for model, gpu in jobs:
        with timing.phase(f"{model} on {gpu}"):
            cells.append(_cell(policy, rules, tree, version, index, spec(model), model, gpu))
    return cells


def _cell(policy: Policy, rules: Any, tree: Any, version: str | None, index: Any, got: Any,
          model: str, gpu: str) -> Cell:  # fmt: skip
    """One model on one GPU: its report (traced, or read back), or why there is none."""
    if isinstance(got, RoutescopeError):
        return Cell(model, gpu, None, got.message)
    dep = Deployment(gpu=resolve_gpu(gpu), tp=policy.tp, ep=policy.ep, quant=policy.quant,
                     server_args=dict(policy.server_args), env=dict(policy.env),
                     packages=dict(policy.packages))  # fmt: skip
    try:
        ep_given_once(rules, policy.ep, dict(policy.server_args))
        report = traced_report(tree, index, rules, got, dep, version)
    except RoutescopeError as exc:
        return Cell(model, gpu, None, f"{exc.subject}: {exc.message}")
    return Cell(model, gpu, report)
