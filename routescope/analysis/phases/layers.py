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


def build_routing_layer(
    engine: Engine,
    site: ModelSite,
    values: dict[str, Value],
    built_at: tuple[str, ...],
    router_cls: ClassVal,
    notes: Notes,
    layer: int,
    layers: int | None,
    by_table: tuple[str, ...] = (),
) -> tuple[Built, int]:
    """The block built at `layer` (`values` and `built_at` made for it by layer_values); where
    no way through it built a router (and none stopped short), or every way built one that
    holds a token-id table (`by_table`, its attributes), at the next layers in turn (up to
    `layers`, the model's count), and a note names those that route otherwise. The built
    block and the layer it was built at."""
    built = build_block(engine, site, values, router_cls, notes, built_at)
    first = _otherwise(engine, built, by_table)
    if first is None:
        return built, layer
    last = layer + _FURTHER if layers is None else min(layer + _FURTHER, layers - 1)
    for at in range(layer + 1, last + 1):
        origin = "the first MoE layer whose block builds the router"
        more, paths, _ = layer_values(engine, site, values, at, origin=origin)
        scratch = Notes()  # what the tries say of themselves is left out
        got = build_block(engine, site, more, router_cls, scratch, paths)
        if _otherwise(engine, got, by_table) is None:
            notes.extend(scratch)
            how = (
                f"without {router_cls.qualname}"
                if not first
                else f"with a router that holds a table of experts by token id ({first})"
            )
            notes.append(
                f"layers {layer}..{at - 1} build {site.block_class.qualname} {how} (they "
                "choose their experts otherwise: no top-k to route, and none for OEA to change "
                f"there); layer {at} is the first MoE layer that builds a top-k router, and "
                "the one traced"
            )
            return got, at
    return built, layer


def _otherwise(engine: Engine, built: Built, by_table: tuple[str, ...]) -> str | None:
    """How every way through building the block routes otherwise: "" (no router), the table
    attribute every way's router holds, else None (it routes by top-k, or may)."""
    if _no_router(built):
        return ""
    for name in by_table:
        if built and all(_holds(engine, s, r, name) for s, _b, r in built):
            return name
    return None


def _holds(engine: Engine, st: PathState, router: Value, name: str) -> bool:
    """Whether `router` certainly holds a value in attribute `name` (not None, not unknown)."""
    if not isinstance(router, Instance) or st.stopped:
        return False
    got = engine.attribute(st.fork(), router, name, hook=False)
    return bool(got) and all(
        not isinstance(v, Unknown) and not (isinstance(v, Const) and v.value is None)
        for _, v in got
    )


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
