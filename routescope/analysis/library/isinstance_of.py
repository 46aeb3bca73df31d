"""isinstance() of a value against a class, a builtin type, an abstract base or a runtime-
checkable Protocol, as Python answers it (Unknown where the facts do not decide)."""

from __future__ import annotations

import collections.abc
from pathlib import PurePosixPath
from types import MappingProxyType

from routescope.analysis.engine.containers import (
    DictVal,
    ListVal,
    MappingProxy,
    SetVal,
    TupleVal,
)
from routescope.analysis.engine.tensors import DTYPES, Count
from routescope.analysis.engine.tensors import PARAMETER as PARAMETER_CLASSES
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library.modules import (
    COMPOSITES,
    MODULE,
    NO_PARAMETERS,
    PARAMETER,
    PLAIN_BASES,
    torch_module,
)
from routescope.analysis.library.nn_module import MODULE_BASES

_NN_BASES = MODULE_BASES | PARAMETER_CLASSES

# marker objects libraries define, with their classes: an instance of nothing else
SENTINELS = {
    "dataclasses.MISSING": "dataclasses._MISSING_TYPE",
    "msgspec.NODEFAULT": "msgspec._core.NoDefault",
    "msgspec.UNSET": "msgspec._core.UnsetType",
}


# another name of the same class
_ALIASES = {
    "torch.dtype": ("torch._C.dtype",),
    "pydantic_core.ArgsKwargs": ("pydantic_core._pydantic_core.ArgsKwargs",),
}

# objects the engine makes as a library would, labelled with the library's class (the
# arguments pydantic hands a dataclass's "before" model validator: engine/construct.py)
LIBRARY_INSTANCES = frozenset({"pydantic_core.ArgsKwargs", "torch.device"})  # (devices.py)


def _class_of_external(obj: Value) -> str | None:
    """The exact class of a library object routescope knows by name: a marker object, a
    torch dtype (`torch.bfloat16` is a torch.dtype, a final class), or an object the engine
    made as the library makes it; None for any other."""
    if isinstance(obj, Instance) and obj.cls is None and obj.label in LIBRARY_INSTANCES:
        return obj.label
    if not isinstance(obj, External):
        return None
    if obj.name in SENTINELS:
        return SENTINELS[obj.name]
    if obj.name.startswith("torch.") and obj.name[6:] in DTYPES:
        return "torch.dtype"
    return None


def isinstance_of(obj: Value, cls: Value) -> Value:
    """isinstance(obj, cls): a class or a tuple of them."""
    classes = cls.value if isinstance(cls, Const) and isinstance(cls.value, tuple) else None
    targets: list[Value] = [cls] if classes is None else [Const(c) for c in classes]
    if isinstance(cls, TupleVal):
        targets = list(cls.items)
    kind = _container_type(obj)
    own = _class_of_external(obj)
    if own is not None:  # a library object whose class is known (a marker, a torch dtype)
        if any(isinstance(t, External) and t.name in (own, *_ALIASES.get(own, ()), "object")
               for t in targets):  # fmt: skip
            return Const(True)
        if all((isinstance(t, ClassVal) and not _is_protocol(t)) or (isinstance(t, External)
               and not t.name.startswith(_ABSTRACT_NAMESPACES)) for t in targets):  # fmt: skip
            return Const(False)  # a final class, none of these (nor an abstract base)
        return Unknown(f"isinstance of a {own} against an abstract class",
                       kind=UnknownKind.UNSUPPORTED)  # fmt: skip
    for t in targets:
        made = _torch_nn(obj, t)
        if made is not None:
            if made:
                return Const(True)
            continue
        builtin_types = {
            "int": int,
            "float": float,
            "str": str,
            "bool": bool,
            "tuple": tuple,
            "list": list,
            "dict": dict,
            "set": set,
            "frozenset": frozenset,
            "types.MappingProxyType": MappingProxyType,
        }
        if isinstance(t, External) and kind is not None and t.name in builtin_types:
            if issubclass(kind, builtin_types[t.name]):
                return Const(True)
            continue  # a list is no dict
        if isinstance(t, External) and isinstance(obj, Instance) and t.name in builtin_types:
            if obj.cls is not None and t.name in obj.cls.external_bases():
                return Const(True)  # a framework class derived from it (a dict subclass)
            continue  # any other framework object or a config is none of the builtin types
        if isinstance(t, External) and isinstance(obj, Count) and t.name in builtin_types:
            if t.name == "int":  # a count known from below (the tokens in a batch): an int,
                return Const(True, obj.origins)
            continue  # and no bool, float, str or container
        if (
            isinstance(t, External)
            and isinstance(obj, (FunctionVal, ClassVal, EnumMember))
            and t.name in builtin_types
        ):
            continue
        if isinstance(t, External) and t.name == "type":
            if isinstance(obj, ClassVal) or (
                isinstance(obj, External) and obj.name in (*builtin_types, "object", "type")
            ):
                return Const(True)  # a class: the framework's, or a builtin type
            if isinstance(obj, (Const, FunctionVal, EnumMember, Instance, Tensor)) or kind:
                continue
        if isinstance(t, External) and isinstance(obj, Const):
            py = builtin_types.get(t.name)
            if py is not None:
                if isinstance(obj.value, py):
                    return Const(True, obj.origins)
                continue
            if t.name in _PATH_CLASSES:
                if isinstance(obj.value, PurePosixPath):
                    return Const(True, obj.origins)
                continue
            if not t.name.startswith(_ABSTRACT_NAMESPACES):
                continue  # a plain value (str, number, tuple...) is no library class's instance
            abc = _collection_abc(t)
            if abc is not None:  # a real Python value against a real ABC: exact
                if isinstance(obj.value, abc):
                    return Const(True, obj.origins)
                continue
            return Unknown(f"isinstance against {t.name}", kind=UnknownKind.UNSUPPORTED)
        if isinstance(t, External) and isinstance(obj, (Instance, EnumMember)):
            cls_of = obj.cls
            if cls_of is not None and t.name not in builtin_types:
                found = _external_ancestor(cls_of.external_bases(), t.name)
                if found is True:
                    return Const(True)
                if found is False:
                    continue
        if isinstance(t, ClassVal) and _is_protocol(t):
            found = _has_members(obj, t)  # a runtime_checkable Protocol: by what obj has
            if found is True:
                return Const(True)
            if found is None:
                return Unknown(f"isinstance against the protocol {t.qualname}",
                               kind=UnknownKind.UNSUPPORTED)  # fmt: skip
            continue
        if isinstance(t, ClassVal):
            if isinstance(obj, Instance) and obj.cls is not None:
                if t in obj.cls.mro():
                    return Const(True)
                continue
            if isinstance(obj, Instance) and obj.label == "config":
                # the checkpoint's config: a config class is the one for its model_type (as
                # AutoConfig and the framework's own config registry pick it)
                mine, theirs = obj.fields.get("model_type"), t.lookup("model_type")
                if isinstance(mine, Const) and isinstance(theirs, Const):
                    if mine.value == theirs.value:
                        return Const(True, mine.origins)
                    continue
            if isinstance(obj, EnumMember):
                if t in obj.cls.mro():
                    return Const(True)
                continue
            if not isinstance(obj, (Instance, Unknown, External, Tensor)):
                continue  # constants, functions, modules, field specs: no framework instance
            if isinstance(obj, Tensor) and _plain(t):
                continue  # what torch made (a tensor, a module) is of no class outside torch's
            return Unknown(
                f"isinstance of {type(obj).__name__} against {t.qualname}",
                kind=UnknownKind.UNSUPPORTED,
            )
        if isinstance(t, External) and t.name == "torch.Tensor":
            if isinstance(obj, Tensor) and (obj.nn or "").startswith(MODULE):
                continue  # a torch.nn module (the engine holds one as a tensor): no tensor
            if isinstance(obj, Tensor):
                return Const(True)
            if isinstance(obj, Const):
                continue
        abc = _collection_abc(t)
        if abc is not None and kind is not None:  # a tracked dict, list, tuple or set
            if issubclass(kind, abc):
                return Const(True)
            continue
        is_config = isinstance(obj, Instance) and obj.cls is None and obj.label == "config"
        if is_config and abc in (collections.abc.Mapping, collections.abc.MutableMapping):
            continue  # a transformers config is read by attribute, not a mapping
        if is_config and isinstance(t, External) and t.name in _PRETRAINED_CONFIG:
            return Const(True)  # the checkpoint's config: a PretrainedConfig
        if isinstance(t, External) and t.name in _PRETRAINED_CONFIG and kind is not None:
            continue  # a tracked dict, list, tuple or set
        if isinstance(t, ClassVal) and kind is not None:
            continue  # no framework class is a builtin container (none derives from dict here)
        return Unknown("isinstance against an unknown class", kind=UnknownKind.UNSUPPORTED)
    return Const(False, obj.origins)


def _plain(cls: ClassVal) -> bool:
    """A framework class none of whose ancestors is a library class but object (or Generic),
    made with no metaclass: no value torch makes is an instance of it (a torch subclass's
    instances, and what torch ops make of them, derive from a torch class; an ABC may
    register torch's classes as its own, a metaclass may answer isinstance itself)."""
    for c in cls.mro():
        if c.node is not None and c.node.keywords:  # metaclass=...
            return False
        for b in c.bases:
            if not (isinstance(b, ClassVal) or (isinstance(b, External) and b.name in _PLAIN)):
                return False
    return True


_PLAIN = frozenset({"object", "typing.Generic"})


# library classes and the library classes they derive from (the enum family)
_ANCESTORS = {
    "enum.Enum": ("enum.Enum",),
    "enum.IntEnum": ("enum.IntEnum", "enum.Enum", "enum.ReprEnum"),
    "enum.StrEnum": ("enum.StrEnum", "enum.Enum", "enum.ReprEnum"),
    "enum.Flag": ("enum.Flag", "enum.Enum"),
    "enum.IntFlag": ("enum.IntFlag", "enum.Flag", "enum.Enum", "enum.ReprEnum"),
}


def _torch_nn(obj: Value, t: Value) -> bool | None:
    """isinstance against a concrete torch.nn class (`torch.nn.Linear`, `torch.nn.ModuleList`,
    `torch.nn.Module`, `torch.nn.Parameter`): plain classes, no instance or subclass hooks.
    A framework class whose only library base is torch.nn.Module is a Module and none of the
    others (Module's ancestry is just object); a value torch.nn made is what made it (a
    Linear is a Linear and a Module; a Lazy* class derives from its eager one: not told)."""
    if not isinstance(t, External) or not (torch_module(t.name) or t.name in _NN_BASES):
        return None
    if isinstance(obj, Instance) and obj.cls is not None:
        bases = obj.cls.external_bases()
        if all(b in MODULE_BASES or b in PLAIN_BASES for b in bases):
            return t.name in MODULE_BASES and any(b in MODULE_BASES for b in bases)
        return None
    kind = obj.nn if isinstance(obj, Tensor) else None
    if kind == PARAMETER:
        return t.name in PARAMETER_CLASSES or None  # a Parameter is also a Tensor: not told
    if kind is None or not kind.startswith(MODULE):
        return None
    made = kind.partition(":")[2]
    if made == t.name or t.name in MODULE_BASES:
        return True
    if t.name in PARAMETER_CLASSES:
        return False
    # torch.nn's classes derive from one another in places (ReLU6 from Hardtanh, LazyLinear
    # from Linear): told apart only where neither can be the other's base (a container is no
    # leaf layer's base, nor a leaf layer a container's; an activation is no Linear)
    if (t.name in COMPOSITES) != (made in COMPOSITES):
        return False
    if t.name == "torch.nn.Linear" and made in NO_PARAMETERS:
        return False
    return None


def _external_ancestor(bases: list[str], name: str) -> bool | None:
    """Whether a framework class with these library bases derives from library class `name`:
    known where every base's own ancestry is (a framework class with no library base derives
    from none), else None."""
    if name in bases or any(name in _ANCESTORS.get(b, ()) for b in bases):
        return True
    if all(b in _ANCESTORS for b in bases):
        return False
    return None


_PRETRAINED_CONFIG = {
    "transformers.PretrainedConfig",
    "transformers.PreTrainedConfig",
    "transformers.configuration_utils.PretrainedConfig",
    "transformers.configuration_utils.PreTrainedConfig",
}


def _is_protocol(cls: ClassVal) -> bool:
    return any(b.rsplit(".", 1)[-1] == "Protocol" for b in cls.external_bases())


def _has_members(obj: Value, proto: ClassVal) -> bool | None:
    """Whether `obj` has every member the protocol declares (what isinstance against a
    runtime_checkable Protocol checks); None when it cannot be told."""
    names = {n for c in proto.mro() for n in c.attrs
             if not n.startswith("__") and not _is_protocol_base(c)} | {
        n for c in proto.mro() for n in c.annotations}  # fmt: skip
    holder = obj.cls if isinstance(obj, Instance) and obj.cls is not None else obj
    if not isinstance(holder, ClassVal):
        return None
    fields = obj.fields if isinstance(obj, Instance) else {}
    missing = [n for n in names if n not in fields and holder.lookup(n) is None]
    if not missing:
        return True
    return None if holder.external_bases() or isinstance(obj, Instance) else False


def _is_protocol_base(c: ClassVal) -> bool:
    return c.qualname.endswith(":Protocol")


def _container_type(v: Value) -> type | None:
    """The Python type of a tracked container (a constant's own type for a Const)."""
    if isinstance(v, MappingProxy):
        return MappingProxyType
    for cls, py in ((ListVal, list), (TupleVal, tuple), (DictVal, dict), (SetVal, set)):
        if isinstance(v, cls):
            return py
    return None


def _collection_abc(t: Value) -> type | None:
    """collections.abc.Mapping and the typing aliases of the collection ABCs (typing.Mapping,
    typing.Sequence...) as Python classes; None for anything else."""
    if not isinstance(t, External):
        return None
    module, _, short = t.name.rpartition(".")
    if module not in ("collections.abc", "typing", "typing_extensions"):
        return None
    found = getattr(collections.abc, short, None)
    return found if isinstance(found, type) else None


_PATH_CLASSES = {
    "pathlib.Path",
    "pathlib.PurePath",
    "pathlib.PosixPath",
    "pathlib.PurePosixPath",
    "os.PathLike",
}


# abstract classes a plain value may be registered under
_ABSTRACT_NAMESPACES = ("collections.abc.", "numbers.", "typing.", "typing_extensions.", "abc.")
