"""Path state of the trace engine: decisions taken, frames entered, the sink reached."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from routescope.analysis.engine.containers import MappingProxy
from routescope.analysis.engine.values import (
    SERIALS,
    ClassVal,
    Instance,
    ModuleVal,
    Tensor,
    UnknownKind,
    Value,
)


@dataclass(frozen=True, slots=True)
class Input:
    """A value a condition read: its source text, what it evaluated to, where that came from."""

    text: str
    value: str
    origins: tuple[str, ...]
    data: tuple[str, Any] = ("unknown", None)  # values.as_data: (kind, JSON value)


@dataclass(frozen=True, slots=True)
class Part:
    """One operand of an and/or condition (the sub-condition that actually decided)."""

    text: str
    value: bool | None


@dataclass(frozen=True, slots=True)
class Decision:
    file: str
    line: int
    function: str
    text: str  # the condition's source text
    value: bool | None  # None: undecided, the path forked here
    inputs: tuple[Input, ...] = ()
    parts: tuple[Part, ...] = ()
    reason: str = ""  # why it is undecided, in words
    kind: UnknownKind | None = None  # why it is undecided: the kind of the unknown that decided


@dataclass(frozen=True, slots=True)
class Frame:
    function: str  # qualified name
    file: str
    line: int  # the def line
    call_file: str
    call_line: int
    decorators: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SinkHit:
    name: str  # qualified name of what computes the top-k
    kind: str  # one of facts.KINDS ("unrecognised": an internal marker, never reported)
    file: str  # the call site
    line: int
    function: str  # the framework function making the call
    rule: str  # the rule id that classified it
    # the call's arguments the rule names, described, with where each value came from
    args: tuple[tuple[str, str, tuple[str, ...], tuple[str, Any]], ...] = ()  # (+ as_data)
    provider: str = ""  # the library it comes from (sgl_kernel, flashinfer, jit, triton, torch)
    within: str = ""  # the torch.compile'd function it runs inside, if any
    # False for a kernel launched on the path that computes no top-k from the router's scores
    # (it reads ids a kernel produced, or no scores at all: the experts' GEMMs, a remap): the
    # path launches it, it is never the router kernel
    routes: bool = True


@dataclass
class PathState:
    """Mutable per path; `fork()` copies what a branch may change."""

    envs: list[dict[str, Value]] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    trail: list[Frame] = field(default_factory=list)  # every frame entered, in order
    sinks: list[SinkHit] = field(default_factory=list)  # every routing kernel called, in order
    claims: dict[int, SinkHit] = field(default_factory=dict)  # id(tensor) -> kernel that wrote it
    # the claimed tensors, so their ids stay theirs
    claimed: list[Any] = field(default_factory=list)
    # copy-on-write contents of objects other paths may share: an instance's fields, a
    # module's globals, a container's items; what this path wrote (never changed in place)
    heap: dict[int, Any] = field(default_factory=dict)
    heap_objs: dict[int, Value] = field(default_factory=dict)  # keeps ids alive
    # functools.cache / lru_cache memos filled on this path (and the paths it forked from): the
    # cache is process state, so a sibling path never sees this path's entries
    memo: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    stopped: str = ""  # a budget overrun or dead end: the path's reason for ending early
    assumptions: list[str] = field(default_factory=list)
    # an exception a call raised that a handler up the stack may catch: the statement that
    # made the call ends with it (the rest of the statement is not evaluated)
    raising: Value | None = None
    # where the exception this path raises (or last raised) was raised: (file, line, function)
    raised_at: tuple[str, int, str] | None = None
    # what a generator yielded: the statement that yielded ends its function with it (only a
    # context manager's generator is run, up to its yield)
    yielded: Value | None = None
    # in a by-kernel decode trace, whether this path has called a kernel that routes: its
    # steps from there count against the experts' share
    routed: bool = False
    # what the branches this path took tell of the counts they compared (engine/intervals.py):
    # id -> (the count, its least value, its greatest or None); replaced, never changed in place
    bounds: dict[int, tuple[Value, int, int | None]] = field(default_factory=dict)

    def fork(self) -> PathState:
        """A branch of this path: its state and its record so far."""
        new = self.scratch()
        new.decisions, new.trail = list(self.decisions), list(self.trail)
        new.sinks, new.claimed = list(self.sinks), list(self.claimed)
        new.assumptions = list(self.assumptions)
        return new

    def scratch(self) -> PathState:
        """A throw-away copy to re-evaluate an expression on: what it records (decisions, the
        frames it enters, kernels) is dropped with it, so its record starts empty instead of
        copying this path's."""
        return PathState(
            envs=[dict(e) for e in self.envs],
            frames=list(self.frames),
            claims=dict(self.claims),
            heap=dict(self.heap),  # contents are shared until written (writes replace them)
            heap_objs=dict(self.heap_objs),
            memo=dict(self.memo),
            stopped=self.stopped,
            raising=self.raising,
            raised_at=self.raised_at,
            yielded=self.yielded,
            routed=self.routed,
            bounds=self.bounds,
        )

    @property
    def env(self) -> dict[str, Value]:
        return self.envs[-1]

    def fields(self, obj: Instance) -> dict[str, Value]:
        """The fields of `obj` as this path sees them."""
        own = self.heap.get(id(obj))
        got = own if own is not None else obj.fields
        if RECORDING:
            _read(obj, got)
        return got

    def field(self, obj: Instance, name: str) -> Value | None:
        """One field of `obj` as this path sees it (None: not set): what a computation that
        reads only this field depends on is this field, not the others."""
        own = self.heap.get(id(obj))
        got = (own if own is not None else obj.fields).get(name)
        _read_name(obj, name, got)
        return got

    def global_value(self, mod: ModuleVal, name: str) -> Value | None:
        """A module global as this path sees it (a function's `global` writes are the path's
        own); None when the module has no such name."""
        own = self.heap.get(id(mod))
        got = (own if own is not None else mod.globals).get(name)
        _read_name(mod, name, got)  # a module's dict changes in place while it loads
        return got

    def contents(self, obj: Value) -> Any:
        """What a mutable object holds on this path: its fields, globals or items."""
        if type(obj) is MappingProxy:  # a view holds what its dict holds
            obj = obj.target
        own = self.heap.get(id(obj))
        got = own if own is not None else base_of(obj)
        if RECORDING:
            _read(obj, got)
        return got

    def keyed(self, obj: Value) -> Any:
        """`contents`, for a join or a comparison of paths: an object's names (fields, globals,
        class attributes) read one by one, so what depends on them is each of them."""
        if type(obj) is MappingProxy:
            obj = obj.target
        own = self.heap.get(id(obj))
        got = own if own is not None else base_of(obj)
        if RECORDING and isinstance(got, dict):
            for name, v in got.items():
                _read_name(obj, name, v)
        elif RECORDING:
            _read(obj, got)
        return got

    def store(self, obj: Value, contents: Any) -> None:
        """Replace what `obj` holds on this path (contents are never changed in place); an
        object the whole process shares, whatever way wrote it (sys.modules), holds it."""
        if type(obj) is MappingProxy:  # (a write Python refuses: kept on the dict it views)
            obj = obj.target
        kind = type(obj)
        if getattr(kind, "process_wide", False):
            set_base(obj, contents)
            return
        if getattr(kind, "mirrored", False):  # an object's __dict__: its attributes change too
            before = self.heap.get(id(obj))
            obj.mirror(self, before if before is not None else base_of(obj), contents)  # type: ignore[attr-defined]
        self.heap[id(obj)] = contents
        self.heap_objs[id(obj)] = obj
        for r in RECORDING:
            r.writes[id(obj)] = obj

    def adopt(self, other: PathState) -> None:
        """Take on the object state a branch of this path left (what a call run aside on it
        wrote), keeping this path's own record."""
        self.heap, self.heap_objs = other.heap, other.heap_objs
        self.claims, self.memo = other.claims, other.memo

    def commit(self) -> None:
        """Make this path's writes the objects' own (module level, class set-up, a phase that
        ends): later evaluation starts from them. Memos filled on the path stay with it."""
        for key, contents in self.heap.items():
            set_base(self.heap_objs[key], contents)
        self.heap.clear()
        self.heap_objs.clear()

    def write(self, obj: Instance | ModuleVal | Tensor, name: str, value: Value) -> None:
        """Copy-on-write: a fork may share the inner dict, so every write makes its own."""
        own = self.heap.get(id(obj))  # (only `name` is read: what it held before)
        own = dict(own if own is not None else base_of(obj))
        _read_name(obj, name, own.get(name))
        own[name] = value
        self.store(obj, own)


def base_of(obj: Value) -> Any:
    if isinstance(obj, Instance):
        return obj.fields
    if isinstance(obj, ModuleVal):
        return obj.globals
    if isinstance(obj, ClassVal):
        return obj.attrs
    if isinstance(obj, Tensor):  # a torch.nn module: the parameters torch's class makes
        return dict(obj.members or ())
    return obj.base  # type: ignore[attr-defined]


def set_base(obj: Value, contents: Any) -> None:
    if isinstance(obj, Instance):  # a new dict: contents read before stay as they were read
        obj.fields = dict(contents)
    elif isinstance(obj, ClassVal):
        obj.attrs = dict(contents)
    elif isinstance(obj, ModuleVal):  # the dict keeps its identity (the module body's env)
        if obj.globals is not contents:
            obj.globals.clear()
            obj.globals.update(contents)
    else:
        obj.base = contents  # type: ignore[attr-defined]


class Reads:
    """What a computation read of mutable objects (each object's contents, by identity: the
    contents are never changed in place) and which objects it wrote: a memo of it is valid on
    any path that holds the same contents for everything it read (ENGINE.md: caches are keyed
    by what they read)."""

    __slots__ = ("memo", "reads", "since", "truths", "writes")

    def __init__(self) -> None:
        self.since = next(SERIALS)  # objects with a later serial were made by the computation
        self.reads: dict[int, tuple[Value, Any]] = {}
        self.writes: dict[int, Value] = {}
        # the truths of joined values it looked up on the path (intervals.remember_truth): what
        # the first lookup found (None: not known there)
        self.truths: dict[int, Any] = {}
        # functools memo keys looked up on the path: what the first lookup found (None: a
        # miss) and the objects the key names by identity (engine/replay.py)
        self.memo: dict[tuple[Any, ...], tuple[Any, tuple[Any, ...]]] = {}

    def absorb(self, other: Reads) -> None:
        """What a cached computation read, read again by taking its cached result."""
        for key, seen in other.reads.items():
            if other.older(seen[0]):  # (what it made itself comes with the cached result)
                self.reads.setdefault(key, seen)
        for mkey, hit in other.memo.items():
            self.memo.setdefault(mkey, hit)
        for tkey, known in other.truths.items():
            self.truths.setdefault(tkey, known)

    def older(self, obj: Value) -> bool:
        return getattr(obj, "serial", 0) < self.since

    def holds_on(self, st: PathState) -> bool:
        """Does `st` hold what the computation read, for every object older than it?"""
        for obj, contents in self.reads.values():
            if not self.older(obj):
                continue
            now = st.heap.get(id(obj), base_of(obj))
            if isinstance(contents, tuple):  # one name read (a global, a field)
                if now.get(contents[0]) is not contents[1]:
                    return False
            elif now is not contents:
                return False
        return self.same_truths(st)

    def same_truths(self, st: PathState) -> bool:
        """Does `st` know what the computation found of each joined value's truth it looked up?"""
        return all(st.bounds.get(k) == known for k, known in self.truths.items())

    def side_effects(self) -> bool:
        """Did the computation write an object that existed before it?"""
        return any(self.older(o) for o in self.writes.values())


RECORDING: list[Reads] = []  # the computations being recorded, innermost last


def _read(obj: Value, contents: Any) -> None:
    for r in RECORDING:
        r.reads.setdefault(id(obj), (obj, contents))


def _read_name(obj: Value, name: str, got: Value | None) -> None:
    """One name of an object read (a field, a global): recorded as (name, value)."""
    for r in RECORDING:
        r.reads.setdefault(hash((id(obj), name)), (obj, (name, got)))


def class_of(st: PathState, obj: Instance) -> ClassVal:
    """The class `obj` is an instance of on this path: its own, or one assigned to its
    `__class__` (a wrapper subclass swapped in after the object was built)."""
    assigned = (
        st.field(obj, "__class__") if "__class__" in st.heap.get(id(obj), obj.fields) else None
    )
    return assigned if isinstance(assigned, ClassVal) else obj.cls  # type: ignore[return-value]
