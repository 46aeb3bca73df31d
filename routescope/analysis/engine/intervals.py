"""What a path knows of an integer count (the tokens in a batch) from the branches it took.

A count is known from below (`AtLeast`: at least one token). Comparing it with a constant the
bound does not decide gives `Compared`, an unknown that remembers the count, the operator and
the constant; a branch on it (an `if`, a ternary, a `while`, an `and`/`or` operand that forks,
`not`) bounds the count on each way it forks into: `PathState.bounds`, by the count's
identity, its least and greatest value. The same comparison made again on that way, or any
comparison the bounds decide, is then decided: `n <= 256` taken true makes a later
`n <= 256` true and `n > 512` false on that path, as in the program that runs it, where the
count is one number. (An `assert` does not bound: an undecided one has no raising way here,
and generator bodies run eagerly, so an assert the program never reaches could. A comparison
stored in a name is bounded where it is branched on, but not decided again by later bounds (an
`and` whose other operands are true, `ready and n <= 256 and safe()`, is the comparison itself);
a chain of comparisons is a `Compared` only when one link is undecided.)

Only `Count`s are bounded: an integer that stands for one number for the whole trace (one
object is made per batch). Other unknowns are not: one object may stand for a different
number each time round a loop. The exception is a joined value (kind JOINED: what a variable
or field held where paths that disagreed on it were joined): one object stands for what that
variable held there, one value on any run, so a branch on its truth (`if x`, `if not x`) is
remembered on each way it forks into (`remember_truth`, under the negated identity) and the
same test is decided on that way after: a comprehension whose every item calls
`is_mm_prefix_lm(supports_multimodal)` forks once, not once per item."""

from __future__ import annotations

import ast

from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.tensors import Count
from routescope.analysis.engine.values import (
    AtLeast,
    Const,
    Unknown,
    UnknownKind,
    Value,
    merge_origins,
)

# id of a count -> (the count, its least value, its greatest or None): PathState.bounds
Bounds = dict[int, tuple[Value, int, int | None]]

_FLIPPED: dict[type, type] = {
    ast.Lt: ast.Gt,
    ast.Gt: ast.Lt,
    ast.LtE: ast.GtE,
    ast.GtE: ast.LtE,
    ast.Eq: ast.Eq,
    ast.NotEq: ast.NotEq,
}
_NEGATED: dict[type, type] = {
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}


class Compared(Unknown):
    """`count OP c`, undecided: what a branch on it tells of the count."""

    __slots__ = ("c", "op", "subject")

    def __init__(self, subject: Count, op: type, c: int, origins: tuple[str, ...]) -> None:
        super().__init__(subject.reason, origins, kind=subject.kind)
        self.subject, self.op, self.c = subject, op, c

    def negated(self) -> Compared:
        """`not (count OP c)`."""
        return Compared(self.subject, _NEGATED[self.op], self.c, self.origins)


def range_of(bounds: Bounds | None, a: AtLeast) -> tuple[int | float, int | None]:
    """The least and greatest value `a` may have on a path with these bounds (None: no most)."""
    known = bounds.get(id(a)) if bounds else None
    if known is not None and known[0] is a:
        return max(a.low, known[1]), known[2]
    return a.low, None


def bounded_compare(
    op: ast.cmpop,
    a: Value,
    b: Value,
    bounds: Bounds | None,
    origins: tuple[str, ...] | None = None,
) -> Value | None:
    """`x OP c` for x known from below (and, on this path, perhaps from above): decided when
    every such x answers alike; a `Compared` when x is a count and c an integer; else None."""
    if isinstance(b, AtLeast) and not isinstance(a, AtLeast) and type(op) in _FLIPPED:
        return bounded_compare(_FLIPPED[type(op)](), b, a, bounds, merge_origins(a, b))
    if (
        not (isinstance(a, AtLeast) and isinstance(b, Const))
        or isinstance(b.value, bool)
        or not isinstance(b.value, (int, float))
    ):
        return None
    low, high = range_of(bounds, a)
    got = _decided(type(op), b.value, low, high)
    if got is not None:
        return Const(got, a.origins)
    if isinstance(a, Count) and isinstance(b.value, int) and type(op) in _NEGATED:
        return Compared(a, type(op), b.value, merge_origins(a, b) if origins is None else origins)
    return None


def _decided(op: type, c: int | float, low: int | float, high: int | None) -> bool | None:
    below, above = c < low, high is not None and c > high  # c outside the range
    if op in (ast.Eq, ast.NotEq):
        same = False if below or above else (True if low == high == c else None)
        return same if same is None or op is ast.Eq else not same
    if op is ast.Gt:  # x > c
        return True if below else (False if high is not None and high <= c else None)
    if op is ast.GtE:
        return True if c <= low else (False if above else None)
    if op is ast.Lt:
        return False if c <= low else (True if above else None)
    if op is ast.LtE:
        return False if below else (True if high is not None and high <= c else None)
    return None


def refine(st: PathState, v: Value, truth: bool) -> None:
    """On `st`, the branch on `v` went `truth`: bound the count it compared accordingly."""
    if not isinstance(v, Compared):
        return
    op = v.op if truth else _NEGATED[v.op]
    low, high = range_of(st.bounds, v.subject)
    c = v.c
    if op is ast.Lt:
        high = c - 1 if high is None else min(high, c - 1)
    elif op is ast.LtE:
        high = c if high is None else min(high, c)
    elif op is ast.Gt:
        low = max(low, c + 1)
    elif op is ast.GtE:
        low = max(low, c)
    elif op is ast.Eq:
        low, high = c, c
    elif op is ast.NotEq and c == low:
        low = c + 1
    elif op is ast.NotEq and c == high:
        high = c - 1
    if not isinstance(low, int) or (high is not None and low > high):
        return  # (a comparison made on another way, whose bounds this path's contradict)
    st.bounds = {**st.bounds, id(v.subject): (v.subject, low, high)}  # (shared until written)


def same_bounds(a: Bounds, b: Bounds) -> bool:
    """Do two paths know the same of every count (a result computed under `a` holds under `b`)?
    The truths of joined values aside: two ways that differ only in those are alike, and one
    stands for both knowing neither (`forget_truths`); a computation that looked one up is
    taken only where it is the same (`Reads.same_truths`)."""
    return a is b or {k: r[1:] for k, r in a.items() if k > 0} == {
        k: r[1:] for k, r in b.items() if k > 0
    }


def joined_bounds(states: list[PathState]) -> Bounds:
    """What every one of `states` knows of a count: the widest of their ranges."""
    first = states[0].bounds
    out: Bounds = {}
    for key, (subject, low, high) in first.items():
        ranges = [s.bounds.get(key) for s in states[1:]]
        if any(r is None or r[0] is not subject for r in ranges):
            continue
        lows = [low, *(r[1] for r in ranges if r is not None)]
        highs = [high, *(r[2] for r in ranges if r is not None)]
        if key < 0 and (min(lows) != low or max(highs) != high):  # type: ignore[type-var]
            continue  # (a joined value's truth the ways disagree on: not known)
        out[key] = (subject, min(lows), None if None in highs else max(highs))  # type: ignore[type-var]
    return out


class Negation(Unknown):
    """`not x` of a joined unknown `x`: a branch on it tells `x`'s truth."""

    __slots__ = ("operand",)

    def __init__(self, operand: Unknown) -> None:
        super().__init__(operand.reason, operand.origins, kind=operand.kind)
        self.operand = operand


def remember_truth(st: PathState, v: Value, truth: bool) -> None:
    """On `st`, a branch on `v` went `truth`: remember it where `v` is a joined value."""
    if isinstance(v, Negation):
        v, truth = v.operand, not truth
    if type(v) is Unknown and v.kind is UnknownKind.JOINED:
        st.bounds = {**st.bounds, -id(v): (v, int(truth), int(truth))}


def forget_truths(st: PathState, other: Bounds) -> None:
    """`st` stands for itself and a way with bounds `other`: what a branch told of a joined
    value's truth on one of them only is not known of both."""
    drop = [k for k, r in st.bounds.items() if k < 0 and other.get(k) != r]
    if drop:
        st.bounds = {k: r for k, r in st.bounds.items() if k not in drop}


def low_of(v: Value) -> int | None:
    """The least value of an integer known from below (an AtLeast) or known (an int)."""
    if isinstance(v, AtLeast):
        return v.low
    return v.value if isinstance(v, Const) and type(v.value) is int else None


def bounded(low: int, operands: list[Value]) -> AtLeast:
    """An integer at least `low`, computed from `operands`, one at least not known: it says
    what the first such one was (an environment variable, a joined value, the tokens: a fork
    on the bound names what decides it)."""
    why = next(v for v in operands if isinstance(v, Unknown))
    out = AtLeast(low, why.reason, merge_origins(*operands))
    out.kind = why.kind
    return out


def bounded_binop(op: ast.operator, a: Value, b: Value) -> AtLeast | None:
    """A lower bound of `a op b` where one operand is an integer known from below and the
    other an int or another such, and the result grows with them: `+`; `-` of a known int;
    `*` where both bounds are at least 0; `//` by a known positive int. (`n * 2 + 1` of a
    batch of at least one token is at least 3: the workspace it sizes must grow from 0.)
    None where no bound follows."""
    la, lb = low_of(a), low_of(b)
    if la is None or lb is None or not (isinstance(a, AtLeast) or isinstance(b, AtLeast)):
        return None
    if isinstance(op, ast.Add):
        return bounded(la + lb, [a, b])
    if isinstance(op, ast.Sub) and isinstance(b, Const):
        return bounded(la - lb, [a, b])
    if isinstance(op, ast.Mult) and la >= 0 and lb >= 0:
        return bounded(la * lb, [a, b])
    if isinstance(op, ast.FloorDiv) and isinstance(b, Const) and lb > 0:
        return bounded(la // lb, [a, b])
    return None


class SomeBool(Unknown):
    """A bool the facts do not decide (what isinstance() answers of a value whose class is not
    known, `not x` of an unknown): Python's `&` and `|` on bools are then decided by a known
    side (`False & b` is False, `True | b` is True), as `and` and `or` are."""

    __slots__ = ()


def some_bool(u: Unknown) -> SomeBool:
    return SomeBool(u.reason, u.origins, kind=u.kind)


def _is_bool(v: Value) -> bool:
    if isinstance(v, Const):
        return type(v.value) is bool
    return isinstance(v, (SomeBool, Compared, Negation))


def bool_binop(op: ast.operator, a: Value, b: Value) -> Value | None:
    """`a & b`, `a | b`, `a ^ b` of two bools, one or both unknown (None: not that)."""
    if not isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)) or not (_is_bool(a) and _is_bool(b)):
        return None
    for v in (a, b):
        if (
            isinstance(v, Const)
            and not isinstance(op, ast.BitXor)
            and v.value is isinstance(op, ast.BitOr)
        ):
            return Const(v.value, v.origins)  # False & b, True | b
    u = next(v for v in (a, b) if isinstance(v, Unknown))
    return SomeBool(u.reason, merge_origins(a, b), kind=u.kind)
