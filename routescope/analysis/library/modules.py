"""torch.nn.Module's view of its own tree: named_children, children, named_parameters,
parameters, named_modules, modules, as torch answers them from what the module registered
(setattr of a module or a Parameter registers it; a plain tensor attribute is not registered),
in registration order. What the engine cannot tell apart (a value an unread library made,
which may or may not be a module) is not listed, and the trace says which fields those were."""

from __future__ import annotations

from collections.abc import Iterator

from routescope.analysis.engine.bound import BoundOperation
from routescope.analysis.engine.containers import ListVal, TupleVal
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library.records import MODULE_BASES

TREE_METHODS = frozenset(
    {"named_children", "children", "named_parameters", "parameters", "named_modules", "modules"}
)
PARAMETER, BUFFER, MODULE = "parameter", "buffer", "module"  # what a torch call made
# torch.nn's own classes that hold other modules; every other torch.nn module holds none
# (Linear, Embedding, the norms, the activations, Dropout, the convolutions)
COMPOSITES = frozenset(
    f"torch.nn.{n}"
    for n in ("ModuleList", "ModuleDict", "Sequential", "MultiheadAttention", "Transformer",
              "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
              "TransformerDecoderLayer", "ParameterList", "ParameterDict")
)  # fmt: skip


def torch_module(name: str) -> bool:
    """A torch.nn class that makes a module (`torch.nn.Linear`), not a tensor or a function."""
    parts = name.split(".")
    return (
        len(parts) == 3
        and parts[:2] == ["torch", "nn"]
        and parts[2][:1].isupper()
        and parts[2] not in ("Parameter", "Buffer", "Module")
    )


def is_module(v: Value) -> bool:
    """An instance of a framework or library class derived from torch.nn.Module."""
    return (
        isinstance(v, Instance)
        and v.cls is not None
        and any(b in MODULE_BASES for b in v.cls.external_bases())
    )


class ModuleTree(BoundOperation):
    """`module.<one of TREE_METHODS>` of a torch.nn.Module subclass's instance, or of a value
    standing for a torch.nn module (Tensor.nn)."""

    def __init__(self, receiver: Value, name: str) -> None:
        super().__init__()
        self.receiver, self.name = receiver, name

    def call(self, st: PathState, args: list[Value]) -> Value:
        recurse = not (args and isinstance(args[0], Const) and args[0].value is False)
        if self._composite(st, self.receiver):
            return Unknown(
                f"{self.name}() of a module holding a torch.nn container (its items are not read)",
                kind=UnknownKind.OPAQUE,
            )
        if self.name in ("named_children", "children"):
            got: list[tuple[str, Value]] | None = list(self._children(st, self.receiver))
        elif self.name in ("named_parameters", "parameters"):
            got = self._parameters(st, self.receiver, "", recurse, 0)
        else:
            got = self._modules(st, self.receiver, "", 0)
        if got is None:
            return Unknown(
                f"{self.name}() of a module holding one torch builds (its own registered "
                "parameters are not read)",
                kind=UnknownKind.OPAQUE,
            )
        named = self.name.startswith("named_")
        return ListVal([TupleVal([Const(n), v]) if named else v for n, v in got])

    def _kind(self, v: Value) -> str | None:
        return v.nn if isinstance(v, Tensor) else None

    def _children(self, st: PathState, obj: Value) -> Iterator[tuple[str, Value]]:
        if not isinstance(obj, Instance):
            return  # a torch.nn leaf module holds none (a composite is not read: see call)
        for name, v in st.fields(obj).items():
            if is_module(v) or (isinstance(v, Tensor) and (self._kind(v) or "").startswith(MODULE)):
                yield name, v

    def _composite(self, st: PathState, obj: Value, depth: int = 0) -> bool:
        """Does the tree below `obj` hold a torch.nn module that holds others (a ModuleList)?"""
        kind = self._kind(obj) or ""
        if kind.startswith(MODULE):
            return kind.partition(":")[2] in COMPOSITES
        return depth > 16 or any(
            self._composite(st, c, depth + 1) for _, c in self._children(st, obj)
        )

    def _parameters(
        self, st: PathState, obj: Value, prefix: str, recurse: bool, depth: int
    ) -> list[tuple[str, Value]] | None:
        if not isinstance(obj, Instance):  # a torch.nn module: its own parameters not read
            return None
        out: list[tuple[str, Value]] = [
            (prefix + name, v)
            for name, v in st.fields(obj).items()
            if isinstance(v, Tensor) and self._kind(v) == PARAMETER
        ]
        if not recurse:
            return out
        if depth > 16:
            return None
        for name, child in self._children(st, obj):
            below = self._parameters(st, child, f"{prefix}{name}.", True, depth + 1)
            if below is None:
                return None
            out.extend(below)
        return out

    def _modules(
        self, st: PathState, obj: Value, prefix: str, depth: int
    ) -> list[tuple[str, Value]] | None:
        out: list[tuple[str, Value]] = [(prefix.rstrip("."), obj)]
        if not isinstance(obj, Instance):
            return out if depth > 0 else None
        if depth > 16:
            return None
        for name, child in self._children(st, obj):
            below = self._modules(st, child, f"{prefix}{name}.", depth + 1)
            if below is None:
                return None
            out.extend(below)
        return out
