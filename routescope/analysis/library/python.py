"""Models of Python's builtins and standard library that need the engine: attribute reflection,
super(), callable(), type(), the container builtins, property(), builtin exceptions, copy, re,
importlib and records (dataclasses, msgspec)."""

from __future__ import annotations

import ast
import builtins
import dataclasses
from typing import TYPE_CHECKING

from routescope.analysis.engine import enums
from routescope.analysis.engine.bound import BoundOperation, ContextVarMethod
from routescope.analysis.engine.containers import DictVal, ListVal, MappingProxy, SetVal, TupleVal
from routescope.analysis.engine.contents import field_names, snapshot, truth_in
from routescope.analysis.engine.exceptions import MadeException
from routescope.analysis.engine.sequences import SEQUENCE_BUILTINS, over_containers
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    ModuleVal,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library import records
from routescope.analysis.library.builtins import BoundConst, call_builtin, evaluated_names
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase


@models("enum.auto")
def _auto(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """`auto()` in an enum's body: a marker its class replaces with the member's value, as
    the enum's kind gives it (engine/enums.py)."""
    return one(st, External(enums.AUTO)) if not args and not kwargs else None


@models("getattr", "hasattr")
def _getattr(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """getattr(obj, "name"[, default]) / hasattr: a lookup Python answers with AttributeError
    (kind ABSENT) takes the default; any other unknown stays unknown."""
    if len(args) < 2 or not isinstance(args[1], Const):
        return None
    attr = str(args[1].value)
    target = eng.resolved(args[0])
    if name == "hasattr" and isinstance(target, Tensor):  # set_weight_attrs & co. add any
        if target.nn is not None and attr in st.contents(target):  # (a module's: set on it)
            return one(st, Const(True))
        return one(st, Unknown(f"hasattr(tensor, {attr!r})", kind=UnknownKind.OPAQUE))
    if name == "hasattr" and isinstance(target, External):
        full = f"{target.name}.{attr}"
        known = eng.facts.attribute_fact(f"hasattr({full})")
        return one(st, known or Unknown(f"hasattr({full})", kind=UnknownKind.OPAQUE))
    out: Paths = []
    for s, v in eng.attribute(st, target, attr):
        missing = isinstance(v, Unknown) and v.kind is UnknownKind.ABSENT
        if name == "hasattr":  # (an answer the config file gives says so: `hasattr(hf_config,
            told = missing or not isinstance(v, Unknown)  # "index_topk")` False from it)
            out.append((s, Const(not missing, v.origins if missing else ()) if told else v))
        else:
            out.append((s, args[2] if missing and len(args) > 2 else v))
    return out


@models("object.__getattribute__", "builtins.object.__getattribute__")
def _getattribute(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if len(args) == 2 and isinstance(args[1], Const):
        return eng.attribute(st, args[0], str(args[1].value), hook=False)
    return None


@models("setattr", "object.__setattr__", "builtins.object.__setattr__")
def _setattr(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if len(args) == 3 and isinstance(args[1], Const):
        eng.set_attribute(st, args[0], str(args[1].value), args[2])
        return one(st, Const(None))
    return None


@models("super")
def _super(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    return one(st, eng.super_proxy(st))


@models("callable")
def _callable(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if len(args) != 1:
        return None
    a = eng.resolved(args[0])
    if isinstance(a, ContextVarMethod):  # made for any attribute read: only these are methods
        return one(st, Const(a.name in ("get", "set", "reset")))
    if isinstance(a, (FunctionVal, ClassVal, BoundConst, BoundOperation)) or type(a).__name__ in (
        "ContainerMethod",
        "Partial",
        "TensorMethod",
        "ConfigMethod",  # a config's own method (get_text_config, to_dict)
    ):
        return one(st, Const(True))
    if isinstance(a, Const):
        return one(st, Const(callable(a.value)))
    if isinstance(a, (ListVal, DictVal, SetVal, TupleVal, EnumMember, ModuleVal)):
        return one(st, Const(False))
    if isinstance(a, Instance) and a.cls is not None:
        return one(st, Const(a.cls.lookup("__call__") is not None or bool(a.cls.external_bases())))
    return None


@models("type")
def _type(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if len(args) != 1:
        return None
    a = eng.resolved(args[0])
    if isinstance(a, Instance) and a.cls is not None:
        return one(st, a.cls)
    if isinstance(a, MappingProxy):
        return one(st, External("types.MappingProxyType"))
    for cls, py in ((ListVal, "list"), (TupleVal, "tuple"), (DictVal, "dict"), (SetVal, "set")):
        if isinstance(a, cls):
            return one(st, External(py))
    if isinstance(a, Const):
        return one(st, External(type(a.value).__name__))
    return one(st, Unknown("type() of an unknown value", kind=UnknownKind.UNSUPPORTED))


@models(*sorted(SEQUENCE_BUILTINS))
def _sequences(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    got = over_containers(st, name, args, kwargs)
    return one(st, got) if got is not None else None


@models(*sorted(evaluated_names()))
def _pure(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """A builtin evaluated for real on constants (a list reads as its items on this path;
    isinstance sees the container itself)."""
    if name == "bool" and len(args) == 1 and (known := truth_in(st, args[0])) is not None:
        return one(st, Const(known, args[0].origins))  # its truth, as a condition reads it
    if name != "isinstance":
        args = [snapshot(st, a) for a in args]
    got = call_builtin(name, args, kwargs)
    return one(st, got) if got is not None else None


@models("property")
def _property(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    getter = eng.resolved(args[0]) if args else None
    if isinstance(getter, FunctionVal):  # property(getter), built at run time
        return one(st, dataclasses.replace(getter, decorators=(*getter.decorators, "property")))
    return None


@models(
    *(
        n
        for n in dir(builtins)
        if isinstance(getattr(builtins, n), type)
        and issubclass(getattr(builtins, n), BaseException)
    )
)
def _exception(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    said = args[0] if len(args) == 1 and not kwargs else None
    if isinstance(said, Const) and isinstance(said.value, str):  # its message, as rendered
        return one(st, MadeException(name, said.value))
    return one(st, External(name))  # ValueError(...) stands for its class


@models("importlib.util.find_spec")
def _find_spec(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if not (args and isinstance(args[0], Const) and isinstance(args[0].value, str)):
        return None
    target = eng.through_sys_modules(args[0].value)  # (a name sys.modules holds: its spec)
    found = eng.index.has_module(target) or eng.facts.package_available(target)
    if found is False:
        return one(st, Const(None, (f"package {target} not importable",)))
    if found:
        return one(st, External(f"{target}#spec"))
    return None


@models("importlib.import_module", "__import__")
def _import_module(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    target = args[0].value if len(args) == 1 and isinstance(args[0], Const) else None
    if not isinstance(target, str) or not target or target[:1] == ".":
        return None
    # __import__("a.b") gives the top-level module a, as `import a.b` binds it
    target = target.split(".")[0] if name == "__import__" else target
    return _imported(eng, st, eng.through_sys_modules(target))


def _imported(eng: EngineBase, st: PathState, target: str) -> Paths:
    mod = eng.import_module(target)
    failure = getattr(mod, "exc", None)
    if failure is not None:  # the facts say the package is absent: ImportError here
        return eng.returned(st, [(st, "raise", failure)], f"import of {target} fails")
    return one(st, eng.resolved(mod))


@models("routescope.namespace")
def _namespace(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    return one(st, Instance(None, dict(kwargs), "object"))  # rule summaries build plain objects


@models(*sorted(records.NAMES))
def _records(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    module = eng.ctx[-1].module.name if eng.ctx else ""
    got = records.call(name, [eng.resolved(a) for a in args], kwargs, st, module)
    return one(st, got) if got is not None else None


@models("dataclasses.replace", "msgspec.structs.replace")
def _replace(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """A new record of the same class: its fields, the changes over them, and the class's own
    __init__ / __post_init__ run again, as replace() does."""
    obj = eng.resolved(args[0]) if len(args) == 1 else None
    if not (isinstance(obj, Instance) and obj.cls is not None and records.is_record(obj.cls)):
        return None
    view = st.fields(obj)
    given = {n: view[n] for n in field_names(obj.cls) if n in view}
    return eng.call(st, obj.cls, [], {**given, **kwargs}, node)
