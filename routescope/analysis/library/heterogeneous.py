"""A heterogeneous transformers config: one whose layers differ from the global config in a
few attributes (transformers 5.x `HeterogeneousConfigMixin`, integrations/heterogeneity).

transformers keeps the differences in `config._heterogeneity_spec` (the overrides of each
layer that has any, and the attributes they name) and serialises them as `per_layer_config`,
keyed by the zero-padded layer index ("05": {"head_dim": 512}). Gemma 4 builds one from its
full-attention layers' head size. A framework reads it through:
- `config.per_layer_config`: a sequence of one config per layer (a copy of the global config
  with that layer's overrides and `skip`), also indexed by a layer type when every layer of
  the type has the same overrides (else ValueError); on a homogeneous config every item is
  the config itself;
- `config.is_heterogeneous`, `config.per_layer_attributes`;
- a global read of a per-layer attribute (`config.head_dim`), which transformers refuses
  (AmbiguousGlobalPerLayerAttributeError) unless `allow_global_per_layer_attribute_access` is
  set: unknown here, since a framework's config loading that routescope summarises may have
  flattened it (the value of the file is never given for it);
- `config.per_layer_config = None` (drops the spec) or a dict (a new spec, overrides equal to
  the global value dropped).
routescope's config objects are built from transformers' `to_dict()`; here the serialised
form becomes the spec again, and the reads above are answered as transformers answers them.
"""

from __future__ import annotations

from typing import Any

from routescope.analysis.engine.containers import (
    DictVal,
    KeyedTuple,
    ListVal,
    from_python,
    new_dict,
    new_set,
    str_dict,
)
from routescope.analysis.engine.contents import entries, iteration
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    Instance,
    Unknown,
    UnknownKind,
    Value,
    raises,
)

SPEC = "_heterogeneity_spec"  # where transformers keeps it (the config's __dict__)
SPEC_LABEL = "heterogeneity spec"
_PROPERTIES = frozenset({"per_layer_config", "is_heterogeneous", "per_layer_attributes"})
_ALLOW = "allow_global_per_layer_attribute_access"


def install(fields: dict[str, Value], serialised: Any, origin: str) -> dict[str, Value]:
    """`fields` of a config whose `to_dict()` held `serialised` as its per_layer_config: the
    spec in its place (an unreadable one leaves the spec unknown)."""
    fields.pop("per_layer_config", None)
    fields[SPEC] = _spec(serialised, origin)
    return fields


def _spec(overrides: Any, origin: str) -> Value:
    if not isinstance(overrides, dict) or not all(isinstance(v, dict) for v in overrides.values()):
        return Unknown(f"a per_layer_config routescope cannot read ({origin})",
                       kind=UnknownKind.INPUT)  # fmt: skip
    try:
        layers = {int(k): dict(v) for k, v in overrides.items()}
    except (TypeError, ValueError):
        return Unknown(f"per_layer_config keys that are no layer index ({origin})",
                       kind=UnknownKind.INPUT)  # fmt: skip
    for layer in layers.values():
        if "skip" in layer and isinstance(layer["skip"], (list, tuple, set)):
            layer["skip"] = sorted(set(layer["skip"]))
    named = sorted({a for layer in layers.values() for a in layer} - {"skip"})
    per_layer = {i: from_python(layer, (origin,)) for i, layer in sorted(layers.items())}
    return Instance(None, {
        "per_layer_overrides": new_dict((Const(i), v) for i, v in per_layer.items()),
        "per_layer_attributes": new_set(Const(a, (origin,)) for a in named),
        "explicit_per_layer_attributes": new_set(Const(a, (origin,)) for a in named),
    }, SPEC_LABEL)  # fmt: skip


def config_attribute(st: PathState, obj: Instance, name: str) -> Value | None:
    """`obj.name` where transformers' heterogeneity decides it; None: an ordinary read."""
    spec = st.field(obj, SPEC)
    if name not in _PROPERTIES:
        if not isinstance(spec, Instance) or name not in _attributes(st, spec):
            return None
        allow = st.field(obj, _ALLOW)
        if isinstance(allow, Const) and allow.value:
            return None  # (the global value, as asked)
        # transformers raises AmbiguousGlobalPerLayerAttributeError here; but a framework's
        # config loading that routescope takes as the file read (a summary) may have
        # flattened the attribute first (SGLang's get_config does for Gemma 4), so which
        # value, or whether the read raises, is not told
        return Unknown(f"config.{name}: a per-layer attribute of a heterogeneous config "
                       "(transformers refuses the global read unless the framework's "
                       "config loading flattened it)", kind=UnknownKind.INPUT)  # fmt: skip
    if spec is not None and not isinstance(spec, (Instance, Const)):
        return Unknown(f"config.{name} of a heterogeneous config routescope cannot read",
                       kind=UnknownKind.UNSUPPORTED)  # fmt: skip
    if name == "is_heterogeneous":
        return Const(isinstance(spec, Instance))
    if name == "per_layer_attributes":
        got = st.field(spec, name) if isinstance(spec, Instance) else None
        return got or Const(None)
    return _layer_configs(st, obj, spec if isinstance(spec, Instance) else None)


def setter(st: PathState, obj: Instance, name: str, value: Value) -> bool:
    """`obj.name = value` where it is transformers' per_layer_config setter (True: done)."""
    if name != "per_layer_config":
        return False
    if isinstance(value, Const) and value.value is None:
        st.write(obj, SPEC, Const(None))  # the config is homogeneous again
        return True
    plain = _plain_layers(st, value)
    fields = st.fields(obj)
    if plain is not None:  # transformers drops each override equal to the global value
        for layer in plain.values():
            for attr, v in list(layer.items()):
                if attr == "skip":
                    continue
                known = fields.get(attr)
                if isinstance(known, Const) and known.value == v:
                    del layer[attr]
                elif known is not None and not isinstance(known, Const):
                    plain = None  # (whether it is equal is not told)
                    break
            if plain is None:
                break
    if plain is not None:
        plain = {i: layer for i, layer in plain.items() if layer}
    st.write(obj, SPEC, _spec(plain, "per_layer_config as the framework sets it"))
    return True


def _plain_layers(st: PathState, value: Value) -> dict[Any, dict[str, Any]] | None:
    if not isinstance(value, DictVal):
        return None
    e = entries(st, value)
    if e.rest is not None:
        return None
    out: dict[Any, dict[str, Any]] = {}
    for key, item in e.items.values():
        if not isinstance(key, Const) or not isinstance(item, DictVal):
            return None
        inner = entries(st, item)
        if inner.rest is not None:
            return None
        layer: dict[str, Any] = {}
        for k, v in inner.items.values():
            if not isinstance(k, Const) or not isinstance(v, Const):
                return None
            layer[str(k.value)] = v.value
        out[key.value] = layer
    return out


def _attributes(st: PathState, spec: Instance) -> set[str]:
    got = st.field(spec, "per_layer_attributes")
    members = iteration(got, st) if got is not None else None
    return {m.value for m in members or () if isinstance(m, Const) and isinstance(m.value, str)}


def _layer_configs(st: PathState, obj: Instance, spec: Instance | None) -> Value:
    """transformers' _PerLayerConfigView: a config per layer, by index or by layer type."""
    n = st.field(obj, "num_hidden_layers")
    if not isinstance(n, Const) or type(n.value) is not int:
        return Unknown("per_layer_config of a config whose num_hidden_layers is not known",
                       kind=UnknownKind.INPUT)  # fmt: skip
    types_v = st.field(obj, "layer_types")
    types = iteration(types_v, st) if types_v is not None else None
    names = [t.value if isinstance(t, Const) else None for t in types or ()]
    if spec is None:  # homogeneous: every layer's config is the config itself
        layers: list[Value] = [obj] * n.value
        by_type: dict[str, Value] = {t: obj for t in names if isinstance(t, str)}
        return KeyedTuple(layers, by_type, _missing_type(names))
    overrides_v = st.field(spec, "per_layer_overrides")
    if not isinstance(overrides_v, DictVal) or entries(st, overrides_v).rest is not None:
        return Unknown("per-layer overrides routescope cannot read", kind=UnknownKind.UNSUPPORTED)
    overrides = {k.value: v for k, v in entries(st, overrides_v).items.values()
                 if isinstance(k, Const)}  # fmt: skip
    layers = [_layer_config(st, obj, overrides.get(i)) for i in range(n.value)]
    by_type = {}
    for t in dict.fromkeys(x for x in names if isinstance(x, str)):
        first = overrides.get(names.index(t))
        others = [_plain(st, overrides.get(i)) for i, x in enumerate(names) if x == t]
        if any(o is None for o in others):
            by_type[t] = Unknown(f"the overrides of the {t} layers", kind=UnknownKind.UNSUPPORTED)
        elif all(o == others[0] for o in others):
            by_type[t] = _layer_config(st, obj, first)
        else:  # (transformers: "Use an integer index to access a specific layer's config")
            by_type[t] = raises("ValueError", f"layer type {t!r} is not homogeneous across layers")
    return KeyedTuple(layers, by_type, _missing_type(names), copies=True)


def _plain(st: PathState, overrides: Value | None) -> dict[Any, Any] | None:
    """A layer's overrides as Python data ({} for none); None when not all known."""
    if overrides is None:
        return {}
    if not isinstance(overrides, DictVal) or entries(st, overrides).rest is not None:
        return None
    out: dict[Any, Any] = {}
    for k, v in entries(st, overrides).items.values():
        if not isinstance(k, Const) or not isinstance(v, Const):
            return None
        out[k.value] = v.value
    return out


def _missing_type(names: list[Any]) -> str:
    if not names:
        return "a layer type requested, but config.layer_types is not defined"
    return "a layer type not in config.layer_types"


def _layer_config(st: PathState, obj: Instance, overrides: Value | None) -> Value:
    """_get_layer_config: a shallow copy of the config without the spec, with the layer's
    overrides set and its `skip` (an empty list when it has none)."""
    fields = {k: v for k, v in st.fields(obj).items() if k != SPEC}
    fields["skip"] = ListVal([])
    if isinstance(overrides, DictVal):
        e = entries(st, overrides)
        if e.rest is not None:
            return Unknown("a layer's overrides routescope cannot read",
                           kind=UnknownKind.UNSUPPORTED)  # fmt: skip
        for k, v in e.items.values():
            if isinstance(k, Const) and isinstance(k.value, str):
                fields[k.value] = v
    return Instance(None, fields, "config")


def serialised(st: PathState, spec: Value) -> Value | None:
    """What `to_dict()` writes for the spec: per_layer_config keyed by zero-padded index."""
    if not isinstance(spec, Instance):
        return None
    overrides = st.field(spec, "per_layer_overrides")
    if not isinstance(overrides, DictVal):
        return Unknown("per-layer overrides routescope cannot read", kind=UnknownKind.UNSUPPORTED)
    e = entries(st, overrides)
    keys = [k.value for k, _ in e.items.values() if isinstance(k, Const)]
    width = len(str(max(keys))) if keys else 0
    return str_dict({str(k.value).zfill(width): v for k, v in e.items.values()
                     if isinstance(k, Const)})  # fmt: skip
