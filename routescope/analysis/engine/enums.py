"""Enum members as Python's enum module makes and combines them: the value `auto()` gives each
kind of enum, the truth of a member, and the flags of a Flag or IntFlag (`A | B`, `A & B`,
`A in B`).

The kind comes from the enum's library bases: an IntFlag is an int and a Flag; a Flag's members
combine by their bits; an IntEnum's, IntFlag's or StrEnum's member is also its value (equal to
it, a dict key as it, true as it is).
"""

from __future__ import annotations

import ast

from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    Unknown,
    UnknownKind,
    Value,
)

# (values.truth holds their union, which it cannot import from here: a test keeps them equal)
FLAG_BASES = frozenset({"enum.Flag", "enum.IntFlag"})
INT_BASES = frozenset({"enum.IntEnum", "enum.IntFlag", "int"})
STR_BASES = frozenset({"enum.StrEnum", "str"})


def kind(cls: ClassVal) -> str:
    """ "flag" (Flag, IntFlag), "str" (StrEnum, a str mix-in), "int" (IntEnum, an int mix-in)
    or "plain"."""
    bases = cls.external_bases()
    if any(b in FLAG_BASES for b in bases):
        return "flag"
    if any(b in STR_BASES for b in bases):
        return "str"
    return "int" if any(b in INT_BASES for b in bases) else "plain"


AUTO = "enum.auto()"  # what `auto()` evaluates to (library/python.py): a marker


def is_auto(v: Value) -> bool:
    return isinstance(v, External) and v.name == AUTO


def auto_value(cls: ClassVal, name: str, before: list[Value]) -> Value:
    """What `auto()` gives the member `name`, after the members `before` (their values, in
    order): a StrEnum's the name in lower case; a Flag's the next power of two above the
    highest value so far; any other's the highest value so far plus one (1 for the first)."""
    k = kind(cls)
    if k == "str":
        return Const(name.lower())
    ints = [v.value for v in before if isinstance(v, Const) and type(v.value) is int]
    if k == "flag":
        return Const(2 ** max(ints).bit_length() if ints else 1)
    if not before:
        return Const(1)
    if len(ints) == len(before):
        return Const(max(ints) + 1)  # (Python sorts the values so far and takes the last)
    return Unknown(f"auto() after values that are not ints ({name})", kind=UnknownKind.UNSUPPORTED)


def flag_bits(v: Value, cls: ClassVal) -> int | None:
    """The bits of a member of the flag enum `cls` (an int for an IntFlag: its bits too)."""
    if isinstance(v, EnumMember) and v.cls is cls:
        return v.value.value if isinstance(v.value, Const) and type(v.value.value) is int else None
    if isinstance(v, Const) and type(v.value) is int and "enum.IntFlag" in cls.external_bases():
        return v.value
    return None


def member(cls: ClassVal, bits: int) -> EnumMember:
    """The member of flag enum `cls` with these bits: a canonical one where one has them, else
    the combination (named as Python 3.11+ names it: its members' names joined by `|`)."""
    members = [m for m in cls.attrs.values() if isinstance(m, EnumMember)]
    for m in members:
        if isinstance(m.value, Const) and m.value.value == bits:
            return m
    parts = [
        m.name
        for m in members
        if isinstance(m.value, Const)
        and type(m.value.value) is int
        and m.value.value
        and m.value.value & (m.value.value - 1) == 0
        and bits & m.value.value
    ]
    return EnumMember(cls, "|".join(parts), Const(bits))


def flag_binop(op: ast.operator, a: Value, b: Value) -> Value | None:
    """`a | b`, `a & b`, `a ^ b` of a flag enum's members: a member; None for anything else."""
    cls = a.cls if isinstance(a, EnumMember) else b.cls if isinstance(b, EnumMember) else None
    if (
        cls is None
        or kind(cls) != "flag"
        or not isinstance(op, (ast.BitOr, ast.BitAnd, ast.BitXor))
    ):
        return None
    x, y = flag_bits(a, cls), flag_bits(b, cls)
    if x is None or y is None:
        return None
    bits = x | y if isinstance(op, ast.BitOr) else x & y if isinstance(op, ast.BitAnd) else x ^ y
    return member(cls, bits)


def flag_contains(item: Value, container: EnumMember) -> bool | None:
    """`item in container` for a flag enum's members: whether its bits are all set there
    (None: not a flag, or bits not told; Python raises TypeError for a non-member there)."""
    if kind(container.cls) != "flag":
        return None
    x, y = flag_bits(item, container.cls), flag_bits(container, container.cls)
    if x is None or y is None:
        return None
    return x & y == x


def as_value(v: Value) -> Value:
    """A member of an enum mixed with int or str in arithmetic: its value (any other value, or
    a plain enum's member: itself)."""
    if isinstance(v, EnumMember) and kind(v.cls) != "plain" and isinstance(v.value, Const):
        return Const(v.value.value, v.origins)
    return v
