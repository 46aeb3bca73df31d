"""Constructing objects: classes, records (dataclasses, msgspec), enums, annotations."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, cast

from routescope.analysis.engine.base import Ctx, EngineBase, Paths
from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.containers import new_tuple, str_dict
from routescope.analysis.engine.imports import MODULE_STMT_STEPS
from routescope.analysis.engine.mappings import DictOperation, is_dict_class
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
from routescope.analysis.library import records, validators
from routescope.analysis.library.nn_module import MODULE_BASES


class ConstructMixin(EngineBase):
    def construct(
        self,
        st: PathState,
        cls: ClassVal,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST | None,
    ) -> Paths:
        if cls.is_enum:
            return [(st, self._enum_lookup(cls, args))]
        hook = self.construct_hooks.get(cls)
        if hook is not None:
            return cast(Paths, hook(st, args, kwargs, node))
        inst = Instance(cls, {}, cls.qualname.split(":")[-1])
        if cls in self.not_built or (
            self.only_module is not None
            and cls is not self.only_module
            and any(b in MODULE_BASES for b in cls.external_bases())
        ):
            self.partly_built(inst)
            return [(st, inst)]  # built separately (the model body while running the model's init)
        if (
            records.is_dataclass(cls)
            or any(d.endswith("NamedTuple") for d in cls.external_bases())
            or records.is_struct(cls)
        ):
            init_vars = self.dataclass_init(cls, inst, args, kwargs)
            checks = validators.of(cls) if records.is_dataclass(cls) else validators.NONE
            live: Paths = [(st, inst)]
            for check in checks.model_before:
                live = self._then(live, self._check_arguments, cls, inst, args, kwargs, check, node)
            for name in self._validated_fields(cls, args, kwargs) if checks.fields else ():
                for check in checks.of_field(name):
                    live = self._then(live, self._check_field, cls, inst, name, check, node)
            post = cls.lookup("__post_init__")
            if isinstance(post, FunctionVal):
                live = self._then(live, self._run, post.bind(inst), init_vars, node)
            for check in checks.model_after:  # (what one returns is not kept: the instance is)
                info = [_info("")] if check.wants_info else []
                live = self._then(live, self._run, check.fn.bind(inst), info, node)
            return [(s, inst if s.raising is None else got) for s, got in live]
        if any(b in TENSOR_BASES for b in cls.external_bases()) and _new_takes_data(cls):
            # a tensor subclass (vLLM's BasevLLMParameter(Parameter): `__new__(cls, data)`
            # makes the tensor of `data`, the first argument): it is that tensor
            data = self.resolved(kwargs["data"] if "data" in kwargs else args[0] if args else
                                 Const(None))  # fmt: skip
            if isinstance(data, Tensor):
                self.tensor_data[id(inst)] = data
                self._memo_keep.append(inst)
        init = cls.lookup("__init__")
        if is_dict_class(cls):  # it holds a dict: dict(*args, **kwargs) unless it says more
            data = self.new_dict_instance(inst)
            if not isinstance(init, FunctionVal):
                DictOperation(self, data, "__init__").call_with(st, args, kwargs)
                return [(st, inst)]
        if isinstance(init, FunctionVal):
            # an object of a class the rules build whole (a gate that is a linear layer): its
            # construction runs through the opaque code it calls (its base's constructor sets
            # what its own code reads: vLLM 0.34.0 router/gate_linear.py:115 reads the
            # `quant_method` LinearBase sets at linear.py:294-295, opaque in the rules)
            whole = 1 if self.facts.built_whole and self.facts.is_built_whole(cls.qualname) else 0
            self.whole += whole
            try:
                outs = self.invoke(st, init.bind(inst), args, kwargs, node)
            finally:
                self.whole -= whole
            outs = self.join(cls.qualname, outs, 1)
            return [
                (s, v if s.raising is not None else inst) for s, v in self.returned(st, outs, "")
            ]
        return [(st, inst)]

    def _then(self, live: Paths, step: Callable[..., Paths], *args: Any) -> Paths:
        """The next step of building an object, on each path that has not raised."""
        out: Paths = []
        for s, v in live:
            out.extend([(s, v)] if s.raising is not None else step(s, *args))
        return out

    def _run(
        self, st: PathState, fn: FunctionVal, args: list[Value], node: ast.AST | None
    ) -> Paths:
        """A method the building runs (__post_init__, a validator): its paths, those that
        raised carrying their exception on."""
        return self.returned(st, self.invoke(st, fn, args, {}, node), "")

    def _validated_fields(
        self, cls: ClassVal, args: list[Value], kwargs: dict[str, Value]
    ) -> list[str]:
        """The fields pydantic validates, in order: those the call gives, and those whose
        default asks to be (`Field(validate_default=True)`)."""
        names = record_fields(cls)
        return [
            n
            for i, n in enumerate(names)
            if i < len(args)
            or n in kwargs
            or cls.lookup(f"{records.VALIDATE_DEFAULT}{n}") is not None
        ]

    def _check_arguments(
        self,
        st: PathState,
        cls: ClassVal,
        inst: Instance,
        args: list[Value],
        kwargs: dict[str, Value],
        v: validators.Validator,
        node: ast.AST | None,
    ) -> Paths:
        """A "before" (or "wrap") model validator on the arguments (pydantic's ArgsKwargs):
        where it hands them back unchanged the fields stand; where it returns anything else,
        the fields the call gave are not told (the arguments it made are not read)."""
        made = {"args": new_tuple(args), "kwargs": str_dict(kwargs)}
        data = Instance(None, made, "pydantic_core.ArgsKwargs")  # (its class: isinstance_of)
        handed: list[Value] = [data]
        if v.mode == "wrap":
            handed.append(_handler(v))
        if v.wants_info:
            handed.append(_info(""))
        out: Paths = []
        for s, got in self._run(st, v.fn.bind(cls), handed, node):
            if s.raising is None and self.resolved(got) is not data:
                why = Unknown(f"the arguments as {v.fn.qualname} returned them",
                              kind=UnknownKind.UNSUPPORTED)  # fmt: skip
                for name in self._validated_fields(cls, args, kwargs):
                    self.set_attribute(s, inst, name, why)
            out.append((s, inst if s.raising is None else got))
        return out

    def _check_field(
        self,
        st: PathState,
        cls: ClassVal,
        inst: Instance,
        name: str,
        v: validators.Validator,
        node: ast.AST | None,
    ) -> Paths:
        """One field validator on the field's value: what it returns is the field's value."""
        value = st.fields(inst).get(name)
        if value is None:  # an init-only variable: not a field of the instance
            return [(st, inst)]
        args = [value]
        if v.mode == "wrap":
            args.append(_handler(v))
        if v.wants_info:
            args.append(_info(name))
        out: Paths = []
        for s, got in self._run(st, v.fn.bind(cls), args, node):
            if s.raising is None:
                self.set_attribute(s, inst, name, got)
            out.append((s, inst if s.raising is None else got))
        return out

    def dataclass_init(
        self, cls: ClassVal, inst: Instance, args: list[Value], kwargs: dict[str, Value]
    ) -> list[Value]:
        """The fields a dataclass's generated __init__ sets from `args` and `kwargs` (else
        their defaults); returns its init-only variables (InitVar fields), in order, which
        Python hands to __post_init__ instead of storing them."""
        names = record_fields(cls)
        init_vars: list[Value] = []
        for i, name in enumerate(names):
            target = {} if _is_init_var(cls, name) else inst.fields
            if i < len(args):
                target[name] = args[i]
            elif name in kwargs:
                target[name] = kwargs[name]
            else:
                self._field_default(cls, target, name)
            if target is not inst.fields:
                init_vars.append(target[name])
        return init_vars

    def _field_default(self, cls: ClassVal, target: dict[str, Value], name: str) -> None:
        """A field left out of the call: its default, or what its default factory makes."""
        default = cls.lookup(name)
        if isinstance(default, records.FieldDefault) and default.factory is not None:
            made = self.call(PathState(envs=[{}]), default.factory, [], {}, None)
            target[name] = (
                made[0][1]
                if len(made) == 1
                else Unknown(f"{name} factory", kind=UnknownKind.UNSUPPORTED)
            )
            return
        if isinstance(default, records.FieldDefault):
            default = default.default
        if default is not None and not isinstance(default, FunctionVal):
            target[name] = default
        else:
            target[name] = Unknown(
                f"dataclass field {name} without default", kind=UnknownKind.INPUT
            )

    def _enum_lookup(self, cls: ClassVal, args: list[Value]) -> Value:
        if not args:
            return Unknown("enum()", kind=UnknownKind.UNSUPPORTED)
        arg = args[0]
        if isinstance(arg, EnumMember):
            return arg
        if isinstance(arg, Const):
            for m in cls.attrs.values():
                if (
                    isinstance(m, EnumMember)
                    and isinstance(m.value, Const)
                    and m.value.value == arg.value
                ):
                    got = EnumMember(m.cls, m.name, Const(m.value.value, arg.origins))
                    got.origins = arg.origins  # (what compares it keeps where it came from)
                    return got
            return Unknown(
                f"{cls.qualname} has no member with value {arg.value!r}", kind=UnknownKind.ABSENT
            )
        return Unknown(f"{cls.qualname}(unknown)", arg.origins, kind=UnknownKind.UNSUPPORTED)

    def type_hints(self, cls: ClassVal) -> Value:
        """`typing.get_type_hints(cls, include_extras=True)`: every field's annotation evaluated
        in its class's module (once per class; a string annotation is parsed first)."""
        hints: dict[str, Value] = {}
        for c in reversed(cls.mro()):
            for name in list(c.annotations):
                hints[name] = self.annotation(c, name)
        return str_dict(hints)

    def annotation(self, cls: ClassVal, name: str) -> Value:
        ann = cls.annotations[name]
        if isinstance(ann, Value):
            return ann
        value: Value = Unknown(f"annotation of {name}", kind=UnknownKind.OPAQUE)
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                ann = None  # type: ignore[assignment]
        if cls.module is not None and ann is not None:
            mod = cls.module
            self.ctx.append(Ctx(mod, mod.relpath, f"{cls.qualname} annotations"))
            self.budget.push(MODULE_STMT_STEPS, f"the annotation of {name} took too long")
            try:
                paths = self.ev(PathState(envs=[mod.globals]), ann)
                if len(paths) == 1:
                    # what it built (`NS("exec.moe")` sets its fields in __init__) is kept,
                    # as a class body's evaluation is: it is read on other paths later
                    self.commit(paths[0][0])
                    value = paths[0][1]
            except BudgetExceeded:
                pass
            finally:
                self.budget.pop()
                self.ctx.pop()
        cls.annotations[name] = value
        return value


def record_fields(cls: ClassVal) -> list[str]:
    """A record class's fields in order: its bases' first, each where first declared."""
    names: list[str] = []
    for c in reversed(cls.mro()):
        for key in c.attrs:
            if key.startswith("__field__") and key[9:] not in names:
                names.append(key[9:])
    return names


_HANDLER = cast(ast.Lambda, ast.parse("lambda value, *rest: value", mode="eval").body)


def _handler(v: validators.Validator) -> FunctionVal:
    """The handler a "wrap" validator is handed: the validation it wraps, which gives back
    what it is handed (pydantic's type coercion is not modelled)."""
    return FunctionVal(f"{v.fn.qualname}.<handler>", _HANDLER, v.fn.module)


def _info(field: str) -> Instance:
    """pydantic's ValidationInfo as a validator that takes one reads it: the field's name;
    the fields validated before it and the validation context are not told."""
    unknown = Unknown("pydantic's ValidationInfo", kind=UnknownKind.OPAQUE)
    return Instance(None, {"field_name": Const(field or None), "data": unknown,
                           "context": unknown, "config": unknown, "mode": Const("python")},
                    "ValidationInfo")  # fmt: skip


def _is_init_var(cls: ClassVal, name: str) -> bool:
    """Whether the field is annotated `InitVar[...]` (dataclasses' init-only variable)."""
    for c in cls.mro():
        ann = c.annotations.get(name)
        if ann is not None:
            head = ann.value if isinstance(ann, ast.Subscript) else ann  # `InitVar[int]`
            # InitVar or dataclasses.InitVar, named as such, as dataclasses itself tells one
            # (`int | dc.InitVar`, whose source also ends in InitVar, is an ordinary field)
            return (isinstance(head, ast.Name) and head.id == "InitVar") or (
                isinstance(head, ast.Attribute) and head.attr == "InitVar"
            )
    return False


def _new_takes_data(cls: ClassVal) -> bool:
    """Whether a tensor subclass is made from its first argument, `data`: no __new__ of its
    own (torch's: Parameter(data)), or one whose first parameter after cls is named data."""
    new = cls.lookup("__new__")
    node = getattr(new, "node", None)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return new is None
    params = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
    return len(params) >= 2 and params[1] == "data"
