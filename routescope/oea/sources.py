"""Synthetic routing sources with a fixed seed: router logits for decode batches.

- uniform: iid N(0, 1) logits, so each token's top-k is a uniformly random k-subset.
- zipf:S: a fixed expert popularity p_e ∝ 1/rank^S (random rank per expert); logits are
  log p + Gumbel noise, so top-k is sampling without replacement ∝ p (the Gumbel-top-k trick).
- correlated:R: tokens of one batch share a latent: logits = sqrt(R)*z_batch + sqrt(1-R)*z_token
  (R in [0, 1]: 0 is uniform, 1 is every token routing alike).
A path instead names a trace file (routescope.oea.traces).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from routescope.errors import RoutescopeError

Tensor = Any
SourceKind = Literal["uniform", "zipf", "correlated", "file"]


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """What `--source` named: a synthetic kind with its parameter, or a trace path."""

    kind: SourceKind
    param: float = 0.0
    path: str = ""

    @property
    def label(self) -> str:
        if self.kind == "file":
            return self.path
        return self.kind if self.kind == "uniform" else f"{self.kind}:{self.param:g}"


def parse_source(text: str) -> SourceSpec:
    """`uniform` | `zipf:1.2` | `correlated:0.6` | a path -> SourceSpec (bad -> RoutescopeError)."""
    name, _, arg = text.partition(":")
    if name == "uniform" and not arg:
        return SourceSpec("uniform")
    if name in ("zipf", "correlated"):
        try:
            value = float(arg) if arg else (1.0 if name == "zipf" else 0.5)
        except ValueError:
            raise RoutescopeError(f"--source {text}", f"{arg!r} is not a number") from None
        if name == "zipf" and not 0.0 <= value <= 10.0:
            raise RoutescopeError(f"--source {text}", "the Zipf exponent must be in 0..10")
        if name == "correlated" and not 0.0 <= value <= 1.0:
            raise RoutescopeError(f"--source {text}", "the correlation must be in 0..1")
        return SourceSpec("zipf" if name == "zipf" else "correlated", value)
    return SourceSpec("file", path=text)


def synthetic_logits(
    spec: SourceSpec, num_experts: int, batch: int, steps: int, seed: int
) -> Tensor:
    """A synthetic SourceSpec -> float32 logits [steps, batch, num_experts], deterministic."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    shape = (steps, batch, num_experts)
    if spec.kind == "uniform":
        return torch.randn(shape, generator=gen)
    if spec.kind == "zipf":
        # The popularity is one fixed property of the layer, drawn from the seed alone.
        ranks = torch.randperm(num_experts, generator=torch.Generator().manual_seed(seed)) + 1
        log_p = -spec.param * torch.log(ranks.double())
        log_p = (log_p - torch.logsumexp(log_p, 0)).float()
        u = torch.rand(shape, generator=gen).clamp_(1e-12, 1.0 - 1e-7)
        return log_p.view(1, 1, -1) - torch.log(-torch.log(u))
    if spec.kind == "correlated":
        shared = torch.randn((steps, 1, num_experts), generator=gen)
        own = torch.randn(shape, generator=gen)
        return math.sqrt(spec.param) * shared + math.sqrt(1.0 - spec.param) * own
    raise RoutescopeError(spec.label, "not a synthetic source")
