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

REGISTERS = {"register_buffer", "register_parameter", "add_module", "register_module"}


CONTEXT_VAR = "ContextVar"


class ContextVarMethod(Value):
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

    def __init__(self, target: Instance) -> None:
        super().__init__()
        self.target = target


class Partial(Value):
    """functools.partial(fn, *args, **kwargs)."""

    def __init__(self, fn: Value, args: list[Value], kwargs: dict[str, Value]) -> None:
        super().__init__()
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


class ConfigToDict(Value):
    """`config.to_dict` of the checkpoint's config (a transformers PretrainedConfig)."""

    def __init__(self, config: Instance) -> None:
        super().__init__()
        self.config = config


def _unknown(why: str) -> Unknown:
    return Unknown(why, kind=UnknownKind.UNSUPPORTED)


def config_dict(st: PathState, config: Instance, depth: int) -> Value:
    """PretrainedConfig.to_dict(): its attributes as a dict, sub-configs as dicts."""
    if depth <= 0:
        return Unknown("to_dict() of a deeply nested config", kind=UnknownKind.BUDGET)
    fields: dict[str, Value] = {}
    for k, v in st.fields(config).items():
        if isinstance(v, Instance) and v.cls is None and v.label == "config":
            v = config_dict(st, v, depth - 1)
        fields[k] = v
    return str_dict(fields)
