"""RouterConfig: the routing facts the OEA reference and simulator need, without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from routescope.errors import RoutescopeError
from routescope.intake.spec import RoutingSpec

Scoring = Literal["softmax", "sigmoid", "sqrtsoftplus"]
GroupPolicy = Literal["free", "within-selected-groups"]
SCORINGS: tuple[Scoring, ...] = ("softmax", "sigmoid", "sqrtsoftplus")
GROUP_POLICIES: tuple[GroupPolicy, ...] = ("free", "within-selected-groups")


@dataclass(frozen=True, slots=True)
class RouterConfig:
    """How one MoE layer turns router logits into (topk_ids, topk_weights).

    `renormalize` is the model's norm_topk_prob; `routed_scaling_factor` multiplies the routed
    weights inside the router (SGLang's apply_routed_scaling_factor_on_output=True form, which
    is why fused shared slots then carry weight 1.0).
    """

    num_experts: int
    top_k: int
    scoring: Scoring = "softmax"
    has_correction_bias: bool = False
    n_group: int = 1
    topk_group: int = 1
    renormalize: bool = True
    routed_scaling_factor: float = 1.0
    num_fused_shared_experts: int = 0

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> RoutescopeError:
            return RoutescopeError(name, why)

        if self.num_experts < 1:
            raise bad("num_experts", f"must be >= 1, got {self.num_experts}")
        if not 1 <= self.top_k <= self.num_experts:
            raise bad("top_k", f"must be in 1..num_experts={self.num_experts}, got {self.top_k}")
        if self.scoring not in SCORINGS:
            raise bad("scoring_func", f"{self.scoring!r} is not one of {', '.join(SCORINGS)}")
        if self.n_group < 1 or self.num_experts % self.n_group:
            raise bad("n_group", f"{self.n_group} does not divide num_experts={self.num_experts}")
        if not 1 <= self.topk_group <= self.n_group:
            raise bad("topk_group", f"must be in 1..n_group={self.n_group}, got {self.topk_group}")
        if self.top_k > self.topk_group * self.group_size:
            raise bad("top_k", f"{self.top_k} exceeds the experts in {self.topk_group} groups")
        if self.num_fused_shared_experts < 0:
            raise bad("num_fused_shared_experts", "must be >= 0")

    @property
    def group_size(self) -> int:
        return self.num_experts // self.n_group

    @classmethod
    def from_spec(cls, spec: RoutingSpec, *, num_fused_shared_experts: int = 0) -> RouterConfig:
        """A RoutingSpec -> RouterConfig; unknown optional fields take the neutral value.

        num_experts and top_k are essential: unknown -> RoutescopeError naming the field.
        n_group unknown -> 1; topk_group unknown -> n_group (no group limit); scoring unknown ->
        softmax; norm_topk_prob unknown -> True (Mixtral/Qwen3/DeepSeek-V3 renormalise);
        routed_scaling_factor unknown -> 1.0.
        """
        where = spec.model.ref
        num_experts = spec.num_experts.value
        top_k = spec.top_k.value
        if num_experts is None:
            raise RoutescopeError(f"{where}: num_experts", "unknown; the model may not be MoE")
        if top_k is None:
            raise RoutescopeError(f"{where}: top_k", "unknown (num_experts_per_tok not found)")
        scoring = spec.scoring_func.value or "softmax"
        if scoring not in SCORINGS:
            raise RoutescopeError(
                f"{where}: scoring_func", f"{scoring!r} is not one of {', '.join(SCORINGS)}"
            )
        n_group = spec.n_group.value or 1
        rsf = spec.routed_scaling_factor.value
        try:
            return cls(
                num_experts=int(num_experts),
                top_k=int(top_k),
                scoring=scoring,
                has_correction_bias=bool(spec.has_correction_bias.value),
                n_group=int(n_group),
                topk_group=int(spec.topk_group.value or n_group),
                renormalize=True
                if spec.norm_topk_prob.value is None
                else spec.norm_topk_prob.value,
                routed_scaling_factor=1.0 if rsf is None else float(rsf),
                num_fused_shared_experts=num_fused_shared_experts,
            )
        except RoutescopeError as exc:
            raise RoutescopeError(f"{where}: {exc.subject}", exc.message) from None
