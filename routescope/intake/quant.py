"""A checkpoint's quantization as it declares it: `quantization_config` (or compressed-tensors'
`compression_config`) in config.json, else ModelOpt's `hf_quant_config.json` beside it.

What is read is what the file says (the method, ModelOpt's algorithm, fp8's weight blocks, the
modules left unquantized); which config class a framework builds from it is for the framework's
own code to say (the trace runs it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

HF_QUANT_CONFIG = "hf_quant_config.json"
# the keys that list modules kept unquantized, by producer
_EXCLUDE_KEYS = ("exclude_modules", "ignore", "ignored_layers", "modules_to_not_convert")


@dataclass(frozen=True, slots=True)
class QuantInfo:
    scheme: str  # a label: the method, or ModelOpt's algorithm ("fp8", "nvfp4", "mxfp4", ...)
    method: str | None  # quant_method as written ("fp8", "modelopt", "compressed-tensors")
    algo: str | None  # ModelOpt's quant_algo ("NVFP4", "FP8", "MIXED_PRECISION")
    weight_block_size: tuple[int, ...] | None  # fp8 block scales ([128, 128])
    excluded: tuple[str, ...]  # modules kept in higher precision (as the file names them)
    file: str  # "config.json" or "hf_quant_config.json"
    key: str  # where in that file: "quantization_config", "quantization", ...
    table: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def describe(self) -> str:
        parts = [self.scheme]
        if self.algo and self.algo.lower() != self.scheme:
            parts.append(f"quant_algo {self.algo}")
        if self.weight_block_size:
            parts.append("blocks " + "x".join(str(b) for b in self.weight_block_size))
        if self.excluded:
            shown = ", ".join(self.excluded[:3]) + (" ..." if len(self.excluded) > 3 else "")
            parts.append(f"{len(self.excluded)} excluded ({shown})")
        return "; ".join(parts)


def quant_info(raw: dict[str, Any], sidecar: dict[str, Any] | None) -> QuantInfo | None:
    """The checkpoint's quantization: config.json's table first (as a server reads it), then
    `hf_quant_config.json`'s `quantization` table; None for an unquantized checkpoint."""
    for key in ("quantization_config", "compression_config"):
        table = raw.get(key)
        if isinstance(table, dict):
            return _from_table(table, "config.json", key)
    if isinstance(sidecar, dict):
        table = sidecar.get("quantization", sidecar)
        if isinstance(table, dict):
            key = "quantization" if "quantization" in sidecar else "(top level)"
            return _from_table(table, HF_QUANT_CONFIG, key, default_method="modelopt")
    return None


def _from_table(
    table: dict[str, Any], file: str, key: str, default_method: str | None = None
) -> QuantInfo:
    method = table.get("quant_method", default_method)
    method = method if isinstance(method, str) and method else None
    algo = table.get("quant_algo")
    algo = algo if isinstance(algo, str) and algo else None
    scheme = (algo or method or "unknown").lower()
    blocks = table.get("weight_block_size")
    block_size = (
        tuple(blocks)
        if isinstance(blocks, list) and blocks and all(isinstance(b, int) for b in blocks)
        else None
    )
    excluded: list[str] = []
    for k in _EXCLUDE_KEYS:
        listed = table.get(k)
        if isinstance(listed, list):
            excluded.extend(str(x) for x in listed if isinstance(x, (str, int)))
    return QuantInfo(scheme, method, algo, block_size, tuple(excluded), file, key, dict(table))
