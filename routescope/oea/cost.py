"""Memory-bound cost model of one MoE layer's decode step: bytes moved / GPU bandwidth.

Decode is memory bound (OEA.md: latency ≈ b*T + a*B*k): each of the T distinct routed experts
costs one load of its weights, the shared experts are always loaded, and activations add a term
that grows with B*k. No torch here: the CLI may price results without the `sim` extra.
"""

from __future__ import annotations

from dataclasses import dataclass

from routescope.errors import RoutescopeError
from routescope.hardware import GpuProfile

# Bytes per weight, scales included: fp8 with one fp32 scale per 128x128 block (DeepSeek-V3
# style); nvfp4 with one fp8 scale per 16 weights (the NVFP4 format).
BYTES_PER_PARAM: dict[str, float] = {
    "bf16": 2.0,
    "fp8": 1.0 + 4.0 / (128 * 128),
    "nvfp4": 0.5 + 1.0 / 16,
}
ACTIVATION_BYTES = 2  # bf16 activations


@dataclass(frozen=True, slots=True)
class MoeSizes:
    """Per-layer sizes; an expert is a gated MLP (gate, up, down: 3 * hidden * inter weights)."""

    hidden_size: int
    moe_intermediate_size: int
    shared_intermediate_total: int  # summed over shared experts; 0 if none
    quant: str

    @property
    def bytes_per_param(self) -> float:
        try:
            return BYTES_PER_PARAM[self.quant]
        except KeyError:
            known = ", ".join(BYTES_PER_PARAM)
            raise RoutescopeError(f"--quant {self.quant}", f"unknown; known: {known}") from None

    @property
    def expert_bytes(self) -> float:
        return 3 * self.hidden_size * self.moe_intermediate_size * self.bytes_per_param

    @property
    def shared_bytes(self) -> float:
        return 3 * self.hidden_size * self.shared_intermediate_total * self.bytes_per_param

    def activation_bytes(self, tokens: int, slots_per_token: float) -> float:
        """Hidden state in and out per token, gate/up out and down in per (token, expert)."""
        per_token = 2 * self.hidden_size * ACTIVATION_BYTES
        per_slot = 3 * self.moe_intermediate_size * ACTIVATION_BYTES
        return tokens * (per_token + slots_per_token * per_slot)

    def layer_time_us(
        self, gpu: GpuProfile, unique_experts: float, tokens: int, slots_per_token: float
    ) -> float:
        """T distinct experts for `tokens` tokens -> microseconds at the GPU's bandwidth."""
        moved = unique_experts * self.expert_bytes + self.shared_bytes
        moved += self.activation_bytes(tokens, slots_per_token)
        return moved / gpu.bandwidth_bytes_per_s * 1e6
