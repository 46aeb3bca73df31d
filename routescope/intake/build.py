"""config.json (as a dict) -> RoutingSpec, refusing dense and impossible configs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from routescope.errors import RoutescopeError
from routescope.intake import derive
from routescope.intake.aliases import ALIASES, TEXT_CONFIG_KEYS
from routescope.intake.fields import FieldReader, dig, is_missing
from routescope.intake.quant import HF_QUANT_CONFIG, QuantInfo, quant_info
from routescope.intake.spec import ModelRef, Origin, Provenance, RoutingSpec, Sourced, Topology
from routescope.intake.transformers_view import ClassView, SubConfig, class_view


def _routing_level(raw: dict[str, Any]) -> str:
    """Where the expert keys live: the top level, or a wrapper's text config."""
    expert_keys = ALIASES["num_experts"]
    if any(not is_missing(dig(raw, k)) for k in expert_keys):
        return ""
    for sub in TEXT_CONFIG_KEYS:
        node = raw.get(sub)
        if isinstance(node, dict) and any(not is_missing(dig(node, k)) for k in expert_keys):
            return sub
    return ""


def build_spec(
    ref: ModelRef,
    raw: dict[str, Any],
    *,
    use_transformers: bool = True,
    sidecar: dict[str, Any] | None = None,
) -> RoutingSpec:
    """Read every routing field with provenance; raise RoutescopeError for non-MoE configs."""
    subject = ref.ref
    if not isinstance(raw, dict):
        raise RoutescopeError(subject, "config.json is not a JSON object")
    level = _routing_level(raw)
    routing: dict[str, Any] = raw[level] if level else raw
    _refuse_absurd_depth(subject, raw, routing)
    notes: list[str] = []
    quant = quant_info(raw, sidecar)
    view: ClassView | None = None
    if use_transformers:
        got = class_view(raw, level)
        if isinstance(got, str):
            notes.append(f"no transformers class defaults: {got}")
        else:
            view = got
    r = FieldReader(routing, level, view)
    f = {name: r.read(name) for name in ALIASES}
    layers = derive.moe_layers(r, f["num_hidden_layers"])
    for name in derive.PER_LAYER:  # a list with one entry per layer: the traced layer's
        first = layers.value[0] if layers.value else 0
        f[name] = derive.at_layer(f[name], first, f["num_hidden_layers"].value)
    num_experts, top_k = f["num_experts"], f["top_k"]
    _refuse_non_moe(subject, num_experts, top_k)
    topk_method, scoring = derive.fix_topk_method(f["topk_method"], f["scoring_func"])
    model_type = _top_or_routing(raw, routing, "model_type", level)
    n_group = f["n_group"]
    _check_groups(subject, num_experts.value, n_group.value, f["topk_group"].value)
    model_types = [t for t in (routing.get("model_type"), model_type.value) if isinstance(t, str)]
    bias = derive.correction_bias(r, topk_method, scoring, model_types)
    arch = _top_or_routing(raw, routing, "architectures", level)
    if arch.value is not None and not (
        isinstance(arch.value, list) and all(isinstance(a, str) for a in arch.value)
    ):  # a framework picks its model class by architectures[0], a class name
        raise RoutescopeError(
            subject, f"architectures must be a list of class names, not {arch.value!r:.60}"
        )
    if model_type.value is not None and not isinstance(model_type.value, str):
        raise RoutescopeError(subject, f"model_type must be a string, not {model_type.value!r:.60}")
    arch_tuple = Sourced(
        tuple(arch.value) if isinstance(arch.value, list) else None, arch.provenance
    )
    return RoutingSpec(
        model=ref,
        architectures=arch_tuple,
        model_type=model_type,
        routing_config_path=level,
        num_experts=num_experts,
        top_k=top_k,
        n_group=n_group,
        topk_group=f["topk_group"],
        topk_method=topk_method,
        scoring_func=scoring,
        norm_topk_prob=f["norm_topk_prob"],
        routed_scaling_factor=f["routed_scaling_factor"],
        n_shared_experts=derive.shared_experts(
            r, f["n_shared_experts"], f["shared_expert_intermediate_size"]
        ),
        shared_expert_intermediate_size=f["shared_expert_intermediate_size"],
        has_correction_bias=bias,
        num_moe_layers=derive.num_moe_layers(layers),
        num_hidden_layers=f["num_hidden_layers"],
        first_k_dense_replace=f["first_k_dense_replace"],
        moe_layer_freq=f["moe_layer_freq"],
        decoder_sparse_step=f["decoder_sparse_step"],
        moe_intermediate_size=_expert_width(r, f["moe_intermediate_size"]),
        hidden_size=f["hidden_size"],
        quantization=_quantization(quant),
        quant=quant,
        first_moe_layer=layers.value[0] if layers.value else None,
        sidecar=sidecar,
        topology=_topology(n_group.value),
        config_view=_config_view(routing, view),
        config_view_origin=_config_view_origin(routing, level, view),
        outer_view={k: v for k, v in raw.items() if k != level} if level else {},
        config_file=raw,
        notes=tuple(notes),
    )


def read_through(spec: RoutingSpec, class_name: str) -> RoutingSpec | str:
    """`spec` with the attribute view of transformers' `class_name` (the class a framework
    registers for the file's model_type) in place of the model_type's own class; unchanged
    when that is the class it was read through; a string saying why there is no such view."""
    if spec.config_view_origin and any(
        p.origin is Origin.CLASS_DEFAULT and (p.key or "").split(".")[0] == class_name
        for p in spec.config_view_origin.values()
    ):
        return spec
    level = spec.routing_config_path
    view = class_view(spec.config_file, level, class_name)
    if isinstance(view, str):
        return view
    routing = spec.config_file.get(level) if level else spec.config_file
    if not isinstance(routing, dict):
        return f"config.json has no {level} table"
    return replace(
        spec,
        config_view=_config_view(routing, view),
        config_view_origin=_config_view_origin(routing, level, view),
    )


def _top_or_routing(
    raw: dict[str, Any], routing: dict[str, Any], key: str, level: str
) -> Sourced[Any]:
    if key in raw:
        return Sourced(raw[key], Provenance(Origin.CONFIG, key))
    if level and key in routing:
        return Sourced(routing[key], Provenance(Origin.CONFIG, f"{level}.{key}"))
    return Sourced(None, Provenance(Origin.ABSENT, None, f"no {key} in config.json"))


def _refuse_absurd_depth(subject: str, *levels: dict[str, Any]) -> None:
    """A layer count no model has: transformers' config classes build per-layer lists from it
    (2**70 layers exhausted 24 GiB before this check), so it is refused before any is built."""
    from routescope.intake.derive import MAX_LAYERS

    for level in levels:
        n = level.get("num_hidden_layers")
        if isinstance(n, int) and not isinstance(n, bool) and not 0 <= n <= MAX_LAYERS:
            raise RoutescopeError(
                subject, f"num_hidden_layers = {n:.3g} is not a layer count (0..{MAX_LAYERS})"
            )


def _refuse_non_moe(subject: str, num_experts: Sourced[Any], top_k: Sourced[Any]) -> None:
    n, k = num_experts.value, top_k.value
    if n is None or (isinstance(n, int) and n <= 1):
        keys = ", ".join(ALIASES["num_experts"])
        raise RoutescopeError(subject, f"not a MoE model: no routed experts (none of {keys})")
    if not isinstance(n, int) or isinstance(n, bool):
        raise RoutescopeError(subject, f"{num_experts.provenance.key} is {n!r}, not an integer")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        where = top_k.provenance.key or "top-k"
        raise RoutescopeError(subject, f"{where} is {k!r}: need a positive integer top-k")
    if k > n:
        raise RoutescopeError(
            subject, f"top-k {k} ({top_k.provenance.key}) exceeds the {n} routed experts"
        )


def _check_groups(subject: str, n: Any, n_group: Any, topk_group: Any) -> None:
    if n_group is None:
        return
    if not isinstance(n_group, int) or n_group < 1 or n % n_group:
        raise RoutescopeError(subject, f"n_group {n_group!r} does not divide {n} experts")
    if topk_group is not None and (
        not isinstance(topk_group, int) or not 1 <= topk_group <= n_group
    ):
        raise RoutescopeError(subject, f"topk_group {topk_group!r} is not within 1..{n_group}")


def _topology(n_group: Any) -> Topology:
    if isinstance(n_group, int) and n_group > 1:
        return Topology.GROUPED
    if n_group == 1:
        return Topology.DEGENERATE_GROUPED
    return Topology.UNGROUPED


def _expert_width(r: FieldReader, width: Sourced[Any]) -> Sourced[Any]:
    """Mixtral-style configs size the experts with intermediate_size."""
    if width.known:
        return width
    inter = r.read_plain("intermediate_size")
    if inter.known:
        note = "no moe_intermediate_size: experts use intermediate_size"
        return Sourced(inter.value, Provenance(Origin.DERIVED, inter.provenance.key, note))
    return width


def _config_view(routing: dict[str, Any], view: ClassView | None) -> dict[str, Any]:
    merged = dict(view.readable) if view else {}
    merged.update(routing)
    for key, value in routing.items():
        if value is None and view is not None and view.values.get(key) is not None:
            merged[key] = view.values[key]  # __post_init__ normalised a null
    for key in view.sub_configs if view else ():
        if isinstance(merged.get(key), dict):  # a config object the class built from it
            merged[key] = SubConfig(merged[key])
    return merged


def _config_view_origin(
    routing: dict[str, Any], level: str, view: ClassView | None
) -> dict[str, Provenance]:
    prefix = f"{level}." if level else ""
    origin: dict[str, Provenance] = {}
    if view is not None:
        for key in view.readable:
            origin[key] = Provenance(Origin.CLASS_DEFAULT, f"{view.class_name}.{key}")
    for key in routing:
        origin[key] = Provenance(Origin.CONFIG, f"{prefix}{key}")
    return origin


def _quantization(quant: QuantInfo | None) -> Sourced[str]:
    """The checkpoint's quantization scheme, with the file and key that declare it."""
    if quant is None:
        why = f"no quantization_config and no {HF_QUANT_CONFIG}: unquantized"
        return Sourced(None, Provenance(Origin.ABSENT, None, why))
    key = "quant_algo" if quant.algo else "quant_method"
    origin = Origin.QUANT_SIDECAR if quant.file == HF_QUANT_CONFIG else Origin.CONFIG
    return Sourced(quant.scheme, Provenance(origin, f"{quant.key}.{key}", quant.describe()))
