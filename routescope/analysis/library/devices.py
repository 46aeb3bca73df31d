"""torch.device as the code that builds a model reads it: `torch.device("cuda:1")`, the default
device (`torch.get_default_device()`), and `with device:`, which makes a device the default
for the block it opens (torch/utils/_device.py DeviceContext).

A device is an object with a `type` (a string: "cuda", "cpu", "meta", ...) and an `index` (an
int, or None), made here as torch makes it, labelled with torch's class: isinstance() against
torch.device holds, and two devices compare by type and index, as torch.device.__eq__ does.
The default device is what the engine was told (`Engine.default_device`: the rules' model
loader builds the model inside `with target_device:`) or what an enclosing `with device:`
made it; anywhere else it is a device of unknown type."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Instance, Unknown, UnknownKind, Value
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase

DEVICE = "torch.device"
# what torch.device() parses: "type" or "type:index" (c10/core/Device.cpp, Device::Device)
_SPEC = re.compile(r"([a-z_]+)(?::(\d+))?")


def make_device(kind: Value, index: Value) -> Instance:
    return Instance(None, {"type": kind, "index": index}, DEVICE)


def is_device(v: Value) -> bool:
    return isinstance(v, Instance) and v.cls is None and v.label == DEVICE


def unknown_device(why: str) -> Instance:
    return make_device(
        Unknown(f"the type of {why}", kind=UnknownKind.OPAQUE),
        Unknown(f"the index of {why}", kind=UnknownKind.OPAQUE),
    )


def device_of(st: PathState, spec: Value, index: Value | None) -> Instance:
    """torch.device(spec[, index]) as torch makes it (a device of unknown type where the
    argument is not a string or device this path knows)."""
    if is_device(spec) and index is None:
        fields = st.fields(spec)  # type: ignore[arg-type]
        return make_device(*(fields.get(k) or Unknown(k, kind=UnknownKind.OPAQUE)
                             for k in ("type", "index")))  # fmt: skip
    if isinstance(spec, Const) and isinstance(spec.value, str):
        m = _SPEC.fullmatch(spec.value)
        if m is not None:
            given = Const(int(m.group(2)), spec.origins) if m.group(2) else None
            if given is not None and index is not None:
                return unknown_device("a device given its index twice")  # (torch raises)
            at = given if given is not None else index
            return make_device(Const(m.group(1), spec.origins),
                               at if at is not None else Const(None, spec.origins))  # fmt: skip
    return unknown_device("a device made from a value routescope cannot tell")


def same_device(st: PathState, a: Value, b: Value) -> bool | None:
    """a == b for two devices: their types and indices, where this path knows them."""
    if not (is_device(a) and is_device(b)):
        return None
    fa, fb = st.fields(a), st.fields(b)  # type: ignore[arg-type]
    pairs = [(fa.get(k), fb.get(k)) for k in ("type", "index")]
    if all(isinstance(x, Const) and isinstance(y, Const) for x, y in pairs):
        return all(x.value == y.value for x, y in pairs)  # type: ignore[union-attr]
    return None


@models("torch.device")
def _device(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    spec = args[0] if args else kwargs.get("type")
    index = args[1] if len(args) > 1 else kwargs.get("index")
    if spec is None:
        return None
    return one(st, device_of(st, spec, index))


@models("torch.get_default_device")
def _default_device(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    told = eng.default_device
    return one(st, told if told is not None else unknown_device("the default device"))
