"""The object model: names and scopes, attributes, descriptors, super()."""

from __future__ import annotations

import builtins
from dataclasses import replace
from types import MappingProxyType

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.binding import CLOSURE_FRAMES, FRAME_KEY
from routescope.analysis.engine.bound import (
    CONTEXT_VAR,
    LIBRARY,
    REGISTERS,
    ConfigMethod,
    ContextVarMethod,
    LibraryMethod,
    ModuleTypeInit,
    Partial,
    Register,
)
from routescope.analysis.engine.containers import (
    DictVal,
    ListVal,
    MappingProxy,
    SetVal,
    new_tuple,
    str_dict,
)
from routescope.analysis.engine.imports import LazyModule, LazyName
from routescope.analysis.engine.methods import ContainerMethod
from routescope.analysis.engine.sinks import CompiledFunction, CompiledModule
from routescope.analysis.engine.state import PathState, class_of
from routescope.analysis.engine.stmts import GLOBALS_KEY
from routescope.analysis.engine.tensors import TENSOR_MEMBERS, TensorMethod, dtype_attribute
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
from routescope.analysis.library import heterogeneous, nn_module, records
from routescope.analysis.library.builtins import builtin_names, const_attribute
from routescope.analysis.library.modules import MODULE, TREE_METHODS, ModuleTree, is_module
from routescope.analysis.library.paths import path_attribute

# every name Python's builtins module binds (an unknown builtin's result is opaque)
_BUILTINS = (
    builtin_names()
    | {n for n in dir(builtins) if not n.startswith("_")}
    | {"__name__", "__import__"}
)

MODULE_BASES = nn_module.MODULE_BASES


# torch's base of a function with its own forward and backward (Function.apply runs forward)
AUTOGRAD_FUNCTIONS = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
    }
)


class ObjectsMixin(EngineBase):
    def lookup_name(self, st: PathState, name: str) -> Value:
        env = st.envs[-1] if st.envs else None
        declared = env.get(GLOBALS_KEY) if env is not None else None
        is_global = isinstance(declared, Const) and name in declared.value
        local = env.get(name) if env is not None and not is_global else None
        if local is not None:
            return local if not isinstance(local, (LazyName, LazyModule)) else self.resolved(local)
        fn_closure = self._closure_env
        if fn_closure is not None:
            # a variable of an enclosing function is its cell: read from that frame as it is now,
            # even when assigned after the def (a nested function calling itself by its name)
            frames = fn_closure.get(CLOSURE_FRAMES)
            for token in frames.value if isinstance(frames, Const) else ():
                live = next((e for e in reversed(st.envs) if e.get(FRAME_KEY) is token), None)
                if live is not None and name in live:  # the enclosing frame, as it is now
                    return self.resolved(live[name])
            if name in fn_closure:
                return self.resolved(fn_closure[name])
        found = st.global_value(self.ctx[-1].module, name) if self.ctx else None
        if found is not None:
            return self.resolved(found)
        if name in ("True", "False", "None"):
            return Const({"True": True, "False": False, "None": None}[name])
        if name in _BUILTINS:
            return External(name)
        if self.ctx and self.ctx[-1].module.name in self.loading:
            return LazyName(self, self.ctx[-1].module.name, name)
        return Unknown(f"name {name} is not defined", kind=UnknownKind.ABSENT)

    def attribute(self, st: PathState, obj: Value, name: str, hook: bool = True) -> Paths:
        """`hook`: a miss on a framework object goes to its class's __getattr__ (off for
        object.__getattribute__)."""
        obj = self.resolved(obj)
        if isinstance(obj, ModuleVal):
            return [(st, self.module_attr(obj, name, st))]
        if isinstance(obj, (ListVal, DictVal, SetVal)):
            builtin: type = (
                list
                if isinstance(obj, ListVal)
                else MappingProxyType
                if isinstance(obj, MappingProxy)  # (no update, pop, setdefault, clear)
                else dict
                if isinstance(obj, DictVal)
                else set
            )
            if not hasattr(builtin, name):  # (a dict read as a config object)
                kind = builtin.__name__
                return [(st, Unknown(f"{kind} has no attribute {name}", kind=UnknownKind.ABSENT))]
            return [(st, ContainerMethod(obj, name))]
        if isinstance(obj, CompiledModule):
            return [(st, CompiledFunction(obj, name))]
        if isinstance(obj, External):
            full = f"{obj.name}.{name}"
            if full == "sys.modules":
                return [(st, self.sys_modules())]
            fact = dtype_attribute(obj, name) or self.facts.attribute_fact(full)  # (Values: true)
            return [(st, fact if fact is not None else External(full, obj.origins))]
        if isinstance(obj, SuperProxy):
            found = obj.cls.lookup(name) if obj.cls else None
            recv = obj.receiver
            if (
                found is None
                and name == "__init__"
                and isinstance(recv, Instance)
                and (recv.cls is not None and ModuleTypeInit.BASE in recv.cls.external_bases())
            ):
                return [(st, ModuleTypeInit(recv))]
            if isinstance(found, FunctionVal):  # a property read through super() runs
                owner = recv.cls if isinstance(recv, Instance) and recv.cls else recv
                return self._method(st, found, recv, owner)
            through = self.dict_super(recv, name) if found is None else None
            if through is not None:  # a dict subclass's builtin base: the dict it holds
                return [(st, through)]
            return [
                (st, found or Unknown(f"super() has no attribute {name}", kind=UnknownKind.ABSENT))
            ]
        if isinstance(obj, Instance) and obj.label == CONTEXT_VAR and obj.cls is None:
            return [(st, ContextVarMethod(obj, name))]
        if isinstance(obj, Instance) and obj.label == LIBRARY and obj.cls is None:
            return [(st, LibraryMethod(obj, name, self.facts.ops))]
        if isinstance(obj, Instance):
            if obj.label == "config" and obj.cls is None:  # transformers' per-layer configs
                layered = heterogeneous.config_attribute(st, obj, name)
                if layered is not None:
                    return [(st, layered)]
            got = st.field(obj, name)
            if got is not None:
                return [(st, got)]
            if name == "__dict__" and obj.cls is not None:
                return [(st, records.instance_dict(obj, obj.cls, st.fields(obj)))]
            if name == "__class__" and obj.cls is not None:
                return [(st, obj.cls)]  # (one assigned to the object is its field, above)
            if obj.cls is not None:
                cls = class_of(st, obj)
                found = self.class_lookup(st, cls, name)
                if isinstance(found, FunctionVal):
                    return self._method(st, found, obj, cls)
                if found is not None:
                    return [(st, found)]
                held = self.dict_attribute(obj, name)
                if held is not None:  # a dict subclass's dict method
                    return [(st, held)]
                if name in REGISTERS and any(b in MODULE_BASES for b in obj.cls.external_bases()):
                    return [(st, Register(obj))]  # self.register_buffer("bias", t): a field
                if name in TREE_METHODS and is_module(obj):  # module.named_children()
                    return [(st, ModuleTree(obj, name, self.facts))]
                data = self.tensor_data.get(id(obj)) if name in TENSOR_MEMBERS else None
                if data is not None:  # a tensor subclass is its tensor (`p.data = t`: t)
                    written = st.field(obj, "data")
                    data = written if isinstance(written, Tensor) else data
                    return [(st, data)] if name == "data" else self.attribute(st, data, name)
                getattr_hook = obj.cls.lookup("__getattr__") if hook else None
                if isinstance(getattr_hook, FunctionVal) and not name.startswith("__"):
                    return self.call(st, getattr_hook.bind(obj), [Const(name)], {}, None)
                if obj.cls.external_bases() and (
                    id(obj) in self._unbuilt or not records.closed_attributes(obj.cls, name)
                ):
                    return [
                        (
                            st,
                            Unknown(
                                f"{obj.label or obj.cls.qualname}.{name} (from an external base)",
                                kind=UnknownKind.OPAQUE,
                            ),
                        )
                    ]
            mine = self.config_classes.get(id(obj)) if obj.label == "config" else None
            if mine is not None and mine[0] is obj:  # a method or property of the framework's
                method = self.class_lookup(st, mine[1], name)  # own config class
                if isinstance(method, FunctionVal):
                    return self._method(st, method, obj, mine[1])
            if obj.label == "config" and obj.cls is None and name in ConfigMethod.NAMES:
                return [(st, ConfigMethod(obj, name))]  # PretrainedConfig's own methods
            label = obj.label or (obj.cls.qualname if obj.cls else "object")
            said = (f"config.json: no {name}",) if label == "config" and not obj.cls else ()
            gone = Unknown(f"{label} has no attribute {name}", said, kind=UnknownKind.ABSENT)
            return [(st, gone)]
        if isinstance(obj, ClassVal):
            found = self.class_lookup(st, obj, name)
            if isinstance(found, FunctionVal) and "classmethod" in found.decorators:
                return [(st, found.bind(obj))]
            if found is not None:
                return [(st, found)]
            if name == "__annotations__":  # its own fields' annotations, evaluated
                own = {n: self.annotation(obj, n) for n in list(obj.annotations)}
                return [(st, str_dict(own))]
            special = records.class_attribute(obj, name)
            if special is not None:
                return [(st, special)]
            if name == "apply" and AUTOGRAD_FUNCTIONS & set(obj.external_bases()):
                forward = self.class_lookup(st, obj, "forward")
                if isinstance(forward, FunctionVal):  # Function.apply(*args): forward runs on
                    # them, handed a context first unless the class sets it up itself
                    own_setup = isinstance(self.class_lookup(st, obj, "setup_context"), FunctionVal)
                    ctx: list[Value] = [External("torch.autograd.function.FunctionCtx")]
                    return [(st, Partial(forward, [] if own_setup else ctx, {}))]
            if name == "__name__":
                return [(st, Const(obj.qualname.split(":")[-1].rsplit(".", 1)[-1]))]
            if name == "__qualname__":
                return [(st, Const(obj.qualname.split(":")[-1]))]
            if name == "__mro__":
                return [(st, new_tuple(obj.mro()))]
            return [
                (
                    st,
                    Unknown(
                        f"class {obj.qualname} has no attribute {name}", kind=UnknownKind.ABSENT
                    ),
                )
            ]
        if isinstance(obj, EnumMember):
            if name == "name":
                return [(st, Const(obj.name))]
            if name == "value":
                return [(st, obj.value)]
            found = obj.cls.lookup(name)
            if isinstance(found, FunctionVal):  # a method, a property's value
                return self._method(st, found, obj, obj.cls)
            return [(st, found or Unknown(f"enum member has no {name}", kind=UnknownKind.ABSENT))]
        if isinstance(obj, Tensor):
            if name == "shape" and obj.shape is not None:
                return [(st, new_tuple(obj.shape))]
            if name == "dtype" and obj.dtype:
                return [(st, External(obj.dtype))]
            if name == "ndim" and obj.shape is not None:
                return [(st, Const(len(obj.shape)))]
            if name == "data" and not (obj.nn or "").startswith(MODULE):  # the same storage
                return [(st, obj)]
            if name in TREE_METHODS and (obj.nn or "").startswith(MODULE):
                return [(st, ModuleTree(obj, name, self.facts))]  # a torch.nn module's tree
            held = st.contents(obj).get(name) if (obj.nn or "").startswith(MODULE) else None
            if held is not None:  # a torch.nn module's parameter, or what code set on it
                return [(st, held)]
            fact = self.facts.attribute_fact(f"torch.Tensor.{name}") if self.tracing else None
            if fact is not None:  # what every tensor the decode step is handed has (its device)
                return [(st, fact)]
            return [(st, TensorMethod(obj, name))]
        if isinstance(obj, Const):
            return [(st, const_attribute(obj, name))]
        if isinstance(obj, FunctionVal):
            qual = obj.qualname.split(":")[-1]
            if name == "__qualname__":
                return [(st, Const(qual))]
            if name == "__name__":
                return [(st, Const(qual.rsplit(".", 1)[-1]))]
            if name == "__module__":
                return [(st, Const(obj.qualname.split(":")[0]))]
            if name in ("__func__", "__self__"):  # a bound method's function and receiver
                if obj.bound is None or "staticmethod" in obj.decorators:
                    return [(st, Unknown(f"a function has no {name}", kind=UnknownKind.ABSENT))]
                if name == "__self__":
                    return [(st, obj.bound)]
                bound_to = obj.bound.cls if isinstance(obj.bound, Instance) else obj.bound
                method = (
                    bound_to.lookup(qual.rsplit(".", 1)[-1])
                    if isinstance(bound_to, ClassVal)
                    else None
                )
                return [
                    (st, method if isinstance(method, FunctionVal) else replace(obj, bound=None))
                ]
            return [(st, Unknown(f"attribute {name} of function", kind=UnknownKind.OPAQUE))]
        if isinstance(obj, Unknown):  # an attribute of an unknown value: as unknown (of a
            return [(st, path_attribute(obj, name))]  # path not known: a path where pathlib's is)
        if isinstance(obj, records.FieldDefault):  # dataclasses.field(...)'s Field
            return [(st, obj.read(name))]
        got = dtype_attribute(obj, name)  # (a tensor's dtype: its itemsize is at least 1)
        why = Unknown(f"attribute of {type(obj).__name__}", kind=UnknownKind.UNSUPPORTED)
        return [(st, got if got is not None else why)]

    def _method(self, st: PathState, found: FunctionVal, obj: Value, cls: Value) -> Paths:
        """A function found on the class of `obj`, as the attribute lookup gives it: a
        property's value, a static function, a method bound to the class or to `obj`."""
        if "property" in found.decorators or any(
            d.endswith(".getter") or d.endswith("cached_property") for d in found.decorators
        ):
            got = self.invoke(st, found.bind(obj), [], {}, None)
            return self.returned(st, got, f"{found.qualname} raised")
        if "staticmethod" in found.decorators:
            return [(st, found)]
        if "classmethod" in found.decorators:
            return [(st, found.bind(cls))]
        return [(st, found.bind(obj))]

    def set_attribute(self, st: PathState, obj: Value, name: str, value: Value) -> None:
        obj = self.resolved(obj)
        if isinstance(obj, Instance):
            if not (obj.label == "config" and heterogeneous.setter(st, obj, name, value)):
                st.write(obj, name, value)
        elif isinstance(obj, ClassVal):  # the path's own, as an instance's fields are
            own = dict(st.contents(obj))
            own[name] = value
            st.store(obj, own)
        elif isinstance(obj, ModuleVal):
            st.write(obj, name, value)  # the path's own, as a function's `global` writes are
        elif isinstance(obj, Tensor) and (obj.nn or "").startswith(MODULE):
            st.write(obj, name, value)  # `self.gate.e_score_correction_bias = Parameter(..)`

    # --- definitions -------------------------------------------------------------------------

    def class_lookup(self, st: PathState, cls: ClassVal, name: str) -> Value | None:
        """`name` in the class's MRO, as this path sees each class's attributes."""
        for c in cls.mro():
            attrs = st.contents(c)
            if name in attrs:
                return attrs[name]  # type: ignore[no-any-return]
        return None

    def super_proxy(self, st: PathState) -> Value:
        """Zero-argument super(): `super(__class__, <the function's first argument>)`, as
        Python makes it (a static method handed its class explicitly has one too)."""
        frame_self = self._self_stack
        if not frame_self:
            return Unknown("super() outside a method", kind=UnknownKind.UNSUPPORTED)
        receiver, owner, fn = frame_self[-1]
        if receiver is None or "staticmethod" in fn.decorators:
            receiver = self._first_argument(st, fn)
        # the receiver's class on this path (one assigned to its __class__ included)
        now = class_of(st, receiver) if isinstance(receiver, Instance) and receiver.cls else None
        if owner is None and receiver is not None:
            owner = _defining(now or receiver, fn)
        if owner is None or receiver is None:
            return Unknown("super() without a class", kind=UnknownKind.UNSUPPORTED)
        if isinstance(receiver, ClassVal) and owner in receiver.mro():
            mro = receiver.mro()  # a class method's class: its MRO, after the owner
        else:
            mro = (now or owner).mro()
        rest = mro[mro.index(owner) + 1 :] if owner in mro else []
        proxy = ClassVal(f"super({owner.qualname})", None, None, tuple(rest))
        proxy.__dict__["_mro"] = [proxy, *rest]  # the receiver's MRO after the owner, as is
        return SuperProxy(proxy, receiver)

    def _first_argument(self, st: PathState, fn: FunctionVal) -> Value | None:
        node = fn.node
        params = [*node.args.posonlyargs, *node.args.args]
        if not params or not st.envs:
            return None
        return st.envs[-1].get(params[0].arg)

    def owner_of(self, fn: FunctionVal) -> ClassVal | None:
        """The class whose body defines a bound method (a class method's class, or the
        instance's, is searched in MRO order)."""
        recv = fn.bound
        if recv is None:
            return None
        found = _defining(recv, fn)
        return found if found is not None or not isinstance(recv, ClassVal) else recv


def _defining(receiver: Value, fn: FunctionVal) -> ClassVal | None:
    """The class in the receiver's MRO whose body defines `fn` (its `__class__`)."""
    cls = receiver if isinstance(receiver, ClassVal) else getattr(receiver, "cls", None)
    if not isinstance(cls, ClassVal):
        return None
    for c in cls.mro():
        if any(isinstance(v, FunctionVal) and v.node is fn.node for v in c.attrs.values()):
            return c
    return None


class SuperProxy(Instance):
    def __init__(self, proxy: ClassVal, receiver: Value) -> None:
        super().__init__(proxy, {}, "super")
        self.receiver = receiver
