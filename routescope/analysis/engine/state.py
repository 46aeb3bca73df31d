"""Path state of the trace engine: decisions taken, frames entered, the sink reached."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from routescope.analysis.engine.values import Instance, UnknownKind, Value


@dataclass(frozen=True, slots=True)
class Input:
    """A value a condition read: its source text, what it evaluated to, where that came from."""

    text: str
    value: str
    origins: tuple[str, ...]


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
    kind: str  # cuda_kernel | triton | torch_compile | torch | flashinfer | fused_moe_kernel | ...
    file: str  # the call site
    line: int
    function: str  # the framework function making the call
    rule: str  # the rule id that classified it
    # the call's arguments the rule names, described, with where each value came from
    args: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


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
    # copy-on-write object fields: what this path wrote to objects other paths may share
    heap: dict[int, dict[str, Value]] = field(default_factory=dict)
    heap_objs: dict[int, Instance] = field(default_factory=dict)  # keeps ids alive
    stopped: str = ""  # a budget overrun or dead end: the path's reason for ending early
    assumptions: list[str] = field(default_factory=list)
    # an exception a call raised that a handler up the stack may catch: the statement that
    # made the call ends with it (the rest of the statement is not evaluated)
    raising: Value | None = None
    # what a generator yielded: the statement that yielded ends its function with it (only a
    # context manager's generator is run, up to its yield)
    yielded: Value | None = None

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
            heap=dict(self.heap),  # inner dicts are shared until written (write() copies)
            heap_objs=dict(self.heap_objs),
            stopped=self.stopped,
            raising=self.raising,
            yielded=self.yielded,
        )

    @property
    def env(self) -> dict[str, Value]:
        return self.envs[-1]

    def fields(self, obj: Instance) -> dict[str, Value]:
        """The fields of `obj` as this path sees them."""
        own = self.heap.get(id(obj))
        return own if own is not None else obj.fields

    def commit(self) -> None:
        """Make this path's object writes the objects' own (module level, class set-up)."""
        for key, fields in self.heap.items():
            obj = self.heap_objs[key]
            obj.fields.clear()
            obj.fields.update(fields)
        self.heap.clear()
        self.heap_objs.clear()

    def replace_fields(self, obj: Instance, fields: dict[str, Value]) -> None:
        self.heap[id(obj)] = fields
        self.heap_objs[id(obj)] = obj

    def write(self, obj: Instance, name: str, value: Value) -> None:
        """Copy-on-write: a fork may share the inner dict, so every write makes its own."""
        key = id(obj)
        own = dict(self.heap.get(key, obj.fields))
        own[name] = value
        self.heap[key] = own
        self.heap_objs[key] = obj
