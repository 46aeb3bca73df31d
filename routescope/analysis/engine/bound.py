"""Values that stand for a bound operation the engine carries out when called: a ContextVar's
get/set, nn.Module registration, functools.partial, a config's to_dict."""

from __future__ import annotations

from routescope.analysis.engine.containers import (
    str_dict,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    Instance,
    Unknown,
    UnknownKind,
    Value,
    describe,
)
from routescope.analysis.library import heterogeneous

REGISTERS = {"register_buffer", "register_parameter", "add_module", "register_module"}


CONTEXT_VAR = "ContextVar"


class BoundOperation(Value):
    """An operation on an object the engine carries out itself when called (`call`)."""

    never_none = True

    def call(self, st: PathState, args: list[Value]) -> Value:
        raise NotImplementedError

    def call_with(self, st: PathState, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """The call with its keyword arguments (an operation that reads none ignores them)."""
        return self.call(st, args)


class ModuleTypeInit(BoundOperation):
    """`super().__init__(name[, doc])` of a class derived from types.ModuleType (a lazy module
    loader): the object's __name__ and __doc__, as ModuleType.__init__ sets them."""

    BASE = "types.ModuleType"

    def __init__(self, receiver: Instance) -> None:
        super().__init__()
        self.receiver = receiver

    def call(self, st: PathState, args: list[Value]) -> Value:
        st.write(self.receiver, "__name__", args[0] if args else _unknown("module name"))
        st.write(self.receiver, "__doc__", args[1] if len(args) > 1 else Const(None))
        return Const(None)


LIBRARY = "torch.library.Library"


class LibraryMethod(BoundOperation):
    """A method of a torch.library.Library: `impl(name, fn, ...)` registers fn as what
    torch.ops.<namespace>.<name> runs (a framework registering its Python ops); define, fake
    implementations and the rest register nothing the trace reads."""

    def __init__(self, library: Instance, name: str, ops: dict[str, Value]) -> None:
        super().__init__()
        self.library, self.name, self.ops = library, name, ops

    def call(self, st: PathState, args: list[Value]) -> Value:
        ns = st.fields(self.library).get("ns")
        if self.name == "impl" and len(args) >= 2 and isinstance(ns, Const):
            op = args[0]
            if isinstance(op, Const) and isinstance(op.value, str):
                self.ops[f"torch.ops.{ns.value}.{op.value.split('.')[0]}"] = args[1]
        return Const(None)


class FakeRegistration(BoundOperation):
    """The decorator `torch.library.register_fake("ns::op")` returns: it records the function
    it decorates as op's fake implementation (what torch.compile runs to learn the outputs'
    shapes, dtypes and layout, which torch requires to match the kernel's) and returns it."""

    def __init__(self, op: str, fakes: dict[str, Value]) -> None:
        super().__init__()
        self.op, self.fakes = op, fakes

    def call(self, st: PathState, args: list[Value]) -> Value:
        if len(args) != 1:
            return _unknown("register_fake()")
        self.fakes[self.op] = args[0]
        return args[0]


def op_attribute(op: str) -> str | None:
    """ "ns::op" -> "torch.ops.ns.op", as code calls it; an overload keeps its name
    ("ns::op.out" -> "torch.ops.ns.op.out"), but the default one is the op's own
    ("ns::op.default" -> "torch.ops.ns.op": see op_called). None when it names no op."""
    ns, sep, name = op.partition("::")
    if not sep or not ns or not name:
        return None
    base, _, overload = name.partition(".")
    return f"torch.ops.{ns}.{base}" + (f".{overload}" if overload not in ("", "default") else "")


def op_called(name: str) -> str:
    """The op a call of `torch.ops.ns.op[.overload]` runs, keyed as op_attribute keys it."""
    parts = name.split(".")
    return ".".join(parts[:4]) if len(parts) == 5 and parts[4] == "default" else name


class ContextVarMethod(BoundOperation):
    """get / set / reset of a contextvars.ContextVar: the value lives on the path (as a field
    the path writes), so a `with` block that sets it holds it until its reset."""

    def __init__(self, var: Instance, name: str) -> None:
        super().__init__()
        self.var, self.name = var, name

    def call(self, st: PathState, args: list[Value]) -> Value:
        view = st.fields(self.var)
        if self.name == "get":  # its value, else get()'s default, else its own default
            for got in (view.get("value"), args[0] if args else None, view.get("default")):
                if got is not None:
                    return got
            return Unknown(
                f"ContextVar {describe(view['name'])} has no value on this path",
                kind=UnknownKind.ABSENT,
            )
        if self.name == "set" and len(args) == 1:
            token = Instance(None, {"old": view["value"]} if "value" in view else {}, "Token")
            st.write(self.var, "value", args[0])
            return token
        if self.name == "reset" and len(args) == 1 and isinstance(args[0], Instance):
            old = st.fields(args[0]).get("old")
            fields = dict(view)
            if old is None:  # back to no value of its own: the default answers again
                fields.pop("value", None)
            else:
                fields["value"] = old
            st.store(self.var, fields)
            return Const(None)
        return _unknown(f"ContextVar.{self.name}()")


class Register(Value):
    """nn.Module.register_buffer / register_parameter / add_module of a module instance."""

    never_none = True

    def __init__(self, target: Instance) -> None:
        super().__init__()
        self.target = target


class Partial(Value):
    """functools.partial(fn, *args, **kwargs)."""

    never_none = True

    def __init__(self, fn: Value, args: list[Value], kwargs: dict[str, Value]) -> None:
        super().__init__()
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


class ConfigMethod(Value):
    """A method of the checkpoint's config (a transformers PretrainedConfig) that routescope
    answers: `to_dict`, `get_text_config`."""

    never_none = True

    NAMES = ("to_dict", "get_text_config")

    def __init__(self, config: Instance, name: str) -> None:
        super().__init__()
        self.config = config
        self.name = name


# the sub-configs PretrainedConfig.get_text_config() looks for (transformers
# configuration_utils.py: decoder_possible_text_config_names, encoder_possible_text_config_names)
_TEXT_CONFIGS = ("decoder", "generator", "text_config", "text_encoder")


def config_method(st: PathState, fn: ConfigMethod, args: list[Value],
                  kwargs: dict[str, Value], depth: int) -> Value:  # fmt: skip
    """The value of a config method: to_dict() its attributes as a dict; get_text_config()
    its one text sub-config, else the config itself (a text model's)."""
    if fn.name == "to_dict" and not args and not kwargs:
        return config_dict(st, fn.config, depth)
    if fn.name == "get_text_config" and not args:
        fields = st.fields(fn.config)
        subs = [v for k in _TEXT_CONFIGS if isinstance(v := fields.get(k), Instance)]
        if len(subs) <= 1 and not kwargs:
            return subs[0] if subs else fn.config
    return _unknown(f"config.{fn.name}() with these arguments")


def _unknown(why: str) -> Unknown:
    return Unknown(why, kind=UnknownKind.UNSUPPORTED)


def config_dict(st: PathState, config: Instance, depth: int) -> Value:
    """PretrainedConfig.to_dict(): its attributes as a dict, sub-configs as dicts."""
    if depth <= 0:
        return Unknown("to_dict() of a deeply nested config", kind=UnknownKind.BUDGET)
    fields: dict[str, Value] = {}
    for k, v in st.fields(config).items():
        if k == heterogeneous.SPEC:  # written as transformers serialises it
            layered = heterogeneous.serialised(st, v)
            if layered is not None:
                fields["per_layer_config"] = layered
            continue
        if isinstance(v, Instance) and v.cls is None and v.label == "config":
            v = config_dict(st, v, depth - 1)
        fields[k] = v
    return str_dict(fields)
