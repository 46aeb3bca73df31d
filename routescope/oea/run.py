"""The simulator's entry point: a RouterConfig, a source and a sweep -> SimReport."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from routescope.errors import RoutescopeError
from routescope.hardware import GpuProfile
from routescope.oea.config import GroupPolicy, RouterConfig
from routescope.oea.cost import MoeSizes
from routescope.oea.report import SimReport, SimRow
from routescope.oea.simulate import Cell, simulate_logits, summarise, unique_count
from routescope.oea.sources import SourceSpec, synthetic_logits
from routescope.oea.traces import Trace, load_trace

Tensor = Any


def simulate(
    cfg: RouterConfig,
    *,
    model: str,
    gpu: GpuProfile,
    source: SourceSpec,
    batches: Sequence[int],
    k0s: Sequence[int],
    seed: int = 0,
    steps: int = 200,
    policy: GroupPolicy = "free",
    sizes: MoeSizes | None = None,
    num_layers: int | None = None,
    quality_target: float = 0.95,
) -> SimReport:
    """Sweep batch sizes x k0 over a synthetic source (`steps` batches each) or a trace file.

    In: the routing config, the GPU, the source, the sweep; `sizes` prices T in bytes (None ->
    no times). Out: SimReport with one SimRow per (batch, k0). Bad input -> RoutescopeError.
    """
    if not 0.0 < quality_target <= 1.0:
        raise RoutescopeError(f"--quality {quality_target}", "must be in (0, 1]")
    for k0 in k0s:
        if not 1 <= k0 <= cfg.top_k:
            raise RoutescopeError(f"--k0 {k0}", f"must be in 1..top_k={cfg.top_k}")
    if any(b < 1 for b in batches):
        raise RoutescopeError("--batch", "batch sizes must be >= 1")
    if steps < 1:
        raise RoutescopeError("--steps", "must be >= 1")
    trace = None
    if source.kind == "file":
        trace = load_trace(source.path, num_layers=num_layers, top_k=cfg.top_k)
    notes: list[str] = []
    if trace is not None:
        notes.append(trace.note)
        if trace.logits is None:
            notes.append("the trace holds expert ids, not scores: baseline T only, no OEA")
    if cfg.has_correction_bias:
        notes.append("correction bias taken as zero (its trained values are not in config.json)")
    rows: list[SimRow] = []
    for b in batches:
        for k0 in k0s:
            cell = _cell(cfg, source, trace, b, k0, seed, steps, policy)
            rows.append(summarise(cell, b, k0, cfg.top_k, sizes, gpu))
    return SimReport(
        model=model, gpu=gpu.device, bandwidth_tbps=gpu.memory_bandwidth_tbps,
        source=source.label, seed=seed, quant=sizes.quant if sizes else "", policy=policy,
        num_experts=cfg.num_experts, top_k=cfg.top_k, n_group=cfg.n_group,
        topk_group=cfg.topk_group, scoring=cfg.scoring,
        expert_bytes=sizes.expert_bytes if sizes else None,
        shared_bytes=sizes.shared_bytes if sizes else None,
        rows=tuple(rows), notes=tuple(notes), quality_target=quality_target,
    )  # fmt: skip


def _cell(
    cfg: RouterConfig, source: SourceSpec, trace: Trace | None, batch: int, k0: int,
    seed: int, steps: int, policy: GroupPolicy,
) -> Cell:  # fmt: skip
    if trace is None:
        # Same seed for every k0 of a batch size: baseline and OEA see the same batches.
        logits = synthetic_logits(source, cfg.num_experts, batch, steps, seed + batch)
        return simulate_logits(logits, cfg, k0, policy)
    if trace.logits is not None:
        if trace.logits.shape[-1] != cfg.num_experts:
            raise RoutescopeError(source.path, f"has {trace.logits.shape[-1]} experts, "
                                  f"the model {cfg.num_experts}")  # fmt: skip
        return simulate_logits(_chunks(trace.logits, batch, source.path), cfg, k0, policy)
    ids = _chunks(trace.ids, batch, source.path)
    if int(ids.max()) >= cfg.num_experts:
        raise RoutescopeError(source.path, f"has expert ids >= num_experts={cfg.num_experts}")
    return Cell(unique_count(ids, cfg.num_experts), None, None, None)


def _chunks(per_layer: Tensor, batch: int, path: str) -> Tensor:
    """[L, T, X] -> [L * (T // batch), batch, X]: consecutive tokens of each layer as batches."""
    layers, tokens, width = per_layer.shape
    usable = tokens // batch
    if usable == 0:
        raise RoutescopeError(path, f"has {tokens} tokens per layer, fewer than batch {batch}")
    return per_layer[:, : usable * batch].reshape(layers * usable, batch, width)
