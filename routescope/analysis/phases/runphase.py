"""One set-up step run as a phase: under its own share of evaluation steps, timed, and what
it means when every way through it raises (the deployment stops there, or a step routescope
stages lacks what the model sets up)."""

from __future__ import annotations

from typing import Any

from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Unknown, UnknownKind, Value, describe
from routescope.analysis.phases.stops import raised_by_statement
from routescope.timing import phase

# Each phase gets its own share of evaluation steps (about 300k a second here): one that needs
# more ends Unknown, deterministically, and the next phase starts with its own allowance.
PHASE_STEPS = {"server_args": 600_000, "model": 120_000, "block": 1_000_000, "trace": 250_000,
               # experts: what they launch past a router that routes, ways joined early (GLM-5-
               # NVFP4 on 0.5.23 5k, bf16 on the Triton path 50k); after_loading: the weights'
               # conversion, expert by expert (NVFP4 for Marlin: 1.15M a way for 128, 2.3M for 256)
               "experts": 100_000, "after_loading": 4_000_000}  # fmt: skip


class TrialStopped(Exception):
    """A way-out trial's step that raised on every way, where the server runs it: the trial
    is not selected whatever follows, so nothing past the step is traced (the message: why)."""


def run_phase(
    engine: Engine,
    steps: int,
    what: str,
    run: Any,
    record_inputs: bool = False,
    merge_at: int = 24,
    as_served: bool = True,
    raise_stops: bool = False,
) -> list[tuple[PathState, Value]]:
    """One set-up step under its own budget (one timed phase). Every way raising: it did not
    finish if `as_served`, or at the framework's `raise` statements (`raise_stops`); else a step
    routescope stages lacks what the model sets up. Then it runs again past what raises."""
    engine.budget.push(steps, f"{what} exceeded its budget of {steps:,} evaluation steps")
    engine.record_inputs = record_inputs
    engine.budget.merge_at = merge_at
    try:
        with phase(what):
            result: list[tuple[PathState, Value]] = run()
        if result and all(s.raising is not None for s, _ in result):
            result = result if record_inputs else _reading_guards(engine, steps, what, run, result)
            engine.raises.extend((what, s) for s, _ in result)
            said = raised_text(result[0][0])
            if as_served or all(raise_stops and raised_by_statement(engine, s) for s, _ in result):
                engine.fatal.append(f"{what} did not finish: {said}")
                engine.stops.append((what, result[0][0]))
                if engine.trial:
                    raise TrialStopped(engine.fatal[-1])
            else:
                engine.staged.append(f"{what} on its own: {said} (what the model sets up around "
                                     "it is missing; traced on past it)")  # fmt: skip
            engine.tolerant = True  # again, going on past what raises, to show what follows
            try:
                with phase(f"{what}, again past what raises"):
                    result = run()
            finally:
                engine.tolerant = False
        return _serving(engine, what, result)
    except BudgetExceeded as exc:
        st = PathState(envs=[{}])
        st.stopped = str(exc)
        return [(st, Unknown(str(exc), kind=UnknownKind.BUDGET))]
    finally:
        engine.budget.pop()
        engine.record_inputs = True
        engine.budget.merge_at = 24


def raised_text(st: PathState) -> str:
    """'every way through raises E at file:line in fn' for a path that raised."""
    at = st.raised_at
    where = f" at {at[0]}:{at[1]} in {at[2]}" if at else ""
    return f"every way through raises {describe(st.raising)}{where}"  # type: ignore[arg-type]


def _serving(engine: Engine, what: str,
             result: list[tuple[PathState, Value]]) -> list[tuple[PathState, Value]]:  # fmt: skip
    """The ways through a set-up step on which the server goes on: a way that raises is a way
    on which it does not start, noted (engine.raises) and left out while another way goes
    on; when every way raises, the step did not finish."""
    raised = [(s, v) for s, v in result if s.raising is not None]
    if not raised:
        return result
    engine.raises.extend((what, s) for s, _ in raised)
    if len(raised) < len(result):
        return [(s, v) for s, v in result if s.raising is None]
    for s, _ in raised:
        where = ":".join(str(x) for x in s.raised_at[:2]) if s.raised_at else "an unknown line"
        s.stopped = f"{what} raises {describe(s.raising)} at {where}"  # type: ignore[arg-type]
    return result


def _reading_guards(
    engine: Engine, steps: int, what: str, run: Any, result: list[tuple[PathState, Value]]
) -> list[tuple[PathState, Value]]:
    """Set-up code runs without reading each decision's inputs (each input is evaluated again,
    and nobody reads them) until every way through it raises: then whether the raise is the
    deployment's (stops.raised_by_statement: an `assert is_v32` on `hasattr(hf_config,
    "index_topk")` False from config.json) rests on what the guard before it read, so the step
    runs once more, recording them. Where that run does not raise on every way (it went over
    its budget), the first run's result stands. The runs after it (past what raises) go on
    without recording, as the step's first did."""
    engine.record_inputs = True
    engine.budget.push(steps, f"{what} exceeded its budget of {steps:,} evaluation steps")
    try:
        with phase(f"{what}, again reading the guards"):
            again: list[tuple[PathState, Value]] = run()
    except BudgetExceeded:
        return result
    finally:
        engine.budget.pop()
        engine.record_inputs = False
    return again if again and all(s.raising is not None for s, _ in again) else result
