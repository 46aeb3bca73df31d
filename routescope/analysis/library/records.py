"""Record types as libraries define them: dataclasses and msgspec Structs.

A record class declares its fields with annotations in its body (the engine marks each with a
`__field__<name>` attribute, in order). This module answers what the reflection functions of
`dataclasses`, `msgspec` and `typing` return for such classes, and builds the classes
`msgspec.defstruct` makes at run time, so framework code that assembles its configuration
reflectively (a server-argument class built from namespace Structs) reads as it runs.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from routescope.analysis.engine.containers import (
    DictVal,
    InstanceDict,
    ListVal,
    SetVal,
    TupleVal,
    new_tuple,
    str_dict,
)
from routescope.analysis.engine.contents import FIELD, entries, field_names, seq_items
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    FunctionVal,
    Instance,
    Unknown,
    UnknownKind,
    Value,
    raises,
)
from routescope.analysis.library.nn_module import MODULE_ATTRS, MODULE_BASES, MODULE_PRIVATE

if TYPE_CHECKING:
    from routescope.analysis.engine.state import PathState

STRUCT_BASES = {"msgspec.Struct", "msgspec.structs.Struct"}
NODEFAULT = "msgspec.NODEFAULT"
MISSING = "dataclasses.MISSING"


def is_struct(cls: ClassVal) -> bool:
    return any(b in STRUCT_BASES for b in cls.external_bases())


# external bases whose attributes are known: none beyond dunders, or the listed ones
_CLOSED = {
    "abc.ABC": frozenset(),
    "typing.Generic": frozenset(),
    "object": frozenset(),
    **{b: frozenset() for b in STRUCT_BASES},
    **{b: MODULE_ATTRS for b in MODULE_BASES},
}


def closed_attributes(cls: ClassVal, name: str) -> bool:
    """Whether `cls`'s external bases are known to give its instances no attribute `name`
    (msgspec.Struct and abc.ABC define only dunders; torch.nn.Module its listed methods): a
    lookup that the class and the instance's fields do not answer raises AttributeError."""
    if name.startswith("__"):
        return False
    bases = cls.external_bases()
    if name in MODULE_PRIVATE and any(b in MODULE_BASES for b in bases):
        return False  # nn.Module's private bookkeeping (_parameters, _modules, ...)
    return all(b in _CLOSED and name not in _CLOSED[b] for b in bases)


# a class decorator that is itself declared with typing's dataclass_transform (PEP 681) makes a
# dataclass-like class, whatever it calls inside (a pydantic dataclass behind a helper)
TRANSFORM = "dataclass_transform"


def is_dataclass(cls: ClassVal) -> bool:
    return any(d.endswith(("dataclass", TRANSFORM)) for c in cls.mro() for d in c.decorators)


def is_record(cls: ClassVal) -> bool:
    return is_struct(cls) or is_dataclass(cls) or "__record_fields__" in cls.attrs


# the class attribute marking a field whose default pydantic validates (validate_default=True)
VALIDATE_DEFAULT = "__validate_default__"
INIT = "__field_init__"  # the class attribute keeping a field's `init=` (False: no parameter)


class FieldDefault(Value):
    """What `msgspec.field(...)` / `dataclasses.field(...)` returns: a field's default or its
    default factory, picked up by the class (or `defstruct`) that declares the field."""

    def __init__(
        self,
        default: Value | None,
        factory: Value | None,
        validate: bool = False,
        init: Value | None = None,
    ) -> None:
        super().__init__()
        self.default = None if _missing(default) else default  # MISSING: none given
        self.factory = None if _missing(factory) else factory
        self.validate = validate  # pydantic's validate_default: its validators see the default
        self.init = init  # field(init=False): not a parameter of the class's __init__

    def read(self, name: str) -> Value:
        """An attribute of the Field object (a helper that copies a field: `.init`,
        `.default`, `.default_factory`); MISSING where none was given, as dataclasses says."""
        if name == "init":
            return self.init if self.init is not None else Const(True)
        if name == "default":
            return self.default if self.default is not None else External(MISSING)
        if name == "default_factory":
            return self.factory if self.factory is not None else External(MISSING)
        return Unknown(f"attribute {name} of a dataclass Field", kind=UnknownKind.UNSUPPORTED)


def _missing(v: Value | None) -> bool:
    return isinstance(v, External) and v.name in (MISSING, NODEFAULT)


def has_default(spec: FieldDefault) -> bool:
    """Whether a field spec gives a plain default (not MISSING, no default factory)."""
    d = spec.default
    return (
        spec.factory is None
        and d is not None
        and not (isinstance(d, External) and d.name in (MISSING, NODEFAULT))
    )


def _evaluated(cls: ClassVal, name: str) -> Value:
    """A field's annotation when it is already a value (defstruct's), else Unknown."""
    for c in cls.mro():
        ann = c.annotations.get(name)
        if isinstance(ann, Value):
            return ann
    return Unknown(f"annotation of {name}", kind=UnknownKind.OPAQUE)


def _field_info(cls: ClassVal, name: str, sentinel: str) -> Instance:
    default = cls.lookup(name)
    factory: Value = External(sentinel)
    init: Value = cls.lookup(f"{INIT}{name}") or Const(True)
    if isinstance(default, FieldDefault):
        factory = default.factory or External(sentinel)
        default = default.default
    if default is None or isinstance(default, FunctionVal):
        default = External(sentinel)
    return Instance(
        None,
        {
            "name": Const(name),
            "default": default,
            "default_factory": factory,
            "type": _evaluated(cls, name),
            "metadata": Unknown("field metadata", kind=UnknownKind.OPAQUE),
            "init": init,
            "encode_name": Const(name),
        },
        "FieldInfo",
    )


# pydantic's field specifier: `x: int = Field(default=1, ge=1)` declares the field's default
FIELD_SPECIFIERS = ("pydantic.Field", "pydantic.fields.Field")

TYPE_HINTS = frozenset({"typing.get_type_hints", "typing_extensions.get_type_hints"})
ANNOTATED = frozenset({"typing.Annotated", "typing_extensions.Annotated"})

# The calls `call` answers: the engine asks only for these names.
NAMES = frozenset(
    {
        "msgspec.field",
        "dataclasses.field",
        *FIELD_SPECIFIERS,
        "msgspec.structs.fields",
        "dataclasses.fields",
        "dataclasses.is_dataclass",
        "dataclasses.asdict",
        "msgspec.defstruct",
        "vars",
        "issubclass",
    }
)


def call(
    name: str, args: list[Value], kwargs: dict[str, Value], st: PathState, module: str = ""
) -> Value | None:
    """The value of a record-library call, or None when `name` is not one of them."""
    if name in ("msgspec.field", "dataclasses.field", *FIELD_SPECIFIERS):
        default = kwargs.get("default", args[0] if args and name in FIELD_SPECIFIERS else None)
        factory = kwargs.get("default_factory")
        check = kwargs.get("validate_default")
        validate = isinstance(check, Const) and check.value is True
        return FieldDefault(default, factory, validate, kwargs.get("init"))
    if name in ("msgspec.structs.fields", "dataclasses.fields") and len(args) == 1:
        target = args[0]
        cls = target.cls if isinstance(target, Instance) else target
        if not isinstance(cls, ClassVal):
            return (
                None
                if not isinstance(cls, (Const,))
                else Unknown(f"{name}() of a value", kind=UnknownKind.UNSUPPORTED)
            )
        sentinel = NODEFAULT if name.startswith("msgspec") else MISSING
        infos = [_field_info(cls, n, sentinel) for n in field_names(cls)]
        return new_tuple(infos)
    if name == "dataclasses.asdict" and len(args) == 1 and not kwargs:
        return as_dict(st, args[0], 4)
    if name == "dataclasses.is_dataclass" and len(args) == 1:
        target = args[0]
        if isinstance(target, Instance) and target.cls is not None:
            return Const(is_dataclass(target.cls))
        if isinstance(target, ClassVal):
            return Const(is_dataclass(target))
        if isinstance(target, (Const, ListVal, TupleVal, DictVal, SetVal)) or (
            isinstance(target, Instance) and target.cls is None
        ):
            return Const(False)
        return None
    if name in ("typing.get_type_hints", "typing_extensions.get_type_hints") and args:
        cls = args[0]
        if isinstance(cls, ClassVal):
            return str_dict(
                {
                    n: Unknown(f"annotation of {n}", kind=UnknownKind.OPAQUE)
                    for n in field_names(cls)
                }
            )
        return None
    if name == "msgspec.defstruct" and args:
        return defstruct(args, kwargs, st, module)
    if name == "vars" and len(args) == 1:
        target = args[0]
        if isinstance(target, ClassVal):
            return class_vars(target)
        if isinstance(target, Instance) and target.cls is not None:
            return str_dict(dict(st.fields(target)))
        return None
    if name == "issubclass" and len(args) == 2 and isinstance(args[0], ClassVal):
        return _issubclass(args[0], args[1])
    return None


def _issubclass(sub: ClassVal, sup: Value) -> Value:
    targets = list(sup.items) if isinstance(sup, TupleVal) else [sup]
    mro = sub.mro()
    for t in targets:
        if isinstance(t, ClassVal) and t in mro:
            return Const(True)
        if isinstance(t, External) and (
            t.name == "object"
            or t.name in sub.external_bases()
            or (t.name in STRUCT_BASES and is_struct(sub))
        ):
            return Const(True)
        if not isinstance(t, (ClassVal, External)):
            return Unknown("issubclass() against an unknown class", kind=UnknownKind.UNSUPPORTED)
    # a base from outside the framework may reach an outside class through its own bases (never
    # a framework class); an unknown base may reach anything
    plain = ("object", "typing.Generic")
    outside = [
        b
        for c in mro
        for b in c.bases
        if not isinstance(b, ClassVal) and not (isinstance(b, External) and b.name in plain)
    ]
    if any(not isinstance(b, External) for b in outside) or (
        outside and any(isinstance(t, External) for t in targets)
    ):
        return Unknown(
            "issubclass() through a base routescope does not read", kind=UnknownKind.UNSUPPORTED
        )
    return Const(False)


def defstruct(args: list[Value], kwargs: dict[str, Value], st: PathState, module: str) -> Value:
    """`msgspec.defstruct(name, fields, *, bases=None, module=None, namespace=None, ...)`."""
    name = args[0]
    fields = args[1] if len(args) > 1 else kwargs.get("fields")
    if not isinstance(name, Const) or fields is None:
        return Unknown("msgspec.defstruct() of unknown arguments", kind=UnknownKind.UNSUPPORTED)
    items = seq_items(st, fields)
    if items is None and isinstance(fields, Const) and isinstance(fields.value, (list, tuple)):
        items = [Const(x) for x in fields.value]
    if items is None:
        return Unknown("msgspec.defstruct() of an unknown field list", kind=UnknownKind.UNSUPPORTED)
    attrs: dict[str, Value] = {}
    annotations: dict[str, ast.expr | Value] = {}
    ns = kwargs.get("namespace")
    if isinstance(ns, DictVal):
        e = entries(st, ns)
        if not e.closed() or not all(isinstance(k, str) for k in e.items):
            return Unknown(
                "msgspec.defstruct() namespace with unknown keys", kind=UnknownKind.UNSUPPORTED
            )
        for key, (_kv, v) in e.items.items():
            attrs[str(key)] = v
    elif ns is not None and not (isinstance(ns, Const) and ns.value is None):
        return Unknown("msgspec.defstruct() of an unknown namespace", kind=UnknownKind.UNSUPPORTED)
    for item in items:
        parts = _parts(item, st)
        if parts is None or not parts or not isinstance(parts[0], Const):
            return Unknown(
                "msgspec.defstruct() field of unknown shape", kind=UnknownKind.UNSUPPORTED
            )
        fname = str(parts[0].value)
        attrs[f"{FIELD}{fname}"] = Const(fname)
        if len(parts) >= 2:
            annotations[fname] = parts[1]
        if len(parts) >= 3:
            attrs[fname] = parts[2]
        else:
            attrs.pop(fname, None)  # a required field: the namespace's slot is not a default
    if isinstance(kwargs.get("dict"), Const) and kwargs["dict"].value is True:  # type: ignore[attr-defined]
        attrs["__struct_dict__"] = Const(True)  # instances keep other attributes in a __dict__
    bases: tuple[Value, ...] = (External("msgspec.Struct"),)
    given = kwargs.get("bases")
    extra = seq_items(st, given) if given is not None else []
    if extra:
        bases = (*extra, *bases)
    where = kwargs.get("module")
    home = str(where.value) if isinstance(where, Const) and where.value else module or "msgspec"
    return ClassVal(f"{home}:{name.value}", None, None, bases, attrs, annotations=annotations)


def _parts(item: Value, st: PathState) -> list[Value] | None:
    if isinstance(item, Const):
        if isinstance(item.value, str):
            return [item]
        if isinstance(item.value, tuple):
            return [Const(x) for x in item.value]
        return None
    return seq_items(st, item)


def class_attribute(cls: ClassVal, name: str) -> Value | None:
    """`__dict__` of a class, as the engine keeps it (the engine answers `__annotations__`)."""
    if name == "__dict__":
        return class_vars(cls)
    return None


def class_vars(cls: ClassVal) -> Value:
    """`vars(cls)`: the class's own attributes (the engine's field markers left out)."""
    return str_dict({k: v for k, v in cls.attrs.items() if not k.startswith(FIELD)})


def instance_dict(obj: Instance, cls: ClassVal, fields: dict[str, Value]) -> Value:
    """`obj.__dict__` (read): its attributes, as a dict whose changes are the object's (see
    InstanceDict); a msgspec Struct keeps its fields in slots and has a __dict__ only when made
    with dict=True, holding what is not a field."""
    if not is_struct(cls):
        return InstanceDict(str_dict(dict(fields)).base, obj)
    if cls.lookup("__struct_dict__") is None:
        return Unknown(f"{cls.qualname} has no __dict__", kind=UnknownKind.ABSENT)
    names = set(field_names(cls))
    return str_dict({k: v for k, v in fields.items() if k not in names})


def as_dict(st: PathState, v: Value, depth: int) -> Value:
    """dataclasses.asdict: a dataclass instance as a new dict of its fields in order, the
    dataclasses among their values converted too (to `depth`); a TypeError for anything else."""
    if not (isinstance(v, Instance) and v.cls is not None and is_dataclass(v.cls)):
        if isinstance(v, (Const, ListVal, TupleVal, DictVal, SetVal, ClassVal)):
            return raises("TypeError", "asdict() should be called on dataclass instances")
        return Unknown("asdict() of an unknown value", kind=UnknownKind.UNSUPPORTED)
    fields = st.fields(v)
    names = field_names(v.cls)
    if depth <= 0 or any(n not in fields for n in names):
        return Unknown("asdict() of a dataclass not fully built", kind=UnknownKind.UNSUPPORTED)
    out: dict[str, Value] = {}
    for n in names:
        f = fields[n]
        nested = isinstance(f, Instance) and f.cls is not None and is_dataclass(f.cls)
        out[n] = as_dict(st, f, depth - 1) if nested else f
    return str_dict(out)
