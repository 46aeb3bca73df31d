"""Which handler catches which exception."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    External,
    Instance,
    Value,
)


class MadeException(External):
    """A builtin exception made with a message every part of which is known
    (`ValueError(f"... = {size} is not divisible by {block_n}.")`): it stands for its class,
    as External does, and keeps the message as Python would render it."""

    __slots__ = ("said",)

    def __init__(self, name: str, said: str) -> None:
        super().__init__(name)
        self.said = said

    def __repr__(self) -> str:
        return f"MadeException({self.name}: {self.said})"


class ExceptionsMixin(EngineBase):
    def exception_matches(
        self, exc: Value | None, handler: ast.ExceptHandler, st: PathState
    ) -> bool | None:
        """Whether `handler` catches `exc`: True, False, or None when the exception's class
        is not known well enough to say (an external class may derive from anything)."""
        if handler.type is None:
            return True
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        wanted = [self.source_text(t).split(".")[-1] for t in types]
        chain = exception_chain(exc)
        if chain is None:
            return None
        for name in chain:
            for w in wanted:
                if name == w or builtin_subclass(name, w):
                    return True
        # no match: certain when the whole ancestry is known (builtins and framework classes)
        return False if all_known(exc) else None


def builtin_exception(name: str) -> type[BaseException] | None:
    import builtins

    cls = getattr(builtins, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None


def builtin_subclass(name: str, wanted: str) -> bool:
    a, b = builtin_exception(name), builtin_exception(wanted)
    return a is not None and b is not None and issubclass(a, b)


def exception_chain(exc: Value | None) -> list[str] | None:
    """The short names of an exception's class and its ancestors, or None when unknown."""
    if isinstance(exc, External):
        return [exc.name.split(".")[-1]]
    cls = exc.cls if isinstance(exc, Instance) else exc if isinstance(exc, ClassVal) else None
    if cls is None:
        return None
    names = [c.qualname.split(":")[-1].split(".")[-1] for c in cls.mro()]
    names.extend(b.split(".")[-1] for b in cls.external_bases())
    return names


def all_known(exc: Value | None) -> bool:
    """A framework exception class whose external bases are all builtin exceptions."""
    cls = exc.cls if isinstance(exc, Instance) else exc if isinstance(exc, ClassVal) else None
    if cls is None:
        return isinstance(exc, External) and builtin_exception(exc.name) is not None
    return all(builtin_exception(b.split(".")[-1]) is not None for b in cls.external_bases())
