"""Run the engine from an entry point and collect every path with its decisions and sink."""

from __future__ import annotations

from dataclasses import dataclass, field

from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.sinks import UNRECOGNISED, routing_producer, torch_ops_hit
from routescope.analysis.engine.sinks import held as items_of
from routescope.analysis.engine.state import Decision, Frame, PathState, SinkHit
from routescope.analysis.engine.values import (
    ClassVal,
    External,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
    describe,
    raises,
)
from routescope.analysis.phases.runphase import TrialStopped
from routescope.errors import RoutescopeError


@dataclass(frozen=True, slots=True)
class TracedPath:
    decisions: tuple[Decision, ...]
    frames: tuple[Frame, ...]  # every framework function entered, in order
    sink: SinkHit | None  # the kernel that produced the returned routing tensors
    outcome: str  # "return" | "raise" | "stop"
    result: str  # the returned value, described
    stopped: str  # why the path ended early ("" when it ran to the end)
    kernels: tuple[SinkHit, ...] = ()  # every routing-capable kernel called on the path
    setup: tuple[Decision, ...] = ()  # decisions taken while the model built its router
    # where a router that routed nothing handed its result on: (the layer's call, the index of
    # its first frame, of its first decision)
    handoff: tuple[str, int, int] | None = None
    # where the path ended (its object state) and what it returned: a path continues from here
    # into the layer its result is handed to
    end: PathState | None = field(default=None, compare=False, repr=False)
    value: Value | None = field(default=None, compare=False, repr=False)
    # kernels the path launches that route nothing (the experts' GEMMs, remaps), in order
    launches: tuple[SinkHit, ...] = ()
    # the kernels each way through the layer the router hands its result to launches (the
    # experts' forward, traced on from a router that routes): what the GPU must run
    experts: tuple[tuple[SinkHit, ...], ...] = ()
    raised_at: tuple[str, int, str] | None = None  # a path that raises: where (file, line, fn)

    @property
    def decided(self) -> bool:
        return not self.stopped and all(d.value is not None for d in self.decisions)

    def undecided(self) -> list[Decision]:
        return [d for d in (*self.setup, *self.decisions) if d.value is None]


def resolve_entry(engine: Engine, entry: str) -> Value:
    """`pkg.mod:func` or `pkg.mod:Class.method` -> the function value (unbound)."""
    module, _, qual = entry.partition(":")
    mod = engine.load_module(module)
    if mod is None:
        return Unknown(f"module {module} is not in the source tree", kind=UnknownKind.OPAQUE)
    if mod.error is not None:
        return raises(mod.error, f"importing {module} raises")
    val: Value = mod
    for part in qual.split("."):
        results = engine.attribute(PathState(envs=[{}]), val, part)
        val = results[0][1]
    return val


def first_class(engine: Engine, names: tuple[str, ...], origin: str) -> ClassVal:
    """The first of `names` (`pkg.mod:Class`, the rules' alternatives) this release has; a
    module there that does not import is an error naming why, not a reason to take the next."""
    for name in names:
        got = resolve_entry(engine, name)
        if isinstance(got, ClassVal):
            return got
        if not (isinstance(got, Unknown) and got.kind in (UnknownKind.ABSENT, UnknownKind.OPAQUE)):
            raise RoutescopeError(origin, f"{name}: {describe(got)}")
    raise RoutescopeError(origin, f"{' or '.join(names)} not found in this version")


def trace_call(
    engine: Engine,
    fn: Value,
    args: list[Value],
    kwargs: dict[str, Value],
    receiver: Value | None = None,
    start: PathState | None = None,
    by_kernel: bool = False,
) -> list[TracedPath]:
    """Every path through `fn(*args, **kwargs)`; a budget overrun ends a path, never the run.
    `by_kernel`: the path's sink is the first kernel on it that routed (a layer that routes
    and then runs the experts returns their output, not the routing)."""
    if isinstance(fn, FunctionVal) and receiver is not None:
        fn = fn.bind(receiver)
    if isinstance(fn, Unknown) and fn.exc is not None:  # its module's import raises
        exc = External(fn.exc) if isinstance(fn.exc, str) else fn.exc
        return [TracedPath((), (), None, "raise", describe(exc), "", value=exc)]
    if not isinstance(fn, (FunctionVal, ClassVal)):
        reason = fn.reason if isinstance(fn, Unknown) else f"entry is {describe(fn)}"
        return [TracedPath((), (), None, "stop", "", reason)]
    st = PathState(envs=[{}])
    if start is not None:  # continue from a path (its object state), with a fresh record
        st = start.fork()
        st.envs, st.decisions, st.frames, st.trail, st.sinks = [{}], [], [], [], []
        st.routed = False
    try:
        if isinstance(fn, FunctionVal):
            outcomes = engine.invoke(st, fn, args, kwargs, None)
        else:
            outcomes = [(s, "return", v) for s, v in engine.call(st, fn, args, kwargs, None)]
    except BudgetExceeded as exc:
        return [TracedPath(tuple(st.decisions), tuple(st.trail), None, "stop", "", str(exc))]
    out: list[TracedPath] = []
    for s, kind, v in outcomes:
        # (a layer that routes then runs the experts: its output's maker routes nothing)
        routed = next((h for h in s.sinks if h.routes), None)
        sink, stopped = routed if by_kernel else _sink(s, v), s.stopped
        if sink is not None and sink.kind == UNRECOGNISED:
            stopped = stopped or (f"the ids come from a call routescope does not recognise as a "
                                  f"kernel ({sink.name}) at {sink.file}:{sink.line}")  # fmt: skip
            sink = None
        out.append(TracedPath(tuple(s.decisions), tuple(s.trail), sink,
                              "stop" if stopped else kind, describe(v) if v is not None else "",
                              stopped,
                              tuple(h for h in s.sinks if h.kind != UNRECOGNISED and h.routes),
                              end=s, value=v,
                              launches=tuple(h for h in s.sinks if not h.routes),
                              experts=_after(s.sinks, routed) if by_kernel and kind == "return"
                              and not stopped else (),
                              raised_at=s.raised_at if kind == "raise" else None))  # fmt: skip
    return out


def _after(sinks: list[SinkHit], routed: SinkHit | None) -> tuple[tuple[SinkHit, ...], ...]:
    """A layer that routes and then runs the experts: what this way launches past the kernel
    that routed (the experts' kernels, as an experts trace of a router's result gives them:
    one way). () where nothing routed."""
    if routed is None:
        return ()
    past = sinks[sinks.index(routed) + 1 :]
    return (tuple(dict.fromkeys(h for h in past if not h.routes)),)


def _sink(st: PathState, result: Value | None) -> SinkHit | None:
    found = routing_producer(result, st.claims) if result is not None else None
    if found is None and result is not None:
        made = _made_at(result)
        if made is not None:  # routing computed by plain torch ops in framework code
            found = torch_ops_hit(made)
    return found or next((h for h in st.sinks if h.routes), None)


def _made_at(v: Value, depth: int = 3) -> tuple[str, str, int] | None:
    if isinstance(v, Tensor):
        return v.made_at  # type: ignore[no-any-return]
    if depth > 0:
        for f in v.fields.values() if isinstance(v, Instance) else items_of(v):
            got = _made_at(f, depth - 1)
            if got is not None:
                return got
    return None


def trace_serving(
    engine: Engine,
    fn: Value,
    args: list[Value],
    kwargs: dict[str, Value],
    start: PathState | None,
    what: str,
    as_served: bool = True,
    by_kernel: bool = False,
) -> list[TracedPath]:
    """trace_call, for a decode step a serving deployment runs: when every way through raises
    (the code reads state of a running worker no phase builds, or the deployment really
    fails there: both are noted), it is traced again going on past the calls that raise.
    Not `as_served` (a layer routescope staged without the weights loading would give it),
    the raise is noted without making the answer incomplete, and nothing past it is traced."""
    traced = trace_call(engine, fn, args, kwargs, start=start, by_kernel=by_kernel)
    if not traced or any(p.outcome != "raise" for p in traced):
        return traced
    for p in traced:
        at = p.end.raised_at if p.end is not None else None
        where = f" at {at[0]}:{at[1]} in {at[2]}" if at else ""
        (engine.fatal if as_served else engine.staged).append(
            f"{what} did not finish: every way through raises {p.result}{where}"
            + (
                "; traced on past the call that raises to show what follows"
                if as_served
                else " (the layer is traced without its loaded weights)"
            )
        )
        if p.end is not None:
            end = p.end
            if end.raising is None and p.value is not None:  # the call's raise, as it ended
                end = end.fork()
                end.raising = p.value
            engine.raises.append((what, end))
            if as_served:
                engine.stops.append((what, end))
    if not as_served:  # a staged layer: what follows its raise is not what the server runs
        return traced
    if engine.trial:
        raise TrialStopped(engine.fatal[-1])
    engine.tolerant = True
    engine.budget.routed_spent = 0  # the retry's ways get the experts' share afresh
    try:
        return trace_call(engine, fn, args, kwargs, start=start, by_kernel=by_kernel)
    finally:
        engine.tolerant = False
