"""The simulator's result: plain frozen dataclasses (no torch), rendered by routescope.render."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA_VERSION = 2  # 2: rows gain topk_mass_kept; at_quality is judged by it


@dataclass(frozen=True, slots=True)
class SimRow:
    """One (batch size, k0) cell. OEA fields are None where the source has ids but no scores.

    T is the number of distinct routed experts one MoE layer loads for one decode batch;
    mean and p95 run over every (layer, batch) sample. Times are per MoE layer, in µs.
    """

    batch: int
    k0: int
    samples: int
    t_baseline_mean: float
    t_baseline_p95: float
    t_oea_mean: float | None
    t_oea_p95: float | None
    weight_mass_kept: float | None  # mean over tokens of sum(P over OEA set)/sum(P over top-k)
    experts_per_token: float | None  # mean routed experts kept per token under OEA
    time_baseline_us: float | None
    time_oea_us: float | None
    # mean over tokens of sum(P over OEA set ∩ the token's own top-k)/sum(P over top-k): how
    # much of the routing the model chose survives (experts piggybacked from past the top-k
    # are a different mixture, not the chosen one kept)
    topk_mass_kept: float | None = None

    @property
    def t_reduction(self) -> float | None:
        if self.t_oea_mean is None or self.t_baseline_mean == 0:
            return None
        return 1.0 - self.t_oea_mean / self.t_baseline_mean


@dataclass(frozen=True, slots=True)
class QualityPoint:
    """At one batch size, the smallest swept k0 that keeps at least the target share of the
    tokens' own top-k weight mass, and the cut in T it buys: OEA's gain at equal quality."""

    batch: int
    k0: int | None  # None: no swept k0 reaches the target
    topk_mass_kept: float | None
    t_reduction: float | None


@dataclass(frozen=True, slots=True)
class SimReport:
    """Everything `routescope simulate` shows; `to_json()` is the versioned JSON form."""

    model: str
    gpu: str
    bandwidth_tbps: float
    source: str
    seed: int
    quant: str
    policy: str
    num_experts: int
    top_k: int
    n_group: int
    topk_group: int
    scoring: str
    expert_bytes: float | None
    shared_bytes: float | None
    rows: tuple[SimRow, ...]
    notes: tuple[str, ...] = field(default=())
    quality_target: float = 0.95  # share of the tokens' top-k weight mass OEA must keep

    def at_quality(self) -> tuple[QualityPoint, ...]:
        """Per batch size: the cheapest swept k0 meeting `quality_target` of top-k mass kept.
        A smaller k0 always cuts T more; what limits it is how much of its own routing a token
        loses. Where routing is skewed the experts a token chose are popular, already in the
        batch's set, and piggybacked back; on uniform routing they rarely are, so it takes a k0
        close to k, and the gain is small."""
        out: list[QualityPoint] = []
        for batch in dict.fromkeys(r.batch for r in self.rows):
            rows = sorted((r for r in self.rows if r.batch == batch), key=lambda r: r.k0)
            ok = [r for r in rows if r.topk_mass_kept is not None
                  and r.topk_mass_kept >= self.quality_target]  # fmt: skip
            best = ok[0] if ok else None
            out.append(QualityPoint(batch, best.k0 if best else None,
                                    best.topk_mass_kept if best else None,
                                    best.t_reduction if best else None))  # fmt: skip
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, **asdict(self)}
        out["rows"] = [{**asdict(r), "t_reduction": r.t_reduction} for r in self.rows]
        out["notes"] = list(self.notes)
        out["at_quality"] = [asdict(q) for q in self.at_quality()]
        return out
