"""The engine against CPython on generated programs (docs/ENGINE.md: differential testing).

`test_engine_agrees_with_cpython` runs 1,000 generated programs (a fixed, derandomized
sequence) through tests/engine/differential.py and fails on any "wrong", "missing", "crash" or
"generator" discrepancy, and on "imprecise" ones (known inputs, yet several paths, a stop or an
unknown value) unless the program uses a feature in differential.IMPRECISE_OK. On a failure
hypothesis shrinks the program and the failure message is the minimal program, its inputs and
what CPython and the engine each gave.

Knobs (environment):
  ROUTESCOPE_DIFF_EXAMPLES   how many programs (default 1000)
  ROUTESCOPE_DIFF_SKIP       comma-separated progen features the generator leaves out (to look
                             past a known bug, e.g. ROUTESCOPE_DIFF_SKIP=dict_keys_collide)
  ROUTESCOPE_DIFF_KNOWN_RUNS engine runs with every input known, per program (default 3)
  ROUTESCOPE_DIFF_SHRINK_SECONDS  how long a failure is shrunk before the smallest so far is
                             reported (default 45)

The larger campaign is benchmarks/bench_differential.py.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.engine import differential as D
from tests.engine.progen import FEATURES, Program, programs

SKIP = frozenset(f.strip() for f in os.environ.get("ROUTESCOPE_DIFF_SKIP", "").split(",")
                 if f.strip())  # fmt: skip
EXAMPLES = int(os.environ.get("ROUTESCOPE_DIFF_EXAMPLES", "1000"))
KNOWN_RUNS = int(os.environ.get("ROUTESCOPE_DIFF_KNOWN_RUNS", "3"))

unknown_skips = SKIP - FEATURES
if unknown_skips:
    raise ValueError(f"ROUTESCOPE_DIFF_SKIP names no progen feature: {sorted(unknown_skips)}")


# Shrinking a failure is bounded: past this many seconds after the first failure, shrinking
# stops and the smallest failing program found so far is reported.
SHRINK_SECONDS = float(os.environ.get("ROUTESCOPE_DIFF_SHRINK_SECONDS", "45"))


class _StopShrinking(BaseException):  # not an Exception: hypothesis lets it through at once
    pass


def _message(program: Program, failures: list[D.Discrepancy]) -> str:
    return ("the engine disagrees with CPython on this program:\n\n" + program.describe()
            + "\n" + "\n".join(str(d) for d in failures))  # fmt: skip


def _fail(program: Program, failures: list[D.Discrepancy]) -> None:
    """Every failure raises from here: hypothesis tells failures apart by where they are
    raised, and these are to be one failure, shrunk together."""
    raise AssertionError(_message(program, failures))


@pytest.mark.slow
def test_engine_agrees_with_cpython() -> None:
    first_failure: list[float] = []
    failed: dict[Program, list[D.Discrepancy]] = {}

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=False,
        report_multiple_bugs=False,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )
    @given(program=programs(FEATURES - SKIP))
    def check(program: Program) -> None:
        if first_failure and time.monotonic() - first_failure[0] > SHRINK_SECONDS:
            raise _StopShrinking()
        report = D.check_program(program, known_runs=KNOWN_RUNS)
        failures = report.failures(precision=True)
        if failures:
            first_failure[:] = first_failure or [time.monotonic()]
            failed[program] = failures
            _fail(program, failures)

    stopped = False
    try:
        check()
    except _StopShrinking:
        stopped = True
    if stopped:
        program = min(failed, key=lambda p: (len(p.source()), p.source()))
        pytest.fail(f"(shrinking stopped after {SHRINK_SECONDS:g} s; the smallest so far)\n"
                    + _message(program, failed[program]), pytrace=False)  # fmt: skip


# --- the harness itself ---------------------------------------------------------------------


def _program(main: str, other: str = "", domains: tuple[tuple[object, ...], ...] = ((0, 1),) * 3,
             unknown: tuple[bool, ...] = (True, False, False)) -> Program:  # fmt: skip
    files = [("__init__.py", "")]
    if other:
        files.append(("other.py", other))
    files.append(("main.py", main))
    return Program(tuple(files), ("int",) * 3, domains, unknown, (0, 0, 0), frozenset())


def test_cpython_runs_share_nothing(tmp_path: Path) -> None:
    """Module state and functools.cache start afresh in every run."""
    prog = _program(
        "import functools\nimport fw.other\n"
        "@functools.cache\ndef f(n):\n    return n + fw.other.G[0]\n"
        "def main(a, b, c):\n    fw.other.G[0] += 1\n    return (f(a), fw.other.G[0])\n",
        "G = [0]\n",
    )
    codes = D.compile_program(prog, tmp_path)
    first = D.run_cpython(codes, tmp_path, (1, 0, 0))
    again = D.run_cpython(codes, tmp_path, (1, 0, 0))
    assert first == again == D.Outcome("return", (2, 1))


def test_cpython_raise_and_generator_errors(tmp_path: Path) -> None:
    prog = _program("def main(a, b, c):\n    if a:\n        raise KeyError(a)\n    return b.x\n")
    codes = D.compile_program(prog, tmp_path)
    assert D.run_cpython(codes, tmp_path, (1, 0, 0)) == D.Outcome("raise", "KeyError")
    assert D.run_cpython(codes, tmp_path, (0, 0, 0)).kind == "error"  # AttributeError


@given(st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "x"]),
                    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner),
                    max_leaves=6))  # fmt: skip
@settings(max_examples=50, deadline=None, database=None, derandomize=True)
def test_a_known_value_covers_only_itself(v: object) -> None:
    assert D.covers(v, v)
    assert D.covers(D.Unk(), v)
    assert D.covers(D.Unk(bool(v)), v) and not D.covers(D.Unk(not bool(v)), v)
    assert not D.covers((v,), [v]) and not D.covers([v], (v,))


def test_cover_rules() -> None:
    assert not D.covers(True, 1) and not D.covers(1, True) and not D.covers(1.0, 1)
    assert D.covers({1: D.Unk()}, {1: "x"}) and not D.covers({True: 2}, {1: 2})
    assert not D.covers({1: 2}, {1: 2, 3: 4}) and D.covers({1, "a"}, {"a", 1})
    assert not D.covers({True}, {1}) and not D.covers(D.Clash((1, True), "dict"), {1: 0})
    assert D.covers([D.Unk(), 2], [7, 2]) and not D.covers([D.Unk(), 2], [7, 2, 3])
    assert not D.is_known([1, D.Unk()]) and D.is_known({1: (2, [3])})


def test_engine_outcomes_read_through_to_python(tmp_path: Path) -> None:
    """The engine's values for one small program, as the harness reads them (to_python): a
    change of the engine's containers that to_python does not follow shows here first."""
    prog = _program(
        "def main(a, b, c):\n    xs = []\n    xs.append(a)\n    xs.append(2)\n"
        "    d = {'k': a}\n    d[b] = 3\n    if c:\n        raise ValueError('c')\n"
        "    return (xs, d, {1, 'x'}, a > 0, None)\n",
    )
    D.write_program(prog, tmp_path)
    api = D.engine_api()
    (known,) = D.run_engine(tmp_path, [api.Const(1), api.Const(0), api.Const(0)])
    assert known == D.Outcome("return", ([1, 2], {"k": 1, 0: 3}, {1, "x"}, True, None),
                              known.text)  # fmt: skip
    (raised,) = D.run_engine(tmp_path, [api.Const(1), api.Const(0), api.Const(1)])
    assert raised.kind == "raise" and raised.value == "ValueError"
    outs = D.run_engine(tmp_path, [api.Unknown("a"), api.Const(0), api.Const(0)])
    assert any(D.covers(o.value, ([5, 2], {"k": 5, 0: 3}, {1, "x"}, True, None)) for o in outs)
    assert not any(D.decided(o) for o in outs)
    report = D.check_program(prog, known_runs=2)
    assert report.engine_runs == 3 and report.outcomes >= 3
