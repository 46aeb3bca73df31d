"""torch.nn.Module's view of its own tree: named_children, children, named_parameters,
parameters, named_modules, modules, as torch answers them from what the module registered
(setattr of a module or a Parameter registers it; a plain tensor attribute is not registered),
in registration order. A field the engine cannot tell apart (a value an unread library made,
which may or may not be a module) is taken as neither, and listed among the answer's
assumptions; a torch.nn container, or a torch.nn module's parameters torch's class does not
say, make the answer unknown."""

from __future__ import annotations

from collections.abc import Iterator

from routescope.analysis.engine.bound import BoundOperation
from routescope.analysis.engine.containers import DictVal, ListVal, SetVal, TupleVal
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.sinks import producer_of, role_of
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.tensors import TENSOR_BASES
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library.nn_module import MODULE_BASES

TREE_METHODS = frozenset(
    {"named_children", "children", "named_parameters", "parameters", "named_modules", "modules"}
)
PARAMETER, BUFFER, MODULE = "parameter", "buffer", "module"  # what a torch call made
# library bases whose ancestry holds no torch class (a plain object's class)
PLAIN_BASES = frozenset({"abc.ABC", "object", "typing.Generic"})
# torch.nn's own classes that hold other modules; every other torch.nn module holds none
# (Linear, Embedding, the norms, the activations, Dropout, the convolutions)
COMPOSITES = frozenset(
    f"torch.nn.{n}"
    for n in ("ModuleList", "ModuleDict", "Sequential", "MultiheadAttention", "Transformer",
              "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
              "TransformerDecoderLayer", "ParameterList", "ParameterDict")
)  # fmt: skip


# torch.nn classes that hold no parameters of their own (activations, dropout, identity)
NO_PARAMETERS = frozenset(
    f"torch.nn.{n}"
    for n in ("SiLU", "GELU", "ReLU", "Tanh", "Sigmoid", "Softmax", "Identity", "Dropout",
              "Mish", "LeakyReLU", "ELU", "Hardswish", "Softplus")
)  # fmt: skip


def module_members(
    name: str, args: list[Value], kwargs: dict[str, Value]
) -> tuple[tuple[str, Tensor], ...] | None:
    """The parameters a torch.nn module makes, as torch's class makes them: Linear(in, out,
    bias=True) a weight of shape (out, in) and a bias (out,), Embedding(n, dim) a weight
    (n, dim), a parameterless module none; None for any other (not read)."""
    if name in NO_PARAMETERS:
        return ()

    def arg(i: int, key: str, default: Value | None = None) -> Value | None:
        return args[i] if len(args) > i else kwargs.get(key, default)

    if name == "torch.nn.Linear":
        n_in, n_out, bias = (
            arg(0, "in_features"),
            arg(1, "out_features"),
            arg(2, "bias", Const(True)),
        )
        if n_in is None or n_out is None or not isinstance(bias, Const):
            return None
        weight = _parameter((n_out, n_in))
        return (("weight", weight), ("bias", _parameter((n_out,)))) if bias.value else (
            ("weight", weight),)  # fmt: skip
    if name == "torch.nn.Embedding":
        n, dim = arg(0, "num_embeddings"), arg(1, "embedding_dim")
        return None if n is None or dim is None else (("weight", _parameter((n, dim))),)
    return None


def _parameter(shape: tuple[Value, ...]) -> Tensor:
    made = Tensor(shape, contiguous=True)
    made.nn = PARAMETER
    return made


def torch_module_call(st: PathState, fn: Tensor, args: list[Value], made_at: object) -> Tensor:
    """Calling a torch.nn module: an op on its inputs and its own parameters (a Linear of the
    router's scores, or whose weight is the gate, gives scores); a Linear's output has its
    input's leading sizes and its out_features."""
    inputs = [*args, *(t for _, t in fn.members or ())]
    out = Tensor(producer=producer_of(inputs, st.claims), made_at=made_at, role=role_of(inputs))
    x = args[0] if args else None
    weight = dict(fn.members or ()).get("weight")
    linear = (fn.nn or "").endswith(":torch.nn.Linear")
    if linear and isinstance(x, Tensor) and x.shape and weight is not None and weight.shape:
        out.shape = (*x.shape[:-1], weight.shape[0])
    return out


def torch_module(name: str) -> bool:
    """A torch.nn class that makes a module (`torch.nn.Linear`), not a tensor or a function."""
    parts = name.split(".")
    return (
        len(parts) == 3
        and parts[:2] == ["torch", "nn"]
        and parts[2][:1].isupper()
        and parts[2] not in ("Parameter", "Buffer", "Module")
        and not parts[2].startswith("Uninitialized")  # (UninitializedParameter/Buffer)
    )


def is_module(v: Value) -> bool:
    """An instance of a framework or library class derived from torch.nn.Module."""
    return (
        isinstance(v, Instance)
        and v.cls is not None
        and any(b in MODULE_BASES for b in v.cls.external_bases())
    )


def _told(v: Value) -> bool:
    """Is `v` known to be a module, a parameter or buffer, or neither? (A plain tensor, a
    constant, a container, a config, a function or class, an object of a class that is a
    module or whose library bases are plain are; a value an unread library made is not.)"""
    if isinstance(
        v, (Const, ListVal, TupleVal, DictVal, SetVal, FunctionVal, ClassVal, EnumMember)
    ):
        return True
    if isinstance(v, Tensor):
        return True  # (made by torch: what it is was recorded, Tensor.nn)
    if isinstance(v, Instance):
        if v.cls is None:
            return v.label in ("config", "object") or v.label is None  # (rules' namespaces)
        bases = v.cls.external_bases()
        if any(b in TENSOR_BASES for b in bases):
            return False  # a framework Parameter subclass: a parameter, not read as one
        return is_module(v) or all(b in PLAIN_BASES for b in bases)
    return False


class ModuleTree(BoundOperation):
    """`module.<one of TREE_METHODS>` of a torch.nn.Module subclass's instance, or of a value
    standing for a torch.nn module (Tensor.nn)."""

    def __init__(self, receiver: Value, name: str, facts: Facts) -> None:
        super().__init__()
        self.receiver, self.name, self.facts = receiver, name, facts

    def call(self, st: PathState, args: list[Value]) -> Value:
        return self.call_with(st, args, {})

    def call_with(self, st: PathState, args: list[Value], kwargs: dict[str, Value]) -> Value:
        flag = kwargs.get("recurse", args[0] if args and self.name != "named_modules" else None)
        if any(k not in ("recurse",) for k in kwargs) or (
            flag is not None and not (isinstance(flag, Const) and isinstance(flag.value, bool))
        ):  # a prefix, remove_duplicate=False, an unknown flag: not modelled
            return Unknown(f"{self.name}() with these arguments", kind=UnknownKind.UNSUPPORTED)
        recurse = not (isinstance(flag, Const) and flag.value is False)
        whole = self.name not in ("named_children", "children") and recurse
        for field in self._unsure(st, self.receiver, whole):
            # a value code routescope does not read made: torch registers it only if it is a
            # module (or a Parameter); taken as neither, and said among the assumptions
            self.facts.assume("module field", field, "not a module or parameter (made by code "
                              "routescope does not read)", "routescope")  # fmt: skip
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

    def _unsure(self, st: PathState, obj: Value, whole: bool, depth: int = 0) -> list[str]:
        """The fields of `obj` (`whole`: in the tree below it) that may or may not be a module
        or a parameter (a value an unread library made, an object of a class with an unread
        base), as `Owner.field`."""
        if not isinstance(obj, Instance) or depth > 16:
            return []
        owner = obj.cls.qualname.rpartition(":")[2] if obj.cls else "object"
        out = [f"{owner}.{name}" for name, v in st.fields(obj).items() if not _told(v)]
        for _, child in self._children(st, obj) if whole else ():
            out += self._unsure(st, child, whole, depth + 1)
        return out

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
        if not isinstance(obj, Instance):  # a torch.nn module: its own, where torch says them
            members = obj.members if isinstance(obj, Tensor) else None
            return None if members is None else [(prefix + n, t) for n, t in members]
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
