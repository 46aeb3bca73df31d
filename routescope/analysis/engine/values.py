"""Abstract values of the trace engine: one small hierarchy; Unknown is a value that flows."""

from __future__ import annotations

import ast
import enum
import itertools
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value came from: a config key, a GPU profile fact, an env default, a line."""

    text: str


class Value:
    """Base of every abstract value. `origins` names the facts the value was computed from."""

    __slots__ = ("origins",)
    never_none = False  # a callable that exists whatever the facts: `is None` of it is false

    def __init__(self, origins: tuple[str, ...] = ()) -> None:
        self.origins = origins

    def with_origin(self, *more: str) -> Value:
        return self


class Const(Value):
    """A known Python value (int, float, str, bool, None, tuple of knowns)."""

    __slots__ = ("value",)

    def __init__(self, value: Any, origins: tuple[str, ...] = ()) -> None:
        self.origins = origins  # (Value.__init__'s one line, without the call: the commonest value)
        self.value = value

    def with_origin(self, *more: str) -> Const:
        return Const(self.value, self.origins + more)

    def __repr__(self) -> str:
        return f"Const({self.value!r})"


# A mutable object's serial tells objects made during a computation from those made before it.
SERIALS = itertools.count(1)


class UnknownKind(enum.Enum):
    """Why a value is unknown. Decisions read the kind, never the wording of the reason."""

    INPUT = "input"  # a fact the deployment does not give (an env var, an argument, a config key)
    OPAQUE = "opaque"  # the result of code routescope does not read or model
    UNSUPPORTED = "unsupported"  # a construct the engine does not evaluate exactly
    JOINED = "joined"  # paths that disagree on it were joined: a consequence of an earlier fork
    LOOP = "loop"  # written by a loop whose trip count is not known
    BUDGET = "budget"  # a budget ended its evaluation
    ABSENT = "absent"  # a lookup Python answers with AttributeError / NameError (not there)
    RAISED = "raised"  # the value of an expression whose evaluation raised


class Unknown(Value):
    """A value the facts cannot decide: why (its kind), in words (shown when it decides a
    branch), and the facts it came from.

    `truthy` is set when only the truthiness is known (an f-string with literal text)."""

    __slots__ = ("exc", "kind", "maybe", "not_none", "reason", "serial", "then", "truthy")

    def __init__(
        self,
        reason: str,
        origins: tuple[str, ...] = (),
        truthy: bool | None = None,
        kind: UnknownKind = UnknownKind.OPAQUE,
        exc: str | Value | None = None,
    ) -> None:
        super().__init__(origins)
        self.reason = reason
        self.truthy = truthy
        self.kind = kind
        # it stands for a value that existed when it was made (not a later object() sentinel)
        self.serial = next(SERIALS)
        # RAISED by a builtin operation: the exception class Python raises there (the
        # expression that made it raises it: see ExprMixin.ev); `maybe`: it raises it or gives
        # an unknown value, depending on what the facts do not tell
        self.exc = exc
        self.maybe = False
        self.then: Value | None = None  # `maybe`: what the way that goes on gives, if known
        self.not_none = False  # known not None, nothing else (joined where none held None)

    def __repr__(self) -> str:
        return f"Unknown({self.reason!r})"


class AtLeast(Unknown):
    """An integer known only from below (the tokens in a decode batch: at least one), so
    comparisons with constants below the bound are decided."""

    __slots__ = ("low",)

    def __init__(self, low: int, reason: str, origins: tuple[str, ...] = ()) -> None:
        super().__init__(reason, origins, True if low > 0 else None, UnknownKind.INPUT)
        self.low = low


class Tensor(Value):
    """An abstract tensor: only the facts that guards look at, and which sink produced it
    (the first routing kernel that wrote it, directly or in place)."""

    __slots__ = ("contiguous", "dtype", "made_at", "members", "nn", "producer", "role", "shape")

    def __init__(
        self,
        shape: tuple[Value, ...] | None = None,
        dtype: str | None = None,
        producer: Any = None,
        made_at: Any = None,
        contiguous: bool = False,
        role: str | None = None,
    ) -> None:
        super().__init__()
        # "scores": computed from the router's inputs (its logits) without a top-k yet
        self.role = role
        self.shape = shape
        self.dtype = dtype
        self.contiguous = contiguous  # known to be laid out row-major (a fresh tensor)
        self.producer = producer
        # (function, file, line) of the framework code whose torch ops computed it, when no
        # routing kernel did: plain torch routing (a custom routing function) is still a sink
        self.made_at = made_at
        # what torch.nn made of it (library/modules.py): "parameter", "buffer", or
        # "module:torch.nn.Linear" for a value standing for a torch.nn module; None: a tensor
        self.nn: str | None = None
        # a torch.nn module's own parameters, by name, where torch's class says them (a
        # Linear's weight and bias); None when not known
        self.members: tuple[tuple[str, Tensor], ...] | None = None

    def __repr__(self) -> str:
        return f"Tensor({self.shape}, {self.dtype})"


class External(Value):
    """A name from outside the framework tree (torch.topk, a kernel library's op)."""

    __slots__ = ("name",)

    def __init__(self, name: str, origins: tuple[str, ...] = ()) -> None:
        super().__init__(origins)
        self.name = name

    def __repr__(self) -> str:
        return f"External({self.name})"


class ExternalModule(External):
    """A module from outside the framework tree, as an import gives it (a module is true)."""

    __slots__ = ()


class PythonRaise(External):
    """A builtin exception Python itself raises from an operation on values the facts decide
    (`None.get_name()`, a known dict's missing key): as certain as a `raise` statement, with
    the message Python's own would carry in substance."""

    __slots__ = ("message",)

    def __init__(self, name: str, message: str) -> None:
        super().__init__(name)
        self.message = message

    def __repr__(self) -> str:
        return f"PythonRaise({self.name}: {self.message})"


@dataclass(eq=False)
class ModuleVal(Value):
    name: str
    globals: dict[str, Value] = field(default_factory=dict)
    relpath: str = ""
    error: Value | None = None  # the exception its body raised: importing it raises that

    def __post_init__(self) -> None:
        Value.__init__(self)

    def __repr__(self) -> str:
        return f"ModuleVal({self.name})"


@dataclass(eq=False)
class FunctionVal(Value):
    """A framework function or method; `bound` is the receiver of a bound method."""

    qualname: str  # "sglang.srt.layers.moe.topk:select_experts"
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    module: ModuleVal
    decorators: tuple[str, ...] = ()
    bound: Value | None = None
    owner: ClassVal | None = None
    closure: dict[str, Value] | None = None
    # a nested function's parameter defaults, evaluated where it was defined (as Python does)
    defaults: dict[str, Value] | None = None

    def __post_init__(self) -> None:
        Value.__init__(self)

    def __repr__(self) -> str:
        return f"FunctionVal({self.qualname})"

    def bind(self, receiver: Value) -> FunctionVal:
        return FunctionVal(
            self.qualname,
            self.node,
            self.module,
            self.decorators,
            receiver,
            self.owner,
            self.closure,
            self.defaults,
        )


@dataclass(eq=False)
class ClassVal(Value):
    qualname: str
    node: ast.ClassDef | None
    module: ModuleVal | None
    bases: tuple[Value, ...] = ()
    attrs: dict[str, Value] = field(default_factory=dict)
    decorators: tuple[str, ...] = ()
    is_enum: bool = False
    # a field's annotation: its expression until typing.get_type_hints asks, then its value
    annotations: dict[str, ast.expr | Value] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Value.__init__(self)
        self.serial = next(SERIALS)

    def __repr__(self) -> str:
        return f"ClassVal({self.qualname})"

    def mro(self) -> list[ClassVal]:
        """The method resolution order over the framework's own classes: C3, as CPython
        linearises (bases from outside the framework are leaves, see external_bases)."""
        cached = self.__dict__.get("_mro")
        if cached is None:
            cached = self.__dict__["_mro"] = _c3(self)
        return list(cached)

    def lookup(self, name: str) -> Value | None:
        for c in self.mro():
            if name in c.attrs:
                return c.attrs[name]
        return None

    def external_bases(self) -> list[str]:
        return [b.name for c in self.mro() for b in c.bases if isinstance(b, External)]


def _c3(cls: ClassVal) -> list[ClassVal]:
    """C3 linearisation; a hierarchy CPython would reject (TypeError at class creation) falls
    back to depth-first order, first occurrence kept."""
    direct = [b for b in cls.bases if isinstance(b, ClassVal)]
    seqs = [b.mro() for b in direct] + [list(direct)]
    out = [cls]
    while any(seqs):
        seqs = [s for s in seqs if s]
        head = next((s[0] for s in seqs if not any(s[0] in rest[1:] for rest in seqs)), None)
        if head is None:
            rest = [c for s in seqs for c in s]
            return out + [c for i, c in enumerate(rest) if c not in rest[:i] and c not in out]
        out.append(head)
        seqs = [s[1:] if s[0] is head else s for s in seqs]
    return out


@dataclass(eq=False)
class Instance(Value):
    """An object: a framework class instance, a dataclass, a config, an enum member."""

    cls: ClassVal | None
    fields: dict[str, Value] = field(default_factory=dict)
    label: str = ""  # "config", "server_args"; shown in reasons

    def __post_init__(self) -> None:
        Value.__init__(self)
        self.serial = next(SERIALS)  # objects made after a serial are newer than it

    def __repr__(self) -> str:
        return f"Instance({self.label or (self.cls.qualname if self.cls else '?')})"


@dataclass(eq=False)
class EnumMember(Value):
    cls: ClassVal
    name: str
    value: Value

    def __post_init__(self) -> None:
        Value.__init__(self)

    def __repr__(self) -> str:
        return f"EnumMember({self.cls.qualname}.{self.name})"


_VALUED = frozenset({"enum.Flag", "enum.IntFlag", "enum.IntEnum", "enum.StrEnum", "int", "str"})


def truth(v: Value) -> bool | None:
    """Python truthiness where it is known; None when it is not."""
    if isinstance(v, Const):
        try:
            return bool(v.value)
        except Exception:
            return None
    if isinstance(v, Unknown):
        return v.truthy
    if isinstance(v, EnumMember):  # a Flag's, or an int or str enum's, member is true as its
        if v.cls.lookup("__bool__") is not None:  # value is; any other member is true
            return None  # (an enum of its own __bool__: not told)
        valued = any(b in _VALUED for b in v.cls.external_bases())
        return truth(v.value) if valued else True
    if isinstance(v, (FunctionVal, ClassVal, ModuleVal, ExternalModule)):
        return True
    if isinstance(v, Instance):
        if v.cls is None:  # an object the engine made (a config, a namespace, a Parameter):
            return True  # none defines __bool__ or __len__
        return (
            True if v.cls.lookup("__bool__") is None and v.cls.lookup("__len__") is None else None
        )
    return None


def describe(v: Value) -> str:
    if isinstance(v, Const):
        return repr(v.value)
    if isinstance(v, Unknown):
        return f"unknown ({v.reason})"
    if isinstance(v, External):
        return v.name
    if isinstance(v, FunctionVal):
        return v.qualname
    if isinstance(v, ClassVal):
        return f"class {v.qualname}"
    if isinstance(v, EnumMember):
        return f"{v.cls.qualname.split(':')[-1]}.{v.name}"
    if isinstance(v, Instance):
        return f"<{v.label or (v.cls.qualname if v.cls else 'object')}>"
    if isinstance(v, Tensor):
        return "tensor"
    if isinstance(v, ModuleVal):
        return f"module {v.name}"
    return getattr(v, "shown", None) or type(v).__name__  # (a kind defined elsewhere: its own)


def merge_origins(*vals: Value) -> tuple[str, ...]:
    """Every origin of `vals`, each once, in the order first seen (a dict keeps it: a list's
    membership test made merging two values of ~20 origins each a few hundred comparisons)."""
    if len(vals) == 1 and len(vals[0].origins) < 2 and type(vals[0].origins) is tuple:
        return vals[0].origins
    out: dict[str, None] = {}
    for v in vals:
        out.update(dict.fromkeys(v.origins))
    return tuple(out)


def unknown_from(reason: str, *vals: Value) -> Unknown:
    unknowns = [v for v in vals if isinstance(v, Unknown)]
    if unknowns:
        return Unknown(unknowns[0].reason, merge_origins(*vals), kind=unknowns[0].kind)
    return Unknown(reason, merge_origins(*vals), kind=UnknownKind.UNSUPPORTED)


def ordered(value: Any) -> Any:
    """A set's items in one fixed order (by repr): CPython iterates a set of strings in an
    order that changes with PYTHONHASHSEED, and a trace must not change with it."""
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value, key=repr))
    return value


def raises(exc: str | Value, why: str) -> Unknown:
    """The value of an expression that raises `exc` in Python: a builtin operation's (a
    builtin exception's name), or an exception value (a module whose import raised, read)."""
    return Unknown(why, kind=UnknownKind.RAISED, exc=exc)


def may_raise(exc: str, why: Unknown, then: Value | None = None) -> Unknown:
    """The value of a builtin operation whose operands the facts do not tell, that raises
    `exc` for some of them: the expression forks into a way that raises and a way that goes
    on with `then` where it is known (a key perhaps there: its value when it is), else `why`
    (an unknown value)."""
    out = Unknown(why.reason, why.origins, why.truthy, why.kind, exc)
    out.maybe = True
    out.then = then
    return out
