"""pydantic's validators on a record class: which run when an instance is built, and in what
order.

Building a pydantic dataclass runs, in this order (pydantic 2, "Validators" and "Dataclasses"
in its documentation): the "before" and "wrap" model validators on the arguments; each field's
validators on the value given for it (a default is validated only where the field asks,
`Field(validate_default=True)`); `__post_init__`; then the "after" model validators on the
instance. A field's "before" and "wrap" validators run in the reverse order of their
definition, its "after" and "plain" ones in order. A subclass's method of the same name
replaces its base's validator, as any method does. A validator is told from its decorator:
pydantic's `model_validator(mode=...)` or `field_validator(*fields, mode=...)`, named by the
engine when it defined the method; its mode and fields are read from the decorator's call.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass

from routescope.analysis.engine.values import ClassVal, FunctionVal

MODEL = frozenset({"pydantic.model_validator", "pydantic.functional_validators.model_validator"})
FIELD = frozenset({"pydantic.field_validator", "pydantic.functional_validators.field_validator"})
MODES = frozenset({"before", "after", "wrap", "plain"})


@dataclass(frozen=True)
class Validator:
    fn: FunctionVal
    mode: str  # before, after, wrap or plain
    fields: tuple[str, ...]  # a field validator's fields ("*": every field); () for a model's
    wants_info: bool  # it takes pydantic's ValidationInfo after the value (and the handler)


@dataclass(frozen=True)
class Validators:
    model_before: tuple[Validator, ...] = ()  # "before" and "wrap": run first
    fields: tuple[Validator, ...] = ()  # in definition order
    model_after: tuple[Validator, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.model_before or self.fields or self.model_after)

    def of_field(self, name: str) -> list[Validator]:
        """The validators of one field, in the order they run."""
        mine = [v for v in self.fields if name in v.fields or "*" in v.fields]
        outer = [v for v in mine if v.mode in ("before", "wrap")]
        inner = [v for v in mine if v.mode in ("after", "plain")]
        return [*reversed(outer), *inner]


NONE = Validators()

_CACHE: weakref.WeakKeyDictionary[ClassVal, Validators] = weakref.WeakKeyDictionary()


def of(cls: ClassVal) -> Validators:
    """The validators building an instance of `cls` runs (none for a class without any)."""
    known = _CACHE.get(cls)
    if known is not None:
        return known
    names: list[str] = []
    for c in reversed(cls.mro()):  # definition order, bases first
        names.extend(n for n in c.attrs if n not in names)
    before: list[Validator] = []
    fields: list[Validator] = []
    after: list[Validator] = []
    for name in names:
        fn = cls.lookup(name)
        v = _validator(fn) if isinstance(fn, FunctionVal) else None
        if v is None:
            continue
        if v.fields:
            fields.append(v)
        elif v.mode in ("before", "wrap"):
            before.append(v)
        else:
            after.append(v)
    found = Validators(tuple(reversed(before)), tuple(fields), tuple(after))
    _CACHE[cls] = found
    return found


def _validator(fn: FunctionVal) -> Validator | None:
    kind = "model" if MODEL & set(fn.decorators) else "field" if FIELD & set(fn.decorators) else ""
    if not kind or not isinstance(fn.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    call = next(
        (
            d
            for d in fn.node.decorator_list
            if isinstance(d, ast.Call) and _last_name(d.func) == f"{kind}_validator"
        ),
        None,
    )
    if call is None:
        return None
    mode = "after"
    for kw in call.keywords:
        if kw.arg == "mode" and isinstance(kw.value, ast.Constant) and kw.value.value in MODES:
            mode = str(kw.value.value)
    names: tuple[str, ...] = ()
    if kind == "field":
        names = tuple(a.value for a in call.args if isinstance(a, ast.Constant)
                      and isinstance(a.value, str))  # fmt: skip
        if len(names) != len(call.args):
            names = ("*",)  # fields named other than literally: every field may be one
    params = len(fn.node.args.posonlyargs) + len(fn.node.args.args)
    # a field's: (cls, value[, handler][, info]); a model's: (self[, info]) after, (cls,
    # data[, handler][, info]) before
    plain = 3 if mode == "wrap" else 1 if kind == "model" and mode in ("after", "plain") else 2
    return Validator(fn, mode, names, params > plain)


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""
