"""Run a policy's model x GPU matrix: one parsed index per framework version, reused by every cell.

api.inspect builds a fresh Index per call; here the source tree is opened and indexed once, and
each model's config is read once, so the parse cost is paid once per version, not per cell.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from routescope.analysis.deployment import Deployment
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


def run_matrix(policy: Policy, *, offline: bool = False) -> list[Cell]:
    """Every (model, gpu) of `policy` in policy order. Opening the framework source can raise
    RoutescopeError (unreachable registry, nothing cached): then no cell can be decided."""
    from routescope.api import open_framework  # the policy validated the spelling

    rules, tree, version = open_framework(policy.framework, offline=offline)

    @functools.cache
    def index() -> Any:  # parsed once, and only when a cell is traced
        from routescope.analysis.index import Index

        return Index(tree)

    cells: list[Cell] = []
    for model in policy.models:
        try:
            spec = load_spec(policy.model_ref(model), offline=offline)
        except RoutescopeError as exc:
            cells.extend(Cell(model, gpu, None, exc.message) for gpu in policy.gpus)
            continue
        for gpu in policy.gpus:
            dep = Deployment(gpu=resolve_gpu(gpu), tp=policy.tp, quant=policy.quant)
            try:
                report = traced_report(tree, index, rules, spec, dep, version)
            except RoutescopeError as exc:
                cells.append(Cell(model, gpu, None, f"{exc.subject}: {exc.message}"))
                continue
            cells.append(Cell(model, gpu, report))
    return cells
