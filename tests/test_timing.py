"""ROUTESCOPE_TIMINGS: the phases' wall times, nested as they ran, on stderr after the answer;
nothing when off, and never in the report."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from routescope import timing
from routescope.cli import main
from tests.conftest import CONFIGS

GLM5 = str(CONFIGS / "zai-org--GLM-5.json")


@pytest.fixture
def timings() -> Iterator[None]:
    timing.enable(True)
    try:
        yield
    finally:
        timing.enable(False)


def test_phases_nest_as_they_ran_and_work_spread_over_them_is_summed(timings: None) -> None:
    with timing.phase("outer"):
        with timing.phase("inner one"):
            time.sleep(0.02)
            timing.spent("parsing modules", 0.5)
        with timing.phase("inner two"):
            timing.spent("parsing modules", 0.25)
    lines = timing.table().splitlines()
    assert lines[0] == "routescope timings (wall seconds):"
    indents = [(line.strip().rsplit(" ", 1)[0].strip(), len(line) - len(line.lstrip()))
               for line in lines[1:4]]  # fmt: skip
    assert indents == [("outer", 2), ("inner one", 4), ("inner two", 4)]
    assert float(lines[2].split()[-1]) >= 0.02
    assert float(lines[1].split()[-1]) >= float(lines[2].split()[-1])
    assert "within the phases: parsing modules (2)" in lines[4] and lines[4].endswith("0.75")
    assert lines[-1].lstrip().startswith("total since routescope started")


def test_off_records_nothing() -> None:
    timing.enable(False)
    with timing.phase("ignored"):
        timing.spent("parsing modules", 1.0)
    assert timing.table().splitlines()[1:-1] == []


def test_the_cli_prints_them_on_stderr_and_the_answer_is_unchanged(
    timings: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", GLM5, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("routescope timings (wall seconds):")
    assert "intake: the model's config" in err
    timing.enable(False)
    assert main(["inspect", GLM5, "--format", "json"]) == 0
    plain, quiet = capsys.readouterr()
    assert json.loads(out) == json.loads(plain) and quiet == ""


def test_an_error_still_prints_the_phases_up_to_it(
    timings: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "/nonexistent/config.json"]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("routescope: error:") and "routescope timings" in err


def test_a_workers_phases_are_adopted_under_one_phase(timings: None) -> None:
    with timing.phase("before"):
        pass
    with timing.phase("a phase the work runs in"):
        at = timing.mark()
        with timing.phase("trace"), timing.phase("server arguments"):
            pass
        sent = timing.rows_since(at)
    assert sent == [(0, "trace", sent[0][2]), (1, "server arguments", sent[1][2])]
    timing.enable(True)  # the parent: its own table, then what the worker sent
    timing.adopt("release 0.5.23 (in a worker)", 3.5, sent)
    lines = timing.table().splitlines()[1:-1]
    indents = [(line.strip().rsplit(" ", 1)[0].strip(), len(line) - len(line.lstrip()))
               for line in lines]  # fmt: skip
    assert indents == [("release 0.5.23 (in a worker)", 2), ("trace", 4), ("server arguments", 6)]
    assert lines[0].endswith("3.50")
