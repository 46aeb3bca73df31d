"""Random small programs over the Python subset the trace engine claims, for differential
testing against CPython (see differential.py).

A program is the source of 1-3 modules of a package `fw` (fw/main.py always, fw/other.py and
fw/__init__.py sometimes) with an entry `fw.main:main(a, b, c)`, plus for each input a small
domain of values, the inputs the unknown-input check leaves Unknown, and the features (construct
names) the program uses.

Programs are built from hypothesis draws, so a failing one shrinks: every choice shrinks to its
first (simplest) option, counts shrink to their minimum and feature switches to off.

The generator keeps to what CPython runs without surprises: every program terminates (no
recursion, while loops count up to a literal, nothing is mutated while it is iterated), reads
only names it defined on every path, orders only ints, and raises only what it means to raise
(explicit `raise` of builtin exceptions; KeyError/ValueError/IndexError/ZeroDivisionError from
dict, list and int operations only under the `implicit_raise` feature). Anything else CPython
raises (TypeError, NameError, AttributeError, UnboundLocalError) is a bug of this generator,
which the harness reports as such.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

# Input domains by kind. The first value of each is what a domain shrinks to.
ANY_VALUES: tuple[Any, ...] = (0, None, 1, "", True, False, 2, "x")
INT_VALUES: tuple[Any, ...] = (0, 1, 2, -1, 3)
SEQ_VALUES: tuple[Any, ...] = ((), (1,), (0, 2), [2, 1, 3], (1, 1))
DOMAIN_POOLS = {"any": ANY_VALUES, "int": INT_VALUES, "seq": SEQ_VALUES}
INPUTS = ("a", "b", "c")

# dict keys and set members: True, 1 and 1.0 (and False, 0) are one key to Python
KEY_LITS = ('"a"', "1", "True", "1.0", "0", "False", '"b"', "None", "2")
SAFE_KEY_LITS = ('"a"', "1", "0", '"b"', "None", "2")  # no two of them one key to Python
COLLIDING = frozenset({"True", "1.0", "False"})
SCALAR_LITS = ("0", "None", "1", '""', "True", "False", "2", '"x"', '"y"')
INT_LITS = ("0", "1", "2", "3", "-1", "5")
RAISES = ("ValueError", "KeyError", "RuntimeError", "IndexError")
HANDLERS = ("ValueError", "Exception", "KeyError", "LookupError", "RuntimeError",
            "(ValueError, KeyError)", "(IndexError, RuntimeError)")  # fmt: skip

# Every feature a program may be tagged with (what it uses), in one place.
FEATURES = frozenset({
    "if", "elif", "boolops", "truthiness", "chained_compare", "compare", "in", "is",
    "arith", "ternary", "for_literal", "for_range", "for_input", "for_container", "while",
    "break_continue", "functions", "defaults_kwargs", "closures", "nested_functions",
    "lambdas", "classes", "multiple_inheritance", "super", "properties", "class_attrs",
    "class_attr_write", "instance_attr_write", "dataclass", "dataclass_replace", "post_init",
    "dataclass_eq", "dicts", "dict_keys_collide", "lists", "list_mutation", "sets", "try",
    "finally", "raise", "reraise", "cache", "lru_cache", "lru_cache_bounded", "cache_global",
    "module_state", "module_if", "module_loop", "global_write", "imports", "import_module",
    "package_init", "implicit_raise", "early_return", "container_ops",
})  # fmt: skip


# --- program ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    files: tuple[tuple[str, str], ...]  # (path under fw/, source)
    kinds: tuple[str, ...]  # per input: "any" | "int" | "seq"
    domains: tuple[tuple[Any, ...], ...]  # per input: the values it takes
    unknown: tuple[bool, ...]  # per input: Unknown in the unknown-input check
    fixed: tuple[int, ...]  # per input: the domain index it is fixed to when not unknown
    features: frozenset[str]

    def file(self, name: str) -> str:
        return dict(self.files).get(name, "")

    def source(self) -> str:
        parts = []
        for name, text in self.files:
            parts.append(f"# ---- fw/{name}\n{text.rstrip()}\n")
        return "\n".join(parts)

    def describe(self) -> str:
        doms = ", ".join(f"{n}: {list(d)!r}" for n, d in zip(INPUTS, self.domains, strict=True))
        unk = [n for n, u in zip(INPUTS, self.unknown, strict=True) if u]
        rows = zip(INPUTS, self.domains, self.fixed, self.unknown, strict=True)
        fixed = {n: d[i] for n, d, i, u in rows if not u}
        return (f"{self.source()}\n# inputs {doms}\n# unknown-input check: unknown {unk}, "
                f"fixed {fixed}\n# features: {', '.join(sorted(self.features))}\n")  # fmt: skip

    def __repr__(self) -> str:
        return "\n" + self.describe()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # how hypothesis prints an example
        p.text("\n" + self.describe())

    def assignments(self, limit: int = 16, seed: int = 0) -> list[tuple[Any, ...]]:
        """Every assignment of the inputs when there are at most `limit`, else a sample of
        `limit` of them (a fixed one for a given seed and program)."""
        combos = list(itertools.product(*(range(len(d)) for d in self.domains)))
        if len(combos) > limit:
            rng = random.Random(f"{seed}:{self.source()}")
            combos = sorted(rng.sample(combos, limit))
        return [tuple(d[i] for d, i in zip(self.domains, c, strict=True)) for c in combos]

    def consistent(self) -> list[tuple[Any, ...]]:
        """The assignments that agree with the unknown-input check's known inputs."""
        ranges = [range(len(d)) if u else [f] for d, u, f in
                  zip(self.domains, self.unknown, self.fixed, strict=True)]  # fmt: skip
        return [tuple(d[i] for d, i in zip(self.domains, c, strict=True))
                for c in itertools.product(*ranges)]  # fmt: skip


# --- scopes -----------------------------------------------------------------------------------


@dataclass
class ClassSpec:
    name: str
    bases: list[ClassSpec]
    mro: list[ClassSpec] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)  # class attribute -> literal
    init: str = ""  # "" (none), "root" (sets v), "super" (calls super().__init__, may set w)
    sets_w: bool = False
    methods: dict[str, list[str]] = field(default_factory=dict)  # name -> source lines
    props: dict[str, list[str]] = field(default_factory=dict)
    expr: str = ""  # how the code that uses it names it ("Cls", "fw.other.Cls")

    def finds(self, name: str) -> bool:
        return any(name in c.attrs for c in self.mro)

    def has_method(self, name: str) -> bool:
        return any(name in c.methods for c in self.mro)

    def has_prop(self, name: str) -> bool:
        return any(name in c.props for c in self.mro)

    def __repr__(self) -> str:
        return f"ClassSpec({self.name})"


@dataclass
class DCSpec:
    name: str
    fields: list[tuple[str, str | None]]  # (name, default literal or None)
    post_init: bool
    expr: str = ""


@dataclass
class FnSig:
    """Something callable with int arguments that returns an int."""

    expr: str
    params: list[str]  # positional-or-keyword
    defaults: int = 0  # how many trailing params have defaults
    kwonly: list[str] = field(default_factory=list)  # keyword-only, all with defaults
    effect: bool = False  # changes state (a setter, a counter): also usable as a statement


@dataclass
class Var:
    expr: str
    kind: str  # int | scalar | list | dict | set | seq | obj | dc
    rebind: bool = True  # may be assigned (`expr = ...`)
    frozen: list[int] = field(default_factory=lambda: [0])  # >0: iterated now, not mutable
    spec: Any = None  # ClassSpec (obj) or DCSpec (dc)
    items: str = "int"  # a list's items: int | scalar


class Scope:
    def __init__(self, parent: Scope | None = None) -> None:
        self.vars: dict[str, Var] = dict(parent.vars) if parent else {}
        self.fns: list[FnSig] = list(parent.fns) if parent else []
        self.classes: list[ClassSpec] = list(parent.classes) if parent else []
        self.dcs: list[DCSpec] = list(parent.dcs) if parent else []

    def of(self, *kinds: str) -> list[Var]:
        return [v for v in self.vars.values() if v.kind in kinds]

    def add(self, v: Var) -> Var:
        self.vars[v.expr] = v
        return v


@dataclass
class Ctx:
    depth: int = 0
    in_loop: bool = False
    where: str = "main"  # main | helper | module
    returns: Callable[[Scope], str] | None = None  # the value a `return` gives (None: no return)


def indent(lines: Sequence[str], n: int = 1) -> list[str]:
    return [("    " * n + ln) if ln else ln for ln in lines]


def c3(cls: ClassSpec, bases: list[ClassSpec]) -> list[ClassSpec] | None:
    seqs = [list(b.mro) for b in bases] + [list(bases)]
    out = [cls]
    while True:
        seqs = [s for s in seqs if s]
        if not seqs:
            return out
        for s in seqs:
            head = s[0]
            if not any(head in t[1:] for t in seqs):
                break
        else:
            return None  # no consistent order: Python refuses the class
        out.append(head)
        for s in seqs:
            if s[0] is head:
                s.pop(0)


# --- the generator ------------------------------------------------------------------------------

MAX_DEPTH = 2


class Gen:
    def __init__(self, draw: Callable[[Any], Any], allowed: frozenset[str] = FEATURES) -> None:
        self._draw = draw
        self.allowed = allowed
        self.features: set[str] = set()
        self._names = itertools.count()
        self.main_globals: list[str] = []  # main.py globals main declares `global`

    # choices
    def n(self, lo: int, hi: int) -> int:
        return int(self._draw(st.integers(lo, hi)))

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.n(0, len(options) - 1)]

    def form(self, *makers: Callable[[], str]) -> str:
        """One of several ways to write an expression, drawn as `pick` draws (only the one
        drawn is made: each may draw more)."""
        return str(self.pick(makers)())

    def flag(self, feature: str | None = None) -> bool:
        """A switch that shrinks to off; False when `feature` is not allowed."""
        if feature is not None and feature not in self.allowed:
            return False
        return bool(self._draw(st.booleans()))

    def weighted(self, options: Sequence[tuple[int, Any]]) -> Any:
        total = sum(w for w, _ in options)
        at = self.n(0, total - 1)
        for w, opt in options:
            if at < w:
                return opt
            at -= w
        raise AssertionError

    def use(self, *features: str) -> None:
        self.features.update(features)

    def ok(self, feature: str) -> bool:
        return feature in self.allowed

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self._names)}"

    # --- expressions -----------------------------------------------------------------------

    def int_var(self, sc: Scope) -> str | None:
        vs = sc.of("int")
        return self.pick(vs).expr if vs else None

    def int_expr(self, sc: Scope, d: int = 2) -> str:
        opts: list[tuple[int, Callable[[], str]]] = [(3, lambda: self.pick(INT_LITS))]
        if sc.of("int"):
            opts.append((5, lambda: self.int_var(sc) or "0"))
        if d > 0:
            opts.append((3, lambda: self._arith(sc, d)))
            if self.ok("ternary"):
                opts.append((1, lambda: self._ternary(sc, d, self.int_expr)))
            if self.ok("boolops"):
                opts.append((1, lambda: self._int_boolop(sc, d)))
            if sc.fns:
                opts.append((3, lambda: self.call(sc, d)))
            if sc.of("obj"):
                opts.append((3, lambda: self._obj_read(sc)))
            if sc.of("dc"):
                opts.append((2, lambda: self._dc_read(sc)))
            if sc.of("dict"):
                opts.append((2, lambda: self._dict_int(sc, d)))
            if [v for v in sc.of("list") if v.items == "int"]:
                opts.append((1, lambda: self._list_item(sc)))
            if sc.of("list", "dict") and self.ok("container_ops"):
                opts.append((2, lambda: self._container_int(sc, d)))
            if sc.classes and self.ok("class_attrs"):
                opts.append((1, lambda: self._class_attr_read(sc)))
        if sc.of("list", "dict", "set", "seq"):
            opts.append((2, lambda: self._len(sc)))
        return str(self.weighted(opts)())

    def _arith(self, sc: Scope, d: int) -> str:
        self.use("arith")
        form = self.n(0, 4)
        x = self.int_expr(sc, d - 1)
        if form <= 1:
            op = self.pick(("+", "-", "*"))
            return f"({x} {op} {self.int_expr(sc, d - 1)})"
        if form == 2:
            return f"({x} {self.pick(('//', '%'))} {self.pick(('2', '3'))})"
        if form == 3:  # a divisor bounded below by max()/min() of numbers (a chunk size)
            y = self.int_expr(sc, d - 1)
            bound = self.pick((f"max({self.pick(('0', '1', '2'))}, {y})", f"min({y}, 3)",
                               f"-max(1, min({y}, 8))"))  # fmt: skip
            return f"({x} {self.pick(('//', '%'))} {bound})"
        if self.flag("implicit_raise"):
            self.use("implicit_raise")
            return f"({x} // {self.int_expr(sc, 0)})"  # ZeroDivisionError when it is 0
        return f"(-{x})"

    def _ternary(self, sc: Scope, d: int, leaf: Callable[[Scope, int], str]) -> str:
        self.use("ternary")
        return f"({leaf(sc, d - 1)} if {self.cond(sc, d - 1)} else {leaf(sc, d - 1)})"

    def _int_boolop(self, sc: Scope, d: int) -> str:
        self.use("boolops", "truthiness")
        op = self.pick(("or", "and"))
        return f"({self.int_expr(sc, d - 1)} {op} {self.int_expr(sc, d - 1)})"

    def _len(self, sc: Scope) -> str:
        v = self.pick(sc.of("list", "dict", "set", "seq"))
        self.use({"list": "lists", "dict": "dicts", "set": "sets", "seq": "for_input"}[v.kind])
        return f"len({v.expr})"

    def _list_item(self, sc: Scope) -> str:
        v = self.pick([v for v in sc.of("list") if v.items == "int"])
        self.use("lists")
        if self.flag("implicit_raise"):
            self.use("implicit_raise")
            return f"{v.expr}[{self.pick(('0', '-1', '1'))}]"  # IndexError when too short
        return f"({v.expr}[{self.pick(('0', '-1'))}] if {v.expr} else -1)"

    def _container_int(self, sc: Scope, d: int) -> str:
        """An int the builtins and comprehensions make of a list of ints or a dict (whose values
        are ints): sum, max/min with a default, sorted, count, any, a filtered comprehension."""
        ints = [v for v in sc.of("list") if v.items == "int"]
        dicts = sc.of("dict")
        self.use("container_ops")
        lit = self.pick(INT_LITS)
        x = self.fresh("q")
        if dicts and (not ints or self.flag()):
            v = self.pick(dicts).expr
            self.use("dicts")
            return self.form(
                lambda: f"sum({v}.values())",
                lambda: f"sum({x}v for {x}k, {x}v in {v}.items() if {x}k != {self.key_expr(sc)})",
                lambda: f"len([{x} for {x} in {v} if {x} in {v}])",
            )  # fmt: skip
        if not ints:
            return lit
        v = self.pick(ints).expr
        self.use("lists")
        return self.form(
            lambda: f"sum({v})",
            lambda: f"{self.pick(('max', 'min'))}({v}, default={lit})",
            lambda: f"(sorted({v})[{self.pick(('0', '-1'))}] if {v} else {lit})",
            lambda: f"sum(1 for {x} in {v} if {x} > {self.int_expr(sc, d - 1)})",
            lambda: f"len([{x} for {x} in {v} if {x} % 2])",
            lambda: f"(1 if {self.pick(('any', 'all'))}({x} > {lit} for {x} in {v}) else 0)",
            lambda: f"{v}.count({self.int_expr(sc, d - 1)})",
            lambda: f"next(iter({v}), {lit})",
        )  # fmt: skip

    def _dict_int(self, sc: Scope, d: int) -> str:
        v = self.pick(sc.of("dict"))
        self.use("dicts")
        k = self.key_expr(sc)
        form = self.n(0, 2)
        if form == 0:
            return f"{v.expr}.get({k}, {self.pick(INT_LITS)})"
        if form == 1 or not self.ok("implicit_raise"):
            self.use("in")
            return f"({v.expr}[{k}] if {k} in {v.expr} else {self.int_expr(sc, d - 1)})"
        self.use("implicit_raise")
        return f"{v.expr}[{k}]"  # KeyError when it is missing

    def _obj_read(self, sc: Scope) -> str:
        v = self.pick(sc.of("obj"))
        cls: ClassSpec = v.spec
        self.use("classes")
        opts = [f"{v.expr}.v"]
        if cls.has_method("m"):
            opts.append(f"{v.expr}.m()")
        if cls.has_method("n"):
            opts.append(f"{v.expr}.n()")
        if cls.has_prop("p"):
            opts.append(f"{v.expr}.p")
            self.use("properties")
        for a in ("tag", "size"):
            if cls.finds(a):
                opts.append(f"{v.expr}.{a}")
        got = str(self.pick(opts))
        if got.endswith((".tag", ".size")):
            self.use("class_attrs")
        return got

    def _class_attr_read(self, sc: Scope) -> str:
        found = [(c, a) for c in sc.classes for a in ("tag", "size") if c.finds(a)]
        if not found:
            return "0"
        c, a = self.pick(found)
        self.use("classes", "class_attrs")
        return f"{c.expr}.{a}"

    def _dc_read(self, sc: Scope) -> str:
        v = self.pick(sc.of("dc"))
        spec: DCSpec = v.spec
        self.use("dataclass")
        names = [f for f, _ in spec.fields] + (["t"] if spec.post_init else [])
        return f"{v.expr}.{self.pick(names)}"

    def call(self, sc: Scope, d: int) -> str:
        fn: FnSig = self.pick(sc.fns)
        args: list[str] = []
        required = len(fn.params) - fn.defaults
        keyword = False
        for i, p in enumerate(fn.params):
            if i >= required and self.flag():
                keyword = True  # a default is used: the rest must go by keyword
                self.use("defaults_kwargs")
                continue
            if keyword or (i >= required and self.flag()):
                keyword = True
                self.use("defaults_kwargs")
                args.append(f"{p}={self.int_expr(sc, d - 1)}")
            else:
                args.append(self.int_expr(sc, d - 1))
        for p in fn.kwonly:
            if self.flag():
                self.use("defaults_kwargs")
                args.append(f"{p}={self.int_expr(sc, d - 1)}")
        return f"{fn.expr}({', '.join(args)})"

    def key_expr(self, sc: Scope) -> str:
        """A dict key or set member. With dict_keys_collide: also True, False, 1.0 and values
        of any kind (inputs may be True where another key is 1)."""
        collide = self.ok("dict_keys_collide")
        lits = KEY_LITS if collide else SAFE_KEY_LITS
        opts: list[tuple[int, Callable[[], str]]] = [(4, lambda: self.pick(lits))]
        keyable = sc.of("int", "scalar") if collide else sc.of("int")
        if keyable:
            opts.append((2, lambda: self.pick(keyable).expr))
        got = str(self.weighted(opts)())
        if got in COLLIDING or (got in sc.vars and sc.vars[got].kind == "scalar"):
            self.use("dict_keys_collide")
        return got

    def scalar_expr(self, sc: Scope, d: int = 2) -> str:
        opts: list[tuple[int, Callable[[], str]]] = [(3, lambda: self.pick(SCALAR_LITS))]
        if sc.of("int", "scalar"):
            opts.append((4, lambda: self.pick(sc.of("int", "scalar")).expr))
        opts.append((2, lambda: self.int_expr(sc, d)))
        if d > 0:
            if self.ok("ternary"):
                opts.append((1, lambda: self._ternary(sc, d, self.scalar_expr)))
            if self.ok("boolops"):
                opts.append((2, lambda: self._scalar_boolop(sc, d)))
            if sc.of("dict"):
                opts.append((1, lambda: self._dict_get(sc)))
        return str(self.weighted(opts)())

    def _scalar_boolop(self, sc: Scope, d: int) -> str:
        self.use("boolops", "truthiness")
        op = self.pick(("or", "and"))
        return f"({self.scalar_expr(sc, d - 1)} {op} {self.scalar_expr(sc, d - 1)})"

    def _dict_get(self, sc: Scope) -> str:
        v = self.pick(sc.of("dict"))
        self.use("dicts")
        return f"{v.expr}.get({self.key_expr(sc)})"

    def cond(self, sc: Scope, d: int = 2) -> str:
        opts: list[tuple[int, Callable[[], str]]] = [
            (3, lambda: self._compare(sc, d)),
            (3, lambda: self._truth(sc, d)),
        ]
        if sc.of("int"):
            opts.append((3, lambda: self._order(sc, d)))
        if self.ok("in"):
            opts.append((2, lambda: self._in(sc, d)))
        if self.ok("is"):
            opts.append((2, lambda: self._is(sc, d)))
        if d > 0:
            opts.append((2, lambda: f"(not {self.cond(sc, d - 1)})"))
            if self.ok("boolops"):
                opts.append((3, lambda: self._cond_boolop(sc, d)))
        if sc.of("list", "dict", "set", "seq"):
            opts.append((1, lambda: self._container_truth(sc)))
        if len(sc.of("dc")) >= 1 and self.ok("dataclass_eq"):
            opts.append((1, lambda: self._dc_eq(sc)))
        return str(self.weighted(opts)())

    def _compare(self, sc: Scope, d: int) -> str:
        self.use("compare")
        op = self.pick(("==", "!="))
        return f"({self.scalar_expr(sc, d - 1)} {op} {self.scalar_expr(sc, d - 1)})"

    def _truth(self, sc: Scope, d: int) -> str:
        self.use("truthiness")
        return self.scalar_expr(sc, d - 1)

    def _order(self, sc: Scope, d: int) -> str:
        self.use("compare")
        ops = ("<", "<=", ">", ">=")
        x = self.int_expr(sc, d - 1)
        if d > 0 and self.flag("chained_compare"):
            self.use("chained_compare")
            return (f"({self.int_expr(sc, 0)} {self.pick(ops)} {x} {self.pick(ops)} "
                    f"{self.int_expr(sc, 0)})")  # fmt: skip
        return f"({x} {self.pick(ops)} {self.int_expr(sc, d - 1)})"

    def _in(self, sc: Scope, d: int) -> str:
        self.use("in")
        op = self.pick(("in", "not in"))
        x = self.scalar_expr(sc, d - 1)
        targets: list[Callable[[], str]] = [
            lambda: "(" + ", ".join(self.pick(SCALAR_LITS) for _ in range(self.n(1, 3))) + ",)",
            lambda: "[" + ", ".join(self.pick(SCALAR_LITS) for _ in range(self.n(0, 3))) + "]",
        ]
        containers = sc.of("list", "dict", "set", "seq")
        if containers:
            targets.append(lambda: self.pick(containers).expr)
        return f"({x} {op} {self.pick(targets)()})"

    def _is(self, sc: Scope, d: int) -> str:
        self.use("is")
        op = self.pick(("is", "is not"))
        vs = sc.of("int", "scalar")
        x = self.pick(vs).expr if vs and self.flag() else self.scalar_expr(sc, d - 1)
        if x.lstrip("(-").startswith(("0", "1", "2", "3", "5", '"')):
            x = f"({x} or None)" if self.flag() else "None"  # `is` with a literal: a warning
        return f"({x} {op} {self.pick(('None', 'True', 'False'))})"

    def _cond_boolop(self, sc: Scope, d: int) -> str:
        self.use("boolops")
        op = self.pick(("and", "or"))
        parts = [self.cond(sc, d - 1) for _ in range(self.n(2, 3))]
        return "(" + f" {op} ".join(parts) + ")"

    def _container_truth(self, sc: Scope) -> str:
        self.use("truthiness")
        v = self.pick(sc.of("list", "dict", "set", "seq"))
        return v.expr if self.flag() else f"(not {v.expr})"

    def _dc_eq(self, sc: Scope) -> str:
        self.use("dataclass", "dataclass_eq")
        vs = sc.of("dc")
        x = self.pick(vs)
        same = [v for v in vs if v.spec is x.spec]
        y = self.pick(same)
        if y is x:
            spec: DCSpec = x.spec
            args = ", ".join(f"{x.expr}.{f}" for f, _ in spec.fields)
            return f"({x.expr} {self.pick(('==', '!='))} {spec.expr}({args}))"
        return f"({x.expr} {self.pick(('==', '!='))} {y.expr})"

    def plain_expr(self, sc: Scope) -> str:
        """A value of plain data: what main returns."""
        vs = [v for v in sc.vars.values() if v.kind in ("int", "scalar", "list", "dict", "set")]
        parts = [self.pick(vs).expr if vs and self.flag() else self.scalar_expr(sc, 1)
                 for _ in range(self.n(1, 2))]  # fmt: skip
        return parts[0] if len(parts) == 1 else f"({', '.join(parts)})"

    # --- statements --------------------------------------------------------------------------

    def block(self, sc: Scope, ctx: Ctx, lo: int = 1, hi: int = 3) -> list[str]:
        lines: list[str] = []
        for _ in range(self.n(lo, hi)):
            lines.extend(self.stmt(sc, ctx))
        return lines or ["pass"]

    def stmt(self, sc: Scope, ctx: Ctx) -> list[str]:
        opts: list[tuple[int, Callable[[], list[str]]]] = [(4, lambda: self.s_assign(sc, ctx))]
        deeper = ctx.depth < MAX_DEPTH
        if deeper and self.ok("if"):
            opts.append((4, lambda: self.s_if(sc, ctx)))
        if deeper and ctx.where != "module":
            if self.ok("for_literal") or self.ok("for_range") or self.ok("for_input"):
                opts.append((2, lambda: self.s_for(sc, ctx)))
            if self.ok("while"):
                opts.append((1, lambda: self.s_while(sc, ctx)))
            if self.ok("try"):
                opts.append((2, lambda: self.s_try(sc, ctx)))
        if ctx.in_loop and self.ok("break_continue"):
            opts.append((2, lambda: self.s_break(sc, ctx)))
        if ctx.where != "module" and self.ok("raise"):
            opts.append((1, lambda: self.s_raise(sc, ctx)))
        if ctx.returns is not None and ctx.depth > 0 and self.ok("early_return"):
            opts.append((1, lambda: self.s_return(sc, ctx)))
        if [v for v in sc.of("list") if not v.frozen[0]] and self.ok("list_mutation"):
            opts.append((3, lambda: self.s_list(sc, ctx)))
        if [v for v in sc.of("dict") if not v.frozen[0]]:
            opts.append((3, lambda: self.s_dict(sc, ctx)))
        if sc.of("set"):
            opts.append((2, lambda: self.s_set(sc, ctx)))
        if (sc.of("obj") and self.ok("instance_attr_write")) or (
            sc.classes and self.ok("class_attr_write")
        ):
            opts.append((2, lambda: self.s_obj(sc, ctx)))
        if sc.of("dc"):
            opts.append((2, lambda: self.s_dc(sc, ctx)))
        effects = [f for f in sc.fns if f.effect]
        if effects and ctx.where != "module":
            opts.append((2, lambda: self.s_effect(sc, effects)))
        return list(self.weighted(opts)())

    def s_assign(self, sc: Scope, ctx: Ctx) -> list[str]:
        targets = [v for v in sc.of("int", "scalar") if v.rebind]
        if not targets:
            return [f"{self.fresh('t')} = {self.int_expr(sc)}"]
        v = self.pick(targets)
        if v.kind == "int":
            if self.flag():
                op = self.pick(("+=", "-=", "*="))
                self.use("arith")
                return [f"{v.expr} {op} {self.int_expr(sc, 1)}"]
            return [f"{v.expr} = {self.int_expr(sc)}"]
        return [f"{v.expr} = {self.scalar_expr(sc)}"]

    def s_if(self, sc: Scope, ctx: Ctx) -> list[str]:
        self.use("if")
        inner = Ctx(ctx.depth + 1, ctx.in_loop, ctx.where, ctx.returns)
        lines = [f"if {self.cond(sc)}:", *indent(self.block(Scope(sc), inner))]
        for _ in range(self.n(0, 2) if self.ok("elif") else 0):
            self.use("elif")
            lines += [f"elif {self.cond(sc)}:", *indent(self.block(Scope(sc), inner))]
        if self.flag():
            lines += ["else:", *indent(self.block(Scope(sc), inner))]
        return lines

    def s_for(self, sc: Scope, ctx: Ctx) -> list[str]:
        var = self.fresh("i")
        body = Scope(sc)
        opts: list[tuple[int, Callable[[], str]]] = []
        frozen: Var | None = None
        if self.ok("for_literal"):
            opts.append((2, lambda: self._int_list(3)))
        if self.ok("for_range"):
            opts.append((2, lambda: f"range({self.n(0, 4)})"))
        seqs = sc.of("seq")
        if seqs and self.ok("for_input"):
            opts.append((3, lambda: self.pick(seqs).expr))
        containers = [v for v in sc.of("list", "dict") if v.kind == "dict" or v.items == "int"]
        if containers and self.ok("for_container"):
            opts.append((2, lambda: self.pick(containers).expr))
        if not opts:
            opts.append((1, lambda: "range(2)"))
        it = str(self.weighted(opts)())
        item_kind = "int"
        if it.startswith("["):
            self.use("for_literal")
        elif it.startswith("range"):
            self.use("for_range")
            if sc.of("int") and self.flag():
                it = f"range({self.int_var(sc)} % {self.n(2, 4)})"
        elif it in sc.vars:
            frozen = sc.vars[it]
            if frozen.kind == "seq":
                self.use("for_input")
            else:
                self.use("for_container")
                item_kind = "scalar" if frozen.kind == "dict" else "int"
        if it.startswith("[") and self.flag():  # a tuple of scalars
            it = "(" + ", ".join(self.pick(SCALAR_LITS) for _ in range(self.n(1, 3))) + ",)"
            item_kind = "scalar"
        body.add(Var(var, item_kind, rebind=False))
        if frozen is not None:
            frozen.frozen[0] += 1
        try:
            lines = self.block(body, Ctx(ctx.depth + 1, True, ctx.where, ctx.returns))
        finally:
            if frozen is not None:
                frozen.frozen[0] -= 1
        out = [f"for {var} in {it}:", *indent(lines)]
        if self.flag():
            orelse = Ctx(ctx.depth + 1, ctx.in_loop, ctx.where, ctx.returns)
            out += ["else:", *indent(self.block(Scope(sc), orelse, 1, 1))]
        return out

    def _int_list(self, most: int) -> str:
        return "[" + ", ".join(self.pick(INT_LITS) for _ in range(self.n(0, most))) + "]"

    def s_while(self, sc: Scope, ctx: Ctx) -> list[str]:
        self.use("while")
        w = self.fresh("w")
        body = Scope(sc)
        body.add(Var(w, "int", rebind=False))
        limit = self.n(1, 4)
        test = f"{w} < {limit}"
        if self.flag():
            test += f" and {self.cond(body, 1)}"
        lines = [f"{w} += 1", *self.block(body, Ctx(ctx.depth + 1, True, ctx.where, ctx.returns))]
        sc.add(Var(w, "int", rebind=False))  # counted up on every path: readable after it
        return [f"{w} = 0", f"while {test}:", *indent(lines)]

    def s_break(self, sc: Scope, ctx: Ctx) -> list[str]:
        self.use("break_continue")
        word = self.pick(("break", "continue"))
        return [f"if {self.cond(sc, 1)}:", f"    {word}"]

    def s_raise(self, sc: Scope, ctx: Ctx) -> list[str]:
        self.use("raise")
        exc = self.pick(RAISES)
        made = exc if self.flag() else f'{exc}("{exc[:1].lower()}")'
        return [f"if {self.cond(sc, 1)}:", f"    raise {made}"]

    def s_return(self, sc: Scope, ctx: Ctx) -> list[str]:
        assert ctx.returns is not None
        self.use("early_return")
        return [f"if {self.cond(sc, 1)}:", f"    return {ctx.returns(sc)}"]

    def s_try(self, sc: Scope, ctx: Ctx) -> list[str]:
        self.use("try")
        inner = Ctx(ctx.depth + 1, ctx.in_loop, ctx.where, ctx.returns)
        lines = ["try:", *indent(self.block(Scope(sc), inner))]
        handlers = self.n(0, 2)
        final = self.flag("finally")
        if handlers == 0 and not final:
            handlers = 1
        for _ in range(handlers):
            h = self.pick(HANDLERS)
            name = f" as {self.fresh('e')}" if self.flag() else ""
            body = self.block(Scope(sc), inner, 1, 2)
            if self.flag("reraise"):
                self.use("reraise")
                body = [*body, f"if {self.cond(sc, 1)}:", "    raise"]
            lines += [f"except {h}{name}:", *indent(body)]
        if handlers and self.flag():
            lines += ["else:", *indent(self.block(Scope(sc), inner, 1, 2))]
        if final:
            self.use("finally")
            final_ctx = Ctx(ctx.depth + 1, ctx.in_loop, ctx.where, None)  # no return in it
            lines += ["finally:", *indent(self.block(Scope(sc), final_ctx, 1, 2))]
        return lines

    def s_list(self, sc: Scope, ctx: Ctx) -> list[str]:
        v = self.pick([v for v in sc.of("list") if not v.frozen[0]])
        self.use("lists", "list_mutation")
        item = (lambda: self.int_expr(sc, 1)) if v.items == "int" else \
            (lambda: self.scalar_expr(sc, 1))  # fmt: skip
        targets = [t for t in sc.of("int") if t.rebind]
        form = self.n(0, 6)
        if form == 0:
            return [f"{v.expr}.append({item()})"]
        if form == 1:
            lits = ", ".join(item() for _ in range(self.n(0, 2)))
            return [f"{v.expr}.extend([{lits}])"]
        if form == 2 and v.items == "int" and targets:
            t = self.pick(targets).expr
            at = self.pick(("", "0", "-1"))
            if self.flag("implicit_raise"):
                self.use("implicit_raise")
                return [f"{t} = {v.expr}.pop({at})"]  # IndexError when empty
            return [f"if {v.expr}:", f"    {t} = {v.expr}.pop({at})"]
        if form == 3 and v.items == "int" and targets:
            t = self.pick(targets).expr
            x = self.int_expr(sc, 1)
            if self.flag("implicit_raise"):
                self.use("implicit_raise")
                return [f"{t} = {v.expr}.index({x})"]  # ValueError when it is not there
            self.use("in")
            return [f"if {x} in {v.expr}:", f"    {t} = {v.expr}.index({x})"]
        if form == 4:
            return [f"if {v.expr}:", f"    {v.expr}[{self.pick(('0', '-1'))}] = {item()}"]
        if form == 5 and v.rebind:
            return [f"{v.expr} = {v.expr} + [{item()}]"]
        if self.ok("container_ops") and self.flag():
            return self._list_op(v, item, sc)
        return [f"{v.expr}.append({item()})"]

    def _list_op(self, v: Var, item: Callable[[], str], sc: Scope) -> list[str]:
        """list.remove (ValueError when the item is not there), insert, reverse, sort (ints
        only), clear, a slice rebound."""
        self.use("container_ops")
        form = self.n(0, 4)
        if form == 0:
            x = item()
            if self.flag("implicit_raise"):
                self.use("implicit_raise")
                return [f"{v.expr}.remove({x})"]
            self.use("in")
            return [f"if {x} in {v.expr}:", f"    {v.expr}.remove({x})"]
        if form == 1:
            return [f"{v.expr}.insert({self.pick(('0', '1', '-1'))}, {item()})"]
        if form == 2:
            return [f"{v.expr}.{'sort' if v.items == 'int' and self.flag() else 'reverse'}()"]
        if form == 3 and v.rebind:
            return [f"{v.expr} = {v.expr}[{self.pick(('1:', ':-1', '::2'))}]"]
        return [f"{v.expr}.clear()"]

    def s_dict(self, sc: Scope, ctx: Ctx) -> list[str]:
        v = self.pick([v for v in sc.of("dict") if not v.frozen[0]])
        self.use("dicts")
        k = self.key_expr(sc)
        form = self.n(0, 3)
        if form == 0:
            return [f"{v.expr}[{k}] = {self.int_expr(sc, 1)}"]
        targets = [t for t in sc.of("int") if t.rebind]
        if form == 1 and targets:
            return [f"{self.pick(targets).expr} = {v.expr}.get({k}, {self.pick(INT_LITS)})"]
        if form == 2:
            self.use("in")
            return [f"if {k} in {v.expr}:", f"    {v.expr}[{k}] += {self.int_expr(sc, 1)}"]
        if self.ok("container_ops") and self.flag():
            return self._dict_op(v, k, targets, sc)
        scalars = [t for t in sc.of("scalar") if t.rebind]
        if scalars:
            return [f"{self.pick(scalars).expr} = {v.expr}.get({k})"]
        return [f"{v.expr}[{k}] = {self.int_expr(sc, 1)}"]

    def _dict_op(self, v: Var, k: str, targets: list[Var], sc: Scope) -> list[str]:
        """dict.pop with and without a default (KeyError when missing), setdefault, del,
        update."""
        self.use("container_ops")
        form = self.n(0, 3)
        if form == 0 and targets:
            t = self.pick(targets).expr
            if self.flag("implicit_raise"):
                self.use("implicit_raise")
                return [f"{t} = {v.expr}.pop({k})"]
            return [f"{t} = {v.expr}.pop({k}, {self.pick(INT_LITS)})"]
        if form == 1:
            return [f"{v.expr}.setdefault({k}, {self.int_expr(sc, 1)})"]
        if form == 2:
            self.use("in")
            return [f"if {k} in {v.expr}:", f"    del {v.expr}[{k}]"]
        return [f"{v.expr}.update({{{k}: {self.int_expr(sc, 1)}}})"]

    def s_set(self, sc: Scope, ctx: Ctx) -> list[str]:
        v = self.pick(sc.of("set"))
        self.use("sets")
        k = self.key_expr(sc)
        form = self.n(0, 2)
        if form == 0 or not v.rebind:
            return [f"{v.expr}.add({k})"]
        other = "{" + ", ".join(self.key_expr(sc) for _ in range(self.n(1, 2))) + "}"
        if form == 1:
            return [f"{v.expr} = {v.expr} | {other}"]
        return [f"{v.expr} = {v.expr}.union({other})"]

    def s_obj(self, sc: Scope, ctx: Ctx) -> list[str]:
        objs = sc.of("obj")
        form = self.n(0, 2)
        if (form == 2 or not objs) and sc.classes and self.ok("class_attr_write"):
            c = self.pick(sc.classes)
            self.use("classes", "class_attr_write", "class_attrs")
            return [f"{c.expr}.{self.pick(('tag', 'size'))} = {self.int_expr(sc, 1)}"]
        if not objs or not self.ok("instance_attr_write"):
            return self.s_assign(sc, ctx)
        v = self.pick(objs)
        self.use("classes")
        if form == 1 and v.rebind:  # a new object of the same class (what is read stays there)
            return [f"{v.expr} = {v.spec.expr}({self.int_expr(sc, 1)})"]
        attr = self.pick(("v", "tag"))
        if attr != "v":
            self.use("instance_attr_write")
        return [f"{v.expr}.{attr} = {self.int_expr(sc, 1)}"]

    def s_dc(self, sc: Scope, ctx: Ctx) -> list[str]:
        v = self.pick(sc.of("dc"))
        spec: DCSpec = v.spec
        self.use("dataclass")
        f = self.pick([f for f, _ in spec.fields])
        if self.flag("dataclass_replace") and v.rebind:
            self.use("dataclass_replace")
            return [f"{v.expr} = dataclasses.replace({v.expr}, {f}={self.int_expr(sc, 1)})"]
        return [f"{v.expr}.{f} = {self.int_expr(sc, 1)}"]

    def s_effect(self, sc: Scope, effects: list[FnSig]) -> list[str]:
        fn = self.pick(effects)
        args = ", ".join(self.int_expr(sc, 1) for _ in fn.params)
        return [f"{fn.expr}({args})"]

    # --- definitions ---------------------------------------------------------------------------

    def helper(self, sc: Scope, module: str) -> tuple[list[str], FnSig]:
        """A module-level function of int parameters that returns an int."""
        self.use("functions")
        name = self.fresh("h")
        nparams = self.n(1, 3)
        params = ["x", "y", "z"][:nparams]
        ndef = self.n(0, nparams - 1) if self.ok("defaults_kwargs") else 0
        kwonly = ["k"] if self.flag("defaults_kwargs") else []
        if ndef or kwonly:
            self.use("defaults_kwargs")
        sig_parts = [p if i < nparams - ndef else f"{p}={self.pick(INT_LITS)}"
                     for i, p in enumerate(params)]  # fmt: skip
        if kwonly:
            sig_parts += ["*", f"k={self.pick(INT_LITS)}"]
        body_sc = Scope(sc)
        body_sc.vars = {k: v for k, v in sc.vars.items() if v.kind == "int" and not v.rebind}
        for p in [*params, *kwonly]:
            body_sc.add(Var(p, "int"))
        lines = [f"def {name}({', '.join(sig_parts)}):"]
        body: list[str] = []
        if self.flag("nested_functions"):
            self.use("nested_functions", "closures")
            inner = self.fresh("inner")
            iparam = self.fresh("q")
            isc = Scope(body_sc)
            isc.vars = {k: Var(v.expr, v.kind, rebind=False) for k, v in body_sc.vars.items()}
            isc.add(Var(iparam, "int", rebind=False))
            body += [f"def {inner}({iparam}):", f"    return {self.int_expr(isc, 1)}"]
            body_sc.fns.append(FnSig(inner, [iparam]))
        ctx = Ctx(0, False, "helper", lambda s: self.int_expr(s, 1))
        body += self.block(body_sc, ctx, 0, 2)
        body.append(f"return {self.int_expr(body_sc)}")
        lines += indent([ln for ln in body if ln != "pass"] or ["return 0"])
        return lines, FnSig(name, params, ndef, kwonly)

    def cached(self, module_globals: list[str]) -> tuple[list[str], list[FnSig], list[str], str]:
        """A functools-cached function (reading a module global) and a setter of that global.
        Returns (source lines, signatures, the imports it needs, the global's name)."""
        self.use("cache")
        name = self.fresh("cf")
        g = self.fresh("G")
        style = (
            (self.n(0, 3) if self.ok("lru_cache_bounded") else self.n(0, 2))
            if self.ok("lru_cache")
            else 0
        )
        if style == 0:
            deco, imports = "@functools.cache", ["import functools"]
        elif style == 1:
            deco, imports = "@functools.lru_cache(maxsize=None)", ["import functools"]
            self.use("lru_cache")
        elif style == 2:
            deco, imports = "@lru_cache", ["from functools import lru_cache"]
            self.use("lru_cache")
        else:
            deco, imports = "@functools.lru_cache(maxsize=1)", ["import functools"]
            self.use("lru_cache", "lru_cache_bounded")
        reads = self.flag("cache_global")
        lines = [f"{g} = {self.pick(INT_LITS)}", deco, f"def {name}(n):"]
        body = f"n * {self.pick(('2', '3', '10'))}"
        if reads:
            self.use("cache_global")
            body += f" + {g}"
        lines += [f"    return {body}", ""]
        sigs = [FnSig(name, ["n"])]
        if reads:
            setter = self.fresh("set_g")
            lines += [f"def {setter}(v):", f"    global {g}", f"    {g} = v", f"    return {g}"]
            sigs.append(FnSig(setter, ["v"], effect=True))
        module_globals.append(g)
        return lines, sigs, imports, g

    def hierarchy(self, where: str) -> list[ClassSpec]:
        self.use("classes")
        specs: list[ClassSpec] = []
        for _ in range(self.n(1, 4)):
            name = self.fresh("K")
            cls = ClassSpec(name, [])
            bases: list[ClassSpec] = []
            if specs:
                nb = self.n(0, 2) if self.ok("multiple_inheritance") else self.n(0, 1)
                for _ in range(nb):
                    b = self.pick(specs)
                    if b not in bases:
                        bases.append(b)
            mro = c3(cls, bases)
            if mro is None:
                bases = bases[:1]
                mro = c3(cls, bases)
            assert mro is not None
            cls.bases, cls.mro = bases, mro
            if len(bases) > 1:
                self.use("multiple_inheritance")
            if self.flag("class_attrs"):
                cls.attrs["tag"] = self.pick(INT_LITS)
                self.use("class_attrs")
            if self.flag("class_attrs"):
                cls.attrs["size"] = self.pick(INT_LITS)
                self.use("class_attrs")
            if not bases:
                cls.init = "root"
            elif self.flag("super"):
                cls.init = "super"
                self.use("super")
                cls.sets_w = self.flag()
            specs.append(cls)
        # which methods each class defines, then their bodies (a super() call only where the
        # next class of every instance's MRO defines the method too)
        for cls in specs:
            for m in ("m", "n"):
                if self.flag():
                    cls.methods[m] = []
            if self.flag("properties"):
                cls.props["p"] = []
        for cls in specs:
            for m in list(cls.methods):
                terms = [self._self_term(cls) for _ in range(self.n(1, 2))]
                if self._super_ok(cls, m, specs) and self.flag("super"):
                    self.use("super")
                    terms.append(f"super().{m}()")
                cls.methods[m] = [f"def {m}(self):", f"    return {' + '.join(terms)}"]
            if "p" in cls.props:
                self.use("properties")
                cls.props["p"] = ["@property", "def p(self):",
                                  f"    return {self._self_term(cls)} * 2"]  # fmt: skip
        for cls in specs:
            cls.expr = cls.name if where == "main" else f"{where}{cls.name}"
        return specs

    def _self_term(self, cls: ClassSpec) -> str:
        opts = ["self.v", self.pick(INT_LITS)]
        opts += [f"self.{a}" for a in ("tag", "size") if cls.finds(a)]
        return str(self.pick(opts))

    @staticmethod
    def _super_ok(cls: ClassSpec, m: str, specs: list[ClassSpec]) -> bool:
        for t in specs:
            if cls in t.mro:
                after = t.mro[t.mro.index(cls) + 1 :]
                if not any(m in c.methods for c in after):
                    return False
        return True

    @staticmethod
    def class_source(cls: ClassSpec) -> list[str]:
        bases = f"({', '.join(b.name for b in cls.bases)})" if cls.bases else ""
        body: list[str] = [f"{a} = {v}" for a, v in cls.attrs.items()]
        if cls.init == "root":
            body += ["def __init__(self, x):", "    self.v = x"]
        elif cls.init == "super":
            body += ["def __init__(self, x):", "    super().__init__(x + 1)"]
            if cls.sets_w:
                body += ["    self.w = x"]
        for lines in (*cls.methods.values(), *cls.props.values()):
            body += lines
        return [f"class {cls.name}{bases}:", *indent(body or ["pass"]), ""]

    def dataclass_spec(self, where: str) -> tuple[list[str], DCSpec]:
        self.use("dataclass")
        name = self.fresh("DC")
        nf = self.n(1, 3)
        names = ["x", "y", "z"][:nf]
        ndef = self.n(0, nf)
        fields = [(f, self.pick(INT_LITS) if i >= nf - ndef else None) for i, f in enumerate(names)]
        post = self.flag("post_init")
        style = self.n(0, 1)
        lines = ["@dataclasses.dataclass" if style == 0 else "@dataclass", f"class {name}:"]
        for f, dflt in fields:
            lines.append(f"    {f}: int" + (f" = {dflt}" if dflt is not None else ""))
        if post:
            self.use("post_init")
            terms = " + ".join(f"self.{f}" for f in names)
            lines += ["    def __post_init__(self):", f"        self.t = {terms} * 2"]
        lines.append("")
        spec = DCSpec(name, fields, post, name if where == "main" else f"{where}{name}")
        return lines, spec

    def construct(self, sc: Scope, spec: DCSpec) -> str:
        args = []
        keyword = False
        for f, dflt in spec.fields:
            if dflt is not None and self.flag():
                keyword = True
                continue
            if keyword or self.flag():
                keyword = True
                args.append(f"{f}={self.int_expr(sc, 1)}")
            else:
                args.append(self.int_expr(sc, 1))
        return f"{spec.expr}({', '.join(args)})"


# --- modules -------------------------------------------------------------------------------------


@dataclass
class ModuleOut:
    lines: list[str]
    imports: list[str]
    exports: Scope  # what the module defines, named as in the module itself
    ints: list[str]  # module-level int globals
    needs_dataclasses: bool = False


def module_body(g: Gen, name: str, imported: Scope) -> ModuleOut:
    """The top level of fw/<name>.py (main.py: everything but main itself)."""
    out = ModuleOut([], [], Scope(imported), [])
    sc = out.exports
    where = "main"  # names as this module sees them
    # module-level state: constants, a branch on them, a table and a list built at import
    if g.flag("module_state"):
        g.use("module_state")
        c = g.fresh("C")
        out.lines.append(f"{c} = {g.pick(INT_LITS)}")
        sc.add(Var(c, "int", rebind=False))
        out.ints.append(c)
        tab = g.fresh("TAB")
        items = ", ".join(f"{g.key_expr(Scope())}: {g.pick(INT_LITS)}" for _ in range(g.n(0, 2)))
        out.lines.append(f"{tab} = {{{items}}}")
        mode = g.fresh("MODE")
        mod_sc = Scope(sc)  # at import: constants only, no calls
        mod_sc.fns, mod_sc.classes, mod_sc.dcs = [], [], []
        if g.flag("module_if"):
            g.use("module_if", "if")
            out.lines += [f"if {g.cond(mod_sc, 1)}:",
                          f"    {mode} = {g.scalar_expr(mod_sc, 0)}",
                          f"    {tab}[{g.key_expr(Scope())}] = {g.int_expr(mod_sc, 1)}",
                          "else:", f"    {mode} = {g.scalar_expr(mod_sc, 0)}"]  # fmt: skip
        else:
            out.lines.append(f"{mode} = {g.scalar_expr(mod_sc, 0)}")
        sc.add(Var(mode, "scalar", rebind=False))
        sc.add(Var(tab, "dict", rebind=False))
        if g.flag("module_loop"):
            g.use("module_loop", "for_literal", "lists")
            lst = g.fresh("ITEMS")
            i = g.fresh("_i")
            out.lines += [f"{lst} = []", f"for {i} in ({g.pick(INT_LITS)}, {g.pick(INT_LITS)}):",
                          f"    {lst}.append({i} * {c})"]  # fmt: skip
            sc.add(Var(lst, "list", rebind=False))
        out.lines.append("")
    if g.flag("cache"):
        lines, sigs, imps, gname = g.cached(out.ints)
        sc.add(Var(gname, "int", rebind=False))
        out.lines += [*lines, ""]
        out.imports += imps
        sc.fns += sigs
    if g.flag("global_write"):
        g.use("global_write", "module_state")
        cnt = g.fresh("COUNT")
        fn = g.fresh("bump")
        out.lines += [f"{cnt} = 0", f"def {fn}(n):", f"    global {cnt}", f"    {cnt} += n",
                      f"    return {cnt}", ""]  # fmt: skip
        sc.add(Var(cnt, "int", rebind=False))
        out.ints.append(cnt)
        sc.fns.append(FnSig(fn, ["n"], effect=True))
    if g.flag("classes"):
        for cls in g.hierarchy(where):
            out.lines += g.class_source(cls)
            sc.classes.append(cls)
    if g.flag("dataclass"):
        lines, spec = g.dataclass_spec(where)
        out.lines += lines
        out.needs_dataclasses = True
        sc.dcs.append(spec)
        if lines[0] == "@dataclass":
            out.imports.append("from dataclasses import dataclass")
    for _ in range(g.n(0, 2) if g.ok("functions") else 0):
        lines, sig = g.helper(sc, name)
        out.lines += [*lines, ""]
        sc.fns.append(sig)
    return out


def _imports_text(imports: list[str], needs_dataclasses: bool) -> list[str]:
    out = list(dict.fromkeys(imports))
    if needs_dataclasses and "import dataclasses" not in out:
        out.insert(0, "import dataclasses")
    return out


def _rename(v: Var, expr: str, rebind: bool) -> Var:
    return Var(expr, v.kind, rebind=rebind, frozen=v.frozen, spec=v.spec, items=v.items)


def import_into(g: Gen, src: str, exports: Scope, into: Scope) -> list[str]:
    """Bring `fw.<src>`'s exports into a scope: `from fw.src import names` and/or `import
    fw.src` (then everything is `fw.src.name`). Returns the import lines."""
    g.use("imports")
    lines: list[str] = []
    style = g.n(0, 2) if g.ok("import_module") else 0
    if style in (0, 2):
        names = []
        for v in exports.vars.values():
            if g.flag() or style == 0:
                names.append(v.expr)
                into.add(_rename(v, v.expr, rebind=False))
        for fn in exports.fns:
            names.append(fn.expr)
            into.fns.append(fn)
        for c in exports.classes:
            names.append(c.name)
            c.expr = c.name
            into.classes.append(c)
        for d in exports.dcs:
            names.append(d.name)
            d.expr = d.name
            into.dcs.append(d)
        if names:
            lines.append(f"from fw.{src} import {', '.join(dict.fromkeys(names))}")
    if style in (1, 2):
        g.use("import_module")
        lines.append(f"import fw.{src}")
        prefix = f"fw.{src}."
        for v in exports.vars.values():
            # a module attribute can be rebound from outside (an int: others read it there)
            into.add(_rename(v, prefix + v.expr, rebind=v.kind == "int"))
        if style == 1:
            for fn in exports.fns:
                into.fns.append(FnSig(prefix + fn.expr, fn.params, fn.defaults, fn.kwonly,
                                      fn.effect))  # fmt: skip
            for c in exports.classes:
                c.expr = prefix + c.name
                into.classes.append(c)
            for d in exports.dcs:
                d.expr = prefix + d.name
                into.dcs.append(d)
    return lines


def main_function(g: Gen, sc: Scope, kinds: tuple[str, ...], main_ints: list[str]) -> list[str]:
    body = Scope(sc)
    for name, kind in zip(INPUTS, kinds, strict=True):
        body.add(Var(name, "int" if kind == "int" else kind, rebind=False))
    lines: list[str] = []
    declared = [x for x in main_ints if g.flag("global_write")]
    if declared:
        g.use("global_write")
        lines.append(f"global {', '.join(declared)}")
        for x in declared:
            body.add(Var(x, "int", rebind=True))
    results: list[str] = []
    for _ in range(g.n(1, 2)):
        r = g.fresh("r")
        lines.append(f"{r} = {g.int_expr(body, 1)}")
        body.add(Var(r, "int"))
        results.append(r)
    if g.flag():
        s = g.fresh("s")
        lines.append(f"{s} = {g.pick(SCALAR_LITS)}")
        body.add(Var(s, "scalar"))
        results.append(s)
    if g.flag("lists"):
        g.use("lists")
        lst = g.fresh("L")
        items = g.pick(("[]", "[1]", "[0, 2]"))
        lines.append(f"{lst} = {items}")
        body.add(Var(lst, "list", items="int"))
        results.append(lst)
    if g.flag("dicts"):
        g.use("dicts")
        dct = g.fresh("D")
        items = ", ".join(f"{g.key_expr(body)}: {g.int_expr(body, 0)}" for _ in range(g.n(0, 2)))
        lines.append(f"{dct} = {{{items}}}")
        body.add(Var(dct, "dict"))
        results.append(dct)
    if g.flag("sets"):
        g.use("sets")
        s = g.fresh("S")
        items = ", ".join(g.key_expr(body) for _ in range(g.n(0, 2)))
        lines.append(f"{s} = {{{items}}}" if items else f"{s} = set()")
        body.add(Var(s, "set"))
        results.append(s)
    if body.classes and g.flag():
        o = g.fresh("o")
        cls = g.pick(body.classes)
        lines.append(f"{o} = {cls.expr}({g.int_expr(body, 1)})")
        body.add(Var(o, "obj", spec=cls))
    for spec in body.dcs:
        p = g.fresh("p")
        lines.append(f"{p} = {g.construct(body, spec)}")
        body.add(Var(p, "dc", spec=spec))
        if g.flag("dataclass_eq"):
            q = g.fresh("p")
            lines.append(f"{q} = {g.construct(body, spec)}")
            body.add(Var(q, "dc", spec=spec))
    if g.flag("closures"):
        g.use("closures", "nested_functions")
        inner = g.fresh("inner")
        z = g.fresh("z")
        isc = Scope(body)
        isc.vars = {k: Var(v.expr, v.kind, rebind=False, spec=v.spec, items=v.items)
                    for k, v in body.vars.items()}  # fmt: skip
        isc.add(Var(z, "int", rebind=False))
        params = z
        if g.flag("defaults_kwargs"):
            g.use("defaults_kwargs")
            params += f", k={g.int_expr(body, 1)}"  # evaluated here, where it is defined
            isc.add(Var("k", "int", rebind=False))
        lines += [f"def {inner}({params}):", f"    return {g.int_expr(isc, 2)}"]
        body.fns.append(FnSig(inner, [z], 0))
    if g.flag("lambdas"):
        g.use("lambdas")
        lam = g.fresh("f")
        z = g.fresh("z")
        isc = Scope(body)
        isc.vars = {k: Var(v.expr, v.kind, rebind=False, spec=v.spec, items=v.items)
                    for k, v in body.vars.items()}  # fmt: skip
        isc.add(Var(z, "int", rebind=False))
        lines.append(f"{lam} = lambda {z}: {g.int_expr(isc, 2)}")
        body.fns.append(FnSig(lam, [z]))

    def ret(s: Scope) -> str:
        return g.plain_expr(s)

    lines += g.block(body, Ctx(0, False, "main", ret), 1, 4)
    final = ", ".join(results)
    lines.append(f"return ({final},)" if len(results) == 1 else f"return ({final})")
    return ["def main(a, b, c):", *indent(lines)]


@st.composite
def programs(draw: Callable[[Any], Any], allowed: frozenset[str] = FEATURES) -> Program:
    g = Gen(draw, allowed)
    kinds = []
    for _ in INPUTS:
        choices = ["any", "int"] + (["seq"] if "for_input" in allowed else [])
        kinds.append(g.pick(choices))
    domains = []
    for kind in kinds:
        pool = DOMAIN_POOLS[kind]
        idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=4, unique=True))
        domains.append(tuple(pool[i] for i in sorted(idx)))
    unknown = tuple(g.flag() for _ in INPUTS)
    fixed = tuple(g.n(0, len(d) - 1) for d in domains)

    files: list[tuple[str, str]] = []
    main_scope = Scope()
    main_imports: list[str] = []
    needs_dc = False
    other_out: ModuleOut | None = None
    if g.flag("imports"):
        other_out = module_body(g, "other", Scope())
        text = [*_imports_text(other_out.imports, other_out.needs_dataclasses), "",
                *other_out.lines]  # fmt: skip
        files.append(("other.py", "\n".join(text).lstrip("\n") + "\n"))
        main_imports += import_into(g, "other", other_out.exports, main_scope)
    init_text = ""
    if g.flag("package_init"):
        g.use("package_init", "module_state")
        pc = g.fresh("P")
        init_text = f"{pc} = {g.pick(INT_LITS)}\n"
        if g.flag():
            main_imports.append(f"from fw import {pc}")
            main_scope.add(Var(pc, "int", rebind=False))
        else:
            main_imports.append("import fw")
            main_scope.add(Var(f"fw.{pc}", "int", rebind=True))
    files.insert(0, ("__init__.py", init_text))
    mine = module_body(g, "main", main_scope)
    needs_dc = (
        mine.needs_dataclasses
        or any(v.kind == "dc" for v in mine.exports.vars.values())
        or bool(mine.exports.dcs)
    )
    main_lines = main_function(g, mine.exports, tuple(kinds), mine.ints)
    text = [*_imports_text(main_imports + mine.imports, needs_dc), "", *mine.lines, *main_lines]
    files.append(("main.py", "\n".join(text).lstrip("\n") + "\n"))
    return Program(tuple(files), tuple(kinds), tuple(domains), unknown, fixed,
                   frozenset(g.features))  # fmt: skip


# --- features of a source text ------------------------------------------------------------------


def features_of(program: Program) -> frozenset[str]:
    """The features a program's source visibly uses (AST-based, for programs a reducer has
    edited). Features this cannot see are kept when the program was tagged with them."""
    import ast

    found: set[str] = set()
    undetectable = {"dataclass_eq", "truthiness", "compare", "class_attrs", "early_return",
                    "instance_attr_write", "for_container", "cache_global"}  # fmt: skip
    inputs = set(INPUTS)
    for name, text in program.files:
        if not text.strip():
            continue
        if name == "__init__.py":
            found.update({"package_init", "module_state"})
        if name == "other.py":
            found.add("imports")
        tree = ast.parse(text)
        for stmt in tree.body:
            if isinstance(stmt, ast.If):
                found.add("module_if")
            if isinstance(stmt, ast.For):
                found.add("module_loop")
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                found.add("module_state")
        for node in ast.walk(tree):
            kind = type(node).__name__
            if isinstance(node, ast.If):
                found.add("if")
                if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
                    found.add("elif")
            elif isinstance(node, ast.BoolOp):
                found.add("boolops")
            elif isinstance(node, ast.Compare):
                if len(node.ops) > 1:
                    found.add("chained_compare")
                for op in node.ops:
                    if isinstance(op, (ast.In, ast.NotIn)):
                        found.add("in")
                    if isinstance(op, (ast.Is, ast.IsNot)):
                        found.add("is")
            elif isinstance(node, (ast.BinOp, ast.AugAssign)) or (
                isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            ):
                found.add("arith")
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
                    found.add("sets")
            elif isinstance(node, ast.IfExp):
                found.add("ternary")
            elif isinstance(node, ast.For):
                it = node.iter
                if isinstance(it, (ast.List, ast.Tuple)):
                    found.add("for_literal")
                elif isinstance(it, ast.Call) and getattr(it.func, "id", "") == "range":
                    found.add("for_range")
                elif isinstance(it, ast.Name) and it.id in inputs:
                    found.add("for_input")
                else:
                    found.add("for_container")
            elif isinstance(node, ast.While):
                found.add("while")
            elif isinstance(node, (ast.Break, ast.Continue)):
                found.add("break_continue")
            elif isinstance(node, ast.Lambda):
                found.add("lambdas")
            elif isinstance(node, ast.ClassDef):
                found.add("classes")
                if len(node.bases) > 1:
                    found.add("multiple_inheritance")
                for d in node.decorator_list:
                    if "dataclass" in ast.unparse(d):
                        found.add("dataclass")
            elif isinstance(node, ast.Try):
                found.add("try")
                if node.finalbody:
                    found.add("finally")
            elif isinstance(node, ast.Raise):
                found.add("raise" if node.exc is not None else "reraise")
            elif isinstance(node, ast.Global):
                found.add("global_write")
            elif isinstance(node, ast.Import):
                if any(a.name.startswith("fw.") for a in node.names):
                    found.add("import_module")
            elif isinstance(node, (ast.Dict, ast.DictComp)):
                found.add("dicts")
            elif isinstance(node, (ast.Set,)):
                found.add("sets")
            elif isinstance(node, ast.List):
                found.add("lists")
            elif isinstance(node, ast.Subscript):
                found.update({"dicts", "lists"})
            elif kind == "FunctionDef":
                assert isinstance(node, ast.FunctionDef)
                if node.name == "__post_init__":
                    found.add("post_init")
                if node.name != "main":
                    found.add("functions")
                if node.args.defaults or node.args.kwonlyargs:
                    found.add("defaults_kwargs")
                for d in node.decorator_list:
                    text_d = ast.unparse(d)
                    if "cache" in text_d:
                        found.add("lru_cache" if "lru_cache" in text_d else "cache")
                        found.add("cache")
                        if "maxsize=1" in text_d.replace(" ", ""):
                            found.add("lru_cache_bounded")
                    if text_d == "property":
                        found.add("properties")
                for sub in ast.walk(node):
                    if sub is not node and isinstance(sub, (ast.FunctionDef, ast.Lambda)):
                        found.update({"nested_functions", "closures"})
            elif isinstance(node, ast.Call):
                f = ast.unparse(node.func)
                if f == "super":
                    found.add("super")
                if f.endswith("replace"):
                    found.add("dataclass_replace")
                if f.endswith((".append", ".extend", ".pop", ".index")):
                    found.update({"lists", "list_mutation"})
                if f.endswith((".add", ".union")) or f == "set":
                    found.add("sets")
                if f.endswith(".get"):
                    found.add("dicts")
                if node.keywords:
                    found.add("defaults_kwargs")
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id.startswith("K"):
                    found.add("class_attr_write")
            elif isinstance(node, ast.Constant) and (
                node.value is True or isinstance(node.value, float)
            ):
                found.add("dict_keys_collide")
    found.add("implicit_raise")  # where it happens is not visible in the text: keep the tag
    return frozenset(program.features & (found | undetectable))
