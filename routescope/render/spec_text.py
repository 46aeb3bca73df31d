"""RoutingSpec -> a rich table: each routing field, its value and where it came from."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from routescope.intake.spec import Origin, RoutingSpec

_LABELS = {
    "num_experts": "routed experts",
    "top_k": "top-k",
    "n_group": "n_group",
    "topk_group": "topk_group",
    "topk_method": "topk_method",
    "scoring_func": "scoring",
    "norm_topk_prob": "renormalise top-k",
    "routed_scaling_factor": "routed scaling",
    "n_shared_experts": "shared experts",
    "shared_expert_intermediate_size": "shared expert width",
    "has_correction_bias": "correction bias",
    "num_moe_layers": "MoE layers",
    "num_hidden_layers": "layers",
    "first_k_dense_replace": "first dense layers",
    "moe_layer_freq": "moe_layer_freq",
    "decoder_sparse_step": "decoder_sparse_step",
    "moe_intermediate_size": "expert width",
    "hidden_size": "hidden size",
    "quantization": "quantization",
}


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and len(value) > 8:
        return f"[{', '.join(map(str, value[:6]))}, ... ({len(value)} entries)]"
    return str(value)


def spec_table(spec: RoutingSpec) -> Table:
    arch = ", ".join(spec.architectures.value or ()) or "?"
    title = f"{spec.model.ref}  ·  {arch}  ·  {spec.topology.value}"
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("field")
    table.add_column("value", overflow="fold")
    table.add_column("from", overflow="fold")
    for name in spec.ROUTING_FIELDS:
        s = spec.sourced(name)
        origin = s.provenance
        where = origin.origin.value if origin.origin is not Origin.ABSENT else "absent"
        if origin.key:
            where += f" {origin.key}"
        if origin.note:
            where += f"  ({origin.note})"
        style = "dim" if s.value is None else ""
        table.add_row(_LABELS[name], _fmt(s.value), where, style=style)
    return table
