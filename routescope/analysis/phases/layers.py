"""Which layer's MoE block is built and traced: the first MoE layer whose block builds the
framework's top-k router.

The first MoE layer is the first after the dense ones (`first_k_dense_replace`). A model may
route its first MoE layers otherwise (its first `num_hash_layers` take their experts from a
hash of the token id, with no top-k); where the block built there has no router on any way,
the next layers are built in turn, and a note says which layers route otherwise."""

from __future__ import annotations

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import ClassVal, Const, Instance, Unknown, UnknownKind, Value
from routescope.analysis.phases.block import build_block
from routescope.analysis.phases.model import ModelSite
from routescope.analysis.phases.notes import Notes
from routescope.analysis.phases.prefix import module_paths
from routescope.intake.spec import RoutingSpec

Built = list[tuple[PathState, Value, Value]]
NO_ROUTER = "the block built no router"
_FURTHER = 8  # layers tried past the first MoE one


def layer_values(
    engine: Engine,
    site: ModelSite,
    values: dict[str, Value],
    layer: int,
    read_paths: bool = True,
    origin: str = "first MoE layer",
) -> tuple[dict[str, Value], tuple[str, ...], str]:
    """The values a block at `layer` is built from (its index, its module path as the model
    builds it, else the made-up one; `read_paths` False: the made-up one), the module paths,
    and why they could not be read."""
    built_at, why = module_paths(engine, site, layer) if read_paths else ((), "")
    return (
        {
            **values,
            "layer_id": Const(layer, (origin,)),  # (as most SGLang layers name it)
            "layer_idx": Const(layer, (origin,)),  # (as hybrid models and transformers do)
            "prefix": Const(built_at[-1] if built_at else f"model.layers.{layer}.mlp"),
        },
        built_at,
        why,
    )


def first_moe_layer(spec: RoutingSpec) -> int:
    """The index of the model's first MoE layer, by the layer-pattern keys its config uses (the
    ones `num_moe_layers` counts by): a hybrid pattern's first 'E' (Nemotron-H), the first layer
    a per-layer list marks MoE, the first at or after `first_k_dense_replace` that
    `moe_layer_freq` keeps, the first `decoder_sparse_step` (or its aliases) makes sparse, the first
    `expert_layer_period` / `expert_layer_offset` give; 0 where none says."""
    view = spec.config_view
    pattern = view.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return pattern.index("E") if "E" in pattern else 0
    for key, mark in (("moe_layer_freq", None), ("layers_block_type", "moe")):
        marks = view.get(key)
        if isinstance(marks, list):
            hits = [i for i, m in enumerate(marks) if (m == mark if mark else bool(m))]
            return hits[0] if hits else 0
    first, freq = _index(spec.first_k_dense_replace.value), _index(view.get("moe_layer_freq"))
    if first is not None:
        step = freq if freq else 1
        return first + (-first) % step  # the first i >= first with i % step == 0
    keys = ("decoder_sparse_step", "moe_layer_frequency", "interleave_moe_layer_step")
    sparse = next((v for k in keys if (v := _index(view.get(k)))), None)
    if sparse is not None:
        skip = view.get("mlp_only_layers")
        dense = {i for i in skip if isinstance(i, int)} if isinstance(skip, list) else set()
        last = _index(spec.num_hidden_layers.value) or sparse * (len(dense) + 1)
        hits = [i for i in range(min(last, 100_000)) if (i + 1) % sparse == 0 and i not in dense]
        return hits[0] if hits else 0
    period, offset = (
        _index(view.get("expert_layer_period")),
        _index(view.get("expert_layer_offset")),
    )
    if period and offset is not None:
        return offset % period  # (Jamba: i % period == offset)
    return 0


def _index(v: object) -> int | None:
    """`v` where it is a layer index or count (a non-negative int, no bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def build_routing_layer(
    engine: Engine,
    site: ModelSite,
    values: dict[str, Value],
    built_at: tuple[str, ...],
    router_cls: ClassVal,
    notes: Notes,
    layer: int,
    layers: int | None,
) -> tuple[Built, int]:
    """The block built at `layer` (`values` and `built_at` made for it by layer_values); where
    no way through it built a router (and none stopped short), at the next layers in turn (up
    to `layers`, the model's count), and a note names those that route otherwise. The built
    block and the layer it was built at."""
    built = build_block(engine, site, values, router_cls, notes, built_at)
    if not _no_router(built):
        return built, layer
    last = layer + _FURTHER if layers is None else min(layer + _FURTHER, layers - 1)
    for at in range(layer + 1, last + 1):
        origin = "the first MoE layer whose block builds the router"
        more, paths, _ = layer_values(engine, site, values, at, origin=origin)
        scratch = Notes()  # what the tries say of themselves is left out
        got = build_block(engine, site, more, router_cls, scratch, paths)
        if not _no_router(got):
            notes.extend(scratch)
            notes.append(
                f"layers {layer}..{at - 1} build {site.block_class.qualname} without "
                f"{router_cls.qualname} (they choose their experts otherwise: no top-k to "
                f"route, and none for OEA to change there); layer {at} is the first MoE "
                "layer that builds it, and the one traced"
            )
            return got, at
    return built, layer


def _no_router(built: Built) -> bool:
    """Whether every way through building the block ended with no router (not for want of
    steps)."""
    return bool(built) and all(
        not isinstance(r, Instance)
        and isinstance(r, Unknown)
        and r.kind is UnknownKind.UNSUPPORTED
        and r.reason == NO_ROUTER
        and not s.stopped
        for s, _b, r in built
    )
