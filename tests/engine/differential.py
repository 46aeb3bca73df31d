"""Differential testing of the trace engine against CPython (docs/ENGINE.md, "How to know it
holds").

For a generated program (progen.py) this module
  * runs it in CPython under concrete input assignments, each run in a fresh set of `fw`
    modules (an in-memory importer; nothing survives from one run or program to the next);
  * runs the engine (a) with every input known (Const) and (b) with the program's chosen inputs
    Unknown and the others fixed;
  * compares: (a) exactly one path, whose outcome and value are CPython's; (b) every CPython
    outcome over the assignments consistent with the known inputs is covered by some engine path,
    and a single decided engine outcome is what CPython gave under every one of them.

Discrepancy classes:
  wrong      the engine decided something CPython contradicts (a soundness bug)
  missing    a CPython outcome no engine path covers
  imprecise  known inputs, yet the engine gave several paths, an unknown value or a stop
  crash      the engine itself raised (or ran past the harness's time guard)
  generator  CPython raised what the generator never means to raise (a bug of progen.py)

Everything that reads engine values is in `to_python` (and `exception_name`), so a change of
the engine's representation is absorbed there; the engine's entry points are imported in
`engine_api`.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.util
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import types
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.engine.progen import INPUTS, Program

# Exceptions a generated program may raise on purpose; CPython raising anything else means the
# generator wrote a program outside the subset.
EXPECTED_RAISES = frozenset({"ValueError", "KeyError", "RuntimeError", "IndexError",
                             "ZeroDivisionError", "LookupError"})  # fmt: skip

# Features whose known-input precision the engine does not promise (it does not model them at
# all): an "imprecise" result on a program using one is tolerated. Each entry names why.
IMPRECISE_OK: dict[str, str] = {}

CPYTHON_SECONDS = 5.0
ENGINE_SECONDS = 30.0


# --- the engine's entry points and values ---------------------------------------------------


class _Api:
    """The engine's entry points, imported once."""

    def __init__(self) -> None:
        from routescope.analysis.engine import containers, contents, values
        from routescope.analysis.engine.budget import Budget
        from routescope.analysis.engine.core import Engine
        from routescope.analysis.engine.facts import Facts
        from routescope.analysis.index import Index
        from routescope.analysis.phases.trace import resolve_entry, trace_call
        from routescope.source.local import CheckoutTree

        self.Engine, self.Facts, self.Budget, self.Index = Engine, Facts, Budget, Index
        self.values, self.containers, self.contents = values, containers, contents
        self.Const, self.Unknown, self.Instance = values.Const, values.Unknown, values.Instance
        self.resolve_entry, self.trace_call = resolve_entry, trace_call
        self.CheckoutTree = CheckoutTree

    def unknown_input(self, name: str) -> Any:
        """The Unknown an unknown entry argument is."""
        return self.Unknown(f"input {name}", kind=self.values.UnknownKind.INPUT)


_API: _Api | None = None


def engine_api() -> _Api:
    global _API
    if _API is None:
        _API = _Api()
    return _API


# --- what an engine value means as Python data ------------------------------------------------


@dataclass(frozen=True)
class Unk:
    """Some value not (fully) known; `truthy` when its truthiness is."""

    truthy: bool | None = None

    def __repr__(self) -> str:
        return "<?>" if self.truthy is None else f"<?{'truthy' if self.truthy else 'falsy'}>"


@dataclass(frozen=True)
class Opaque:
    """An engine value that is no plain Python data (an object, a function, a module...)."""

    what: str

    def __repr__(self) -> str:
        return f"<{self.what}>"


@dataclass(frozen=True)
class Clash:
    """A dict or set holding keys Python treats as one (True, 1, 1.0): no real container."""

    items: tuple[Any, ...]
    label: str

    def __repr__(self) -> str:
        return f"<{self.label} with keys Python merges: {list(self.items)!r}>"


def _literal(text: str) -> Any:
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return Unk()


def to_python(value: Any, state: Any, depth: int = 8) -> Any:
    """An engine value as the Python value it stands for on the path that ended in `state`:
    plain data where known, with `Unk` for what is not known (anywhere inside), `Opaque` for
    what is no plain data.

    The one place that reads the engine's value representation."""
    api = engine_api()
    v, c, r = api.values, api.containers, api.contents
    if depth <= 0:
        return Unk()
    if isinstance(value, v.Const):
        return value.value
    if isinstance(value, v.Unknown):
        return Unk(value.truthy)
    if isinstance(value, c.TupleVal):
        return tuple(to_python(x, state, depth - 1) for x in value.items)
    if isinstance(value, c.ListVal):
        items = r.seq_items(state, value)
        if items is None:
            return Unk()
        return [to_python(x, state, depth - 1) for x in items]
    if isinstance(value, (c.DictVal, c.SetVal)):
        e = r.entries(state, value)
        if not e.closed():
            return Unk(True if e.items else None)
        pairs = [(to_python(k, state, depth - 1), to_python(x, state, depth - 1))
                 for k, x in e.items.values()]  # fmt: skip
        if any(not _hashable(k) for k, _ in pairs):
            return Unk(True if pairs else None)
        if isinstance(value, c.SetVal):
            return {k for k, _ in pairs}
        return dict(pairs)
    if isinstance(value, v.Instance):
        label = value.label or (value.cls.qualname if value.cls is not None else "object")
        return Opaque(f"object {label}")
    return Opaque(type(value).__name__)


def _hashable(x: Any) -> bool:
    if isinstance(x, (Unk, Opaque)):
        return False
    try:
        hash(x)
    except TypeError:
        return False
    return True


def exception_name(value: Any) -> str | None:
    """The class name of an exception the engine says is raised; None when not known."""
    api = engine_api()
    v = api.values
    if isinstance(value, getattr(v, "External", ())):
        return str(value.name).rsplit(".", 1)[-1]
    if isinstance(value, v.Instance) and value.cls is not None:
        return str(value.cls.qualname).rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    if isinstance(value, getattr(v, "ClassVal", ())):
        return str(value.qualname).rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    return None


def is_known(x: Any) -> bool:
    """No Unk/Opaque/Clash anywhere inside."""
    if isinstance(x, (Unk, Opaque, Clash)):
        return isinstance(x, Clash)  # a clash is a decided (if impossible) value
    if isinstance(x, (list, tuple)):
        return all(is_known(i) for i in x)
    if isinstance(x, dict):
        return all(is_known(i) for i in x.values())
    return True


def covers(e: Any, c: Any) -> bool:
    """Does engine value `e` (from to_python) stand for CPython value `c`?"""
    if isinstance(e, Unk):
        if e.truthy is None:
            return True
        try:
            return bool(c) == e.truthy
        except Exception:
            return False
    if isinstance(e, (Opaque, Clash)):
        return False
    if type(e) is not type(c):
        return False
    if isinstance(e, (list, tuple)):
        return len(e) == len(c) and all(covers(x, y) for x, y in zip(e, c, strict=True))
    if isinstance(e, dict):
        if len(e) != len(c):
            return False
        ekeys = {k: k for k in e}
        for k, y in c.items():
            if k not in e:
                return False
            ek = ekeys[k]
            if type(ek) is not type(k):  # {1: ...} is not {True: ...}
                return False
            if not covers(e[k], y):
                return False
        return True
    if isinstance(e, (set, frozenset)):
        if len(e) != len(c) or e != c:
            return False
        ekeys = {k: k for k in e}
        return all(type(ekeys[k]) is type(k) for k in c)
    try:
        return bool(e == c)
    except Exception:
        return False


# --- outcomes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    kind: str  # "return" | "raise" | "stop" | "error" (CPython: not meant to happen)
    value: Any = None  # returned value (to_python'd for the engine); for raise: the class name
    text: str = ""  # the engine's own description of the value

    def __str__(self) -> str:
        if self.kind == "return":
            return f"return {self.value!r}"
        if self.kind == "raise":
            return f"raise {self.value or '?'}"
        return f"{self.kind} {self.text or self.value}"


def outcome_covers(e: Outcome, c: Outcome) -> bool:
    if e.kind == "stop":
        return True
    if e.kind != c.kind:
        return False
    if c.kind == "raise":
        return e.value is None or e.value == c.value
    return covers(e.value, c.value)


def decided(e: Outcome) -> bool:
    """A fully known outcome (a value with nothing unknown in it, or a raise of a known class)."""
    if e.kind == "return":
        return is_known(e.value)
    return e.kind == "raise" and e.value is not None


# --- CPython --------------------------------------------------------------------------------------


class _Timeout(BaseException):
    pass


@contextmanager
def _time_guard(seconds: float, exc: type[BaseException]) -> Iterator[None]:
    """Raise `exc` in this thread after `seconds` (main thread only; elsewhere no guard)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise exc(f"ran past {seconds:g} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class _ProgramImporter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the program's modules (compiled once) to `import`, for one run at a time."""

    def __init__(self, root: Path, codes: dict[str, tuple[types.CodeType, bool, str]]) -> None:
        self.root = root
        self.codes = codes

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        got = self.codes.get(fullname)
        if got is None:
            return None
        _code, is_pkg, origin = got
        spec = importlib.util.spec_from_loader(fullname, self, origin=origin, is_package=is_pkg)
        return spec

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        code, _is_pkg, origin = self.codes[module.__name__]
        module.__file__ = origin
        exec(code, module.__dict__)


def _purge() -> None:
    for name in [n for n in sys.modules if n == "fw" or n.startswith("fw.")]:
        del sys.modules[name]


def compile_program(program: Program, root: Path) -> dict[str, tuple[types.CodeType, bool, str]]:
    codes = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, text in program.files:
            mod = "fw" if name == "__init__.py" else f"fw.{name[:-3]}"
            origin = str(root / "fw" / name)
            codes[mod] = (compile(text, origin, "exec"), name == "__init__.py", origin)
    return codes


def run_cpython(codes: dict[str, tuple[types.CodeType, bool, str]], root: Path,
                args: tuple[Any, ...]) -> Outcome:  # fmt: skip
    """main(*args) in a fresh `fw`: modules imported anew, nothing shared with other runs."""
    import copy

    importer = _ProgramImporter(root, codes)
    _purge()
    sys.meta_path.insert(0, importer)
    try:
        with _time_guard(CPYTHON_SECONDS, _Timeout):
            mod = importlib.import_module("fw.main")
            result = mod.main(*copy.deepcopy(args))
        return Outcome("return", result)
    except _Timeout as exc:
        return Outcome("error", f"timeout: {exc}")
    except RecursionError:
        return Outcome("error", "RecursionError")
    except Exception as exc:
        name = type(exc).__name__
        if name in EXPECTED_RAISES:
            return Outcome("raise", name)
        return Outcome("error", f"{name}: {exc}")
    finally:
        sys.meta_path.remove(importer)
        _purge()


# --- the engine -----------------------------------------------------------------------------------


class EngineCrash(Exception):
    def __init__(self, text: str, shape: str) -> None:
        super().__init__(text)
        self.shape = shape


def write_program(program: Program, root: Path) -> None:
    pkg = root / "fw"
    pkg.mkdir(parents=True, exist_ok=True)
    for name, text in program.files:
        (pkg / name).write_text(text)


def run_engine(root: Path, args: list[Any]) -> list[Outcome]:
    """Every path of the engine through fw.main:main(*args), as outcomes."""
    api = engine_api()
    try:
        with _time_guard(ENGINE_SECONDS, _Timeout):
            index = api.Index(api.CheckoutTree(root))
            try:
                budget = api.Budget(seconds=ENGINE_SECONDS * 2)
            except TypeError:
                budget = None
            engine = api.Engine(index, api.Facts(), budget)
            fn = api.resolve_entry(engine, "fw.main:main")
            paths = api.trace_call(engine, fn, args, {})
            out = []
            for p in paths:
                if p.outcome == "return":
                    out.append(Outcome("return", to_python(p.value, p.end), p.result))
                elif p.outcome == "raise":
                    out.append(Outcome("raise", exception_name(p.value), p.result))
                else:
                    out.append(Outcome("stop", None, p.stopped or p.result))
            return out
    except _Timeout as exc:
        raise EngineCrash(f"engine timed out: {exc}", "timeout") from None
    except RecursionError:
        raise EngineCrash("engine: RecursionError", "RecursionError") from None
    except Exception as exc:
        import traceback

        tb = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(tb.filename).name}:{tb.lineno}"
        raise EngineCrash(
            f"engine raised {type(exc).__name__}: {exc} (at {where})",
            f"{type(exc).__name__}@{where}",
        ) from None


# --- checks ---------------------------------------------------------------------------------------


@dataclass
class Discrepancy:
    kind: str  # wrong | missing | imprecise | crash | generator
    check: str  # known | unknown
    inputs: str
    cpython: str
    engine: str
    note: str = ""
    shape: str = ""  # how the answers differ, coarsely (what tells two bugs apart)

    @property
    def signature(self) -> tuple[str, str, str]:
        return (self.kind, self.check, self.shape)

    def __str__(self) -> str:
        return (f"[{self.kind}/{self.shape}] ({self.check} inputs: {self.inputs}) {self.note}\n"
                f"    CPython: {self.cpython}\n    engine:  {self.engine}")  # fmt: skip


@dataclass
class Report:
    program: Program
    outcomes: int = 0  # CPython outcomes compared with the engine's
    engine_runs: int = 0
    discrepancies: list[Discrepancy] = field(default_factory=list)
    seconds: float = 0.0

    def failures(self, precision: bool = True) -> list[Discrepancy]:
        """What a test fails on: everything but imprecision, and imprecision too (with
        `precision`) unless the program uses a feature whose precision is not promised."""
        excused = bool(self.program.features & set(IMPRECISE_OK))
        return [d for d in self.discrepancies
                if d.kind != "imprecise" or (precision and not excused)]  # fmt: skip

    def text(self) -> str:
        lines = [self.program.describe()]
        lines += [str(d) for d in self.discrepancies]
        return "\n".join(lines)


def value_shape(e: Any, c: Any) -> str:
    """Where engine value `e` first fails to cover CPython value `c`, coarsely."""
    if isinstance(e, Unk):
        return "truthiness"
    if isinstance(e, Clash):
        return f"{e.label}-keys-merge"
    if isinstance(e, Opaque):
        return "not-plain-data"
    if type(e) is not type(c):
        if isinstance(e, (list, tuple, dict, set)) or isinstance(c, (list, tuple, dict, set)):
            return f"{type(c).__name__}-vs-{type(e).__name__}"
        return "scalar-type"
    if isinstance(e, (list, tuple)):
        if len(e) != len(c):
            return f"{type(c).__name__}-length"
        for x, y in zip(e, c, strict=True):
            if not covers(x, y):
                inner = value_shape(x, y)
                return inner if isinstance(e, tuple) else f"list-item:{inner}"
        return "value"
    if isinstance(e, dict):
        if set(e) != set(c) or len(e) != len(c):
            return "dict-keys"
        for k, y in c.items():
            if not covers(e[k], y):
                return f"dict-value:{value_shape(e[k], y)}" if type(k) is type(
                    next(x for x in e if x == k)) else "dict-key-type"  # fmt: skip
        return "dict-key-type"
    if isinstance(e, (set, frozenset)):
        return "set-members"
    return "scalar-value"


def outcome_shape(outs: list[Outcome], cpy: Outcome) -> str:
    """Why no engine outcome covers CPython's: against the closest engine path."""
    same = [o for o in outs if o.kind == cpy.kind]
    if not same:
        kinds = "/".join(sorted({o.kind for o in outs})) or "nothing"
        return f"{cpy.kind}-vs-{kinds}"
    if cpy.kind == "raise":
        return "exception-class"
    return value_shape(same[0].value, cpy.value)


def _show_inputs(args: tuple[Any, ...], unknown: tuple[bool, ...] = (False,) * 3) -> str:
    return ", ".join(f"{n}={'?' if u else repr(a)}"
                     for n, a, u in zip(INPUTS, args, unknown, strict=True))  # fmt: skip


def _paths(outs: list[Outcome]) -> str:
    if not outs:
        return "no paths"
    shown = [str(o) for o in outs[:6]]
    more = f" ... ({len(outs)} paths)" if len(outs) > 6 else ""
    return " | ".join(shown) + more


def check_known(report: Report, codes: Any, root: Path, args: tuple[Any, ...],
                cpy: Outcome) -> None:  # fmt: skip
    api = engine_api()
    shown = _show_inputs(args)
    try:
        outs = run_engine(root, [api.Const(a) for a in args])
    except EngineCrash as exc:
        report.discrepancies.append(Discrepancy("crash", "known", shown, str(cpy), str(exc),
                                                shape=_crash_shape(exc)))  # fmt: skip
        return
    report.engine_runs += 1
    report.outcomes += 1
    covering = [o for o in outs if outcome_covers(o, cpy)]
    if len(outs) == 1 and outs[0].kind != "stop":
        e = outs[0]
        if not covering:
            report.discrepancies.append(Discrepancy(
                "wrong", "known", shown, str(cpy), _paths(outs),
                "the engine's one path contradicts CPython", outcome_shape(outs, cpy)))  # fmt: skip
        elif not decided(e) and not (e.kind == "raise" and cpy.kind == "raise"):
            report.discrepancies.append(Discrepancy(
                "imprecise", "known", shown, str(cpy), _paths(outs),
                "one path, but its value is not fully known", "unknown-value"))  # fmt: skip
        return
    if not covering:
        report.discrepancies.append(Discrepancy(
            "missing", "known", shown, str(cpy), _paths(outs),
            "no engine path covers CPython's outcome", outcome_shape(outs, cpy)))  # fmt: skip
        return
    stopped = any(o.kind == "stop" for o in outs)
    why = "a path stopped" if stopped else f"{len(outs)} paths"
    report.discrepancies.append(Discrepancy("imprecise", "known", shown, str(cpy), _paths(outs),
                                            f"known inputs, yet {why}",
                                            "stop" if stopped else "several-paths"))  # fmt: skip


def check_unknown(report: Report, codes: Any, root: Path) -> None:
    api = engine_api()
    p = report.program
    fixed = [d[i] for d, i in zip(p.domains, p.fixed, strict=True)]
    args = [api.unknown_input(n) if u else api.Const(v)
            for n, u, v in zip(INPUTS, p.unknown, fixed, strict=True)]  # fmt: skip
    shown = _show_inputs(tuple(fixed), p.unknown)
    runs: dict[str, tuple[tuple[Any, ...], Outcome]] = {}
    for assignment in p.consistent():
        cpy = run_cpython(codes, root, assignment)
        if cpy.kind == "error":
            report.discrepancies.append(Discrepancy(
                "generator", "unknown", _show_inputs(assignment), str(cpy), "-",
                "CPython raised what the generator never means to raise",
                str(cpy.value).split(":")[0]))  # fmt: skip
            return
        runs.setdefault(repr((cpy.kind, cpy.value, _types(cpy.value))), (assignment, cpy))
    try:
        outs = run_engine(root, args)
    except EngineCrash as exc:
        report.discrepancies.append(Discrepancy("crash", "unknown", shown, "-", str(exc),
                                                shape=_crash_shape(exc)))  # fmt: skip
        return
    report.engine_runs += 1
    single = len(outs) == 1 and decided(outs[0])
    for assignment, cpy in runs.values():
        report.outcomes += 1
        if any(outcome_covers(o, cpy) for o in outs):
            continue
        kind = "wrong" if single else "missing"
        note = ("the engine's single decided outcome is not CPython's under "
                f"{_show_inputs(assignment)}") if single else \
            f"no engine path covers CPython's outcome under {_show_inputs(assignment)}"  # fmt: skip
        report.discrepancies.append(Discrepancy(kind, "unknown", shown, str(cpy), _paths(outs),
                                                note, outcome_shape(outs, cpy)))  # fmt: skip


def _crash_shape(exc: EngineCrash) -> str:
    return exc.shape


def _types(v: Any) -> Any:
    """The types inside a value (1 and True are different outcomes)."""
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_types(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple((type(k).__name__, _types(x)) for k, x in v.items()))
    if isinstance(v, (set, frozenset)):
        return ("set", tuple(sorted(type(x).__name__ for x in v)))
    return type(v).__name__


def check_program(program: Program, known_runs: int = 3, seed: int = 0,
                  unknown_check: bool = True) -> Report:  # fmt: skip
    """Run every check on one program; the report lists what disagreed."""
    start = time.perf_counter()
    report = Report(program)
    root = Path(tempfile.mkdtemp(prefix="rsdiff-"))
    try:
        write_program(program, root)
        codes = compile_program(program, root)
        for args in program.assignments(limit=known_runs, seed=seed):
            cpy = run_cpython(codes, root, args)
            if cpy.kind == "error":
                report.discrepancies.append(Discrepancy(
                    "generator", "known", _show_inputs(args), str(cpy), "-",
                    "CPython raised what the generator never means to raise",
                    str(cpy.value).split(":")[0]))  # fmt: skip
                return report
            check_known(report, codes, root, args, cpy)
        if unknown_check and any(program.unknown):
            check_unknown(report, codes, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        report.seconds = time.perf_counter() - start
    return report


def program_from_text(text: str) -> Program:
    """A program as `Program.describe()` (and the campaign's failure files) writes it."""
    files: list[tuple[str, str]] = []
    meta: dict[str, str] = {}
    for chunk in re.split(r"(?m)^# ---- fw/", text)[1:]:
        name, _, body = chunk.partition("\n")
        code = [line for line in body.splitlines() if not line.startswith("# ")]
        files.append((name.strip(), "\n".join(code).strip("\n") + "\n"))
    for line in text.splitlines():
        for key in ("inputs", "unknown-input check", "features"):
            if line.startswith(f"# {key}"):
                meta.setdefault(key, line[len(key) + 2 :].lstrip(": "))
    domains = tuple(
        tuple(ast.literal_eval(m.group(2)))
        for m in re.finditer(r"(\w+): (\[.*?\])(?=, \w+: \[|$)", meta["inputs"])
    )
    unknown_part, _, fixed_part = meta["unknown-input check"].partition(", fixed ")
    unknown_names = set(ast.literal_eval(unknown_part.removeprefix("unknown ")))
    fixed = ast.literal_eval(fixed_part)
    return Program(
        files=tuple(files),
        kinds=("any",) * len(INPUTS),
        domains=domains,
        unknown=tuple(n in unknown_names for n in INPUTS),
        fixed=tuple(
            d.index(fixed[n]) if n in fixed else 0 for n, d in zip(INPUTS, domains, strict=True)
        ),
        features=frozenset(f.strip() for f in meta.get("features", "").split(",") if f.strip()),
    )


# --- reducing a failing program -----------------------------------------------------------------


def _bodies(tree: Any) -> Iterator[list[Any]]:
    """Every statement list in a module, outermost first."""
    import ast

    for node in ast.walk(tree):
        for attr in ("body", "orelse", "finalbody"):
            body = getattr(node, attr, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body
        if isinstance(node, ast.Try):
            for h in node.handlers:
                yield h.body


def _edits(text: str) -> Iterator[str]:
    """Smaller versions of a module: one statement deleted, or a compound statement replaced
    by one of its blocks (its source unparsed)."""
    import ast

    tree = ast.parse(text)
    n_bodies = sum(1 for _ in _bodies(tree))
    for b in range(n_bodies):
        for i in range(64):
            tree = ast.parse(text)
            bodies = list(_bodies(tree))
            if b >= len(bodies) or i >= len(bodies[b]):
                break
            body = bodies[b]
            stmt = body[i]
            replacements: list[list[Any]] = [[]]
            for attr in ("body", "orelse", "finalbody"):
                block = getattr(stmt, attr, None)
                if isinstance(block, list) and block and not isinstance(stmt, (
                        ast.FunctionDef, ast.ClassDef)):  # fmt: skip
                    replacements.append(block)
            for h in getattr(stmt, "handlers", []):
                replacements.append(h.body)
            for rep in replacements:
                new_body = body[:i] + rep + body[i + 1 :]
                body[:] = new_body or [ast.Pass()]
                yield ast.unparse(tree) + "\n"
                tree = ast.parse(text)
                bodies = list(_bodies(tree))
                body = bodies[b]


def _names_defined(program: Program) -> bool:
    """Every name a module reads is bound somewhere in it (or is a builtin): what a deleted
    definition would break. Approximate (ignores order and scopes), which is enough here."""
    import ast
    import builtins

    bound = set(dir(builtins)) | {"__name__", "__file__"}
    loads: set[str] = set()
    for _name, text in program.files:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Name):
                (loads if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.alias):
                bound.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
            elif isinstance(node, ast.Global):
                bound.update(node.names)
    return loads <= bound


def reduce_program(program: Program, signature: tuple[str, str, str], known_runs: int = 3,
                   seed: int = 0, max_tries: int = 300) -> Program:  # fmt: skip
    """Delete statements (and narrow input domains) while the program still shows a
    discrepancy with this signature: a minimal program a person can read."""
    import dataclasses as dc

    from tests.engine.progen import features_of

    global CPYTHON_SECONDS
    tries = 0

    def still(p: Program) -> bool:
        nonlocal tries
        tries += 1
        if not _names_defined(p):
            return False
        try:
            r = check_program(p, known_runs=known_runs, seed=seed)
        except Exception:
            return False
        if any(d.kind == "generator" for d in r.discrepancies):
            return False
        return any(d.signature == signature for d in r.discrepancies)

    saved, CPYTHON_SECONDS = CPYTHON_SECONDS, 0.5
    try:
        best = program
        changed = True
        while changed and tries < max_tries:
            changed = False
            for fi, (name, text) in enumerate(best.files):
                if not text.strip():
                    continue
                for new_text in _edits(text):
                    if tries >= max_tries:
                        break
                    files = list(best.files)
                    files[fi] = (name, new_text)
                    cand = dc.replace(best, files=tuple(files))
                    if len(new_text) < len(text) and still(cand):
                        best, changed = cand, True
                        break
                if changed:
                    break
        for i, dom in enumerate(best.domains):  # one value per input where that suffices
            if len(dom) == 1:
                continue
            for v in dom:
                doms = list(best.domains)
                doms[i] = (v,)
                fixed = list(best.fixed)
                fixed[i] = 0
                cand = dc.replace(best, domains=tuple(doms), fixed=tuple(fixed))
                if tries < max_tries and still(cand):
                    best = cand
                    break
        return dc.replace(best, features=features_of(best))
    finally:
        CPYTHON_SECONDS = saved
