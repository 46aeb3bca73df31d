"""RoutingSpec -> plain JSON-able dict (the `model` and `routing` parts of every report)."""

from __future__ import annotations

from typing import Any

from routescope.intake.quant import QuantInfo
from routescope.intake.spec import Provenance, RoutingSpec, Sourced


def provenance_dict(p: Provenance) -> dict[str, Any]:
    out: dict[str, Any] = {"origin": p.origin.value}
    if p.key:
        out["key"] = p.key
    if p.note:
        out["note"] = p.note
    return out


def sourced_dict(s: Sourced[Any]) -> dict[str, Any]:
    value = list(s.value) if isinstance(s.value, tuple) else s.value
    return {"value": value, **provenance_dict(s.provenance)}


def spec_dict(spec: RoutingSpec) -> dict[str, Any]:
    m = spec.model
    model: dict[str, Any] = {"ref": m.ref, "kind": m.kind, "config_path": m.config_path}
    if m.kind == "hub":
        model["revision"] = m.revision
        model["commit"] = m.commit
    model["config_sha256"] = m.sha256
    model["architectures"] = sourced_dict(spec.architectures)
    model["model_type"] = sourced_dict(spec.model_type)
    if spec.routing_config_path:
        model["routing_config_path"] = spec.routing_config_path
    routing = {name: sourced_dict(spec.sourced(name)) for name in spec.ROUTING_FIELDS}
    out: dict[str, Any] = {"model": model, "routing": routing}
    if spec.quant is not None:
        out["quantization"] = quant_dict(spec.quant)
    out["topology"] = spec.topology.value
    out["notes"] = list(spec.notes)
    return out


def quant_dict(q: QuantInfo) -> dict[str, Any]:
    """The checkpoint's quantization as the file declares it, and which file and table."""
    return {
        "scheme": q.scheme,
        "quant_method": q.method,
        "quant_algo": q.algo,
        "weight_block_size": list(q.weight_block_size) if q.weight_block_size else None,
        "excluded": list(q.excluded),
        "file": q.file,
        "key": q.key,
    }
