"""Way-out trials traced in forked copies: the same answers, in the same order, as tracing
each in turn; refusals raised where they are asked for; copies nobody asks for stopped."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from routescope import ahead
from routescope.ahead import TracedAhead
from routescope.errors import RoutescopeError
from routescope.wayout import try_changes


def _report(n: int, selected: bool) -> dict[str, Any]:
    path = {"selected": True, "sink": {"name": f"kernel{n}"}, "experts": []}
    return {"dispatch": {"status": "selected" if selected else "forked",
                         "paths": [path] if selected else [], "incomplete": [f"why {n}"]},
            "blockers": []}  # fmt: skip


def _retrace(dep: Any) -> dict[str, Any]:
    """A stand-in for a trace: --set n=K gives a report naming K, in this process's pid; 3 is a
    value the release refuses; 5 the way out."""
    n = int(dep.server_args["n"])
    if n == 3:
        raise RoutescopeError("--set n=3", "not a value the release accepts")
    doc = _report(n, selected=n == 5)
    doc["pid"] = os.getpid()
    return doc


@pytest.fixture
def dep() -> Any:
    from routescope.analysis.phases.deployment import Deployment
    from routescope.hardware import resolve_gpu

    return Deployment(gpu=resolve_gpu("sm120"), tp=8)


@pytest.mark.parametrize("jobs", ["1", "2", "4"])
def test_a_way_out_search_answers_as_tracing_in_turn(
    dep: Any, jobs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROUTESCOPE_JOBS", jobs)
    got = try_changes([("n", str(k)) for k in (1, 2, 3, 4, 5)], "quantization", dep, _retrace)
    assert got["flags"] == ["--set n=5"] and got["sink"] == {"name": "kernel5"}
    assert [t.split(":")[0] for t in got["tried"]] == ["--set n=1", "--set n=2", "--set n=3",
                                                       "--set n=4"]  # fmt: skip
    assert "not a value the release accepts" in got["tried"][2]
    monkeypatch.setenv("ROUTESCOPE_JOBS", "1")
    alone = try_changes([("n", str(k)) for k in (1, 2, 3, 4, 5)], "quantization", dep, _retrace)
    assert got == alone


def test_trials_run_in_copies_and_come_back_in_order(
    dep: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    monkeypatch.setenv("ROUTESCOPE_JOBS", "3")
    planned = [replace(dep, server_args={"n": k}) for k in (1, 2, 4)]
    with TracedAhead(_retrace, planned, "trial") as traced:
        docs = [traced(d) for d in planned]
    assert [d["dispatch"]["incomplete"] for d in docs] == [["why 1"], ["why 2"], ["why 4"]]
    assert docs[0]["pid"] == os.getpid()  # the first is traced here, the others beside it
    assert docs[1]["pid"] != os.getpid() and docs[2]["pid"] != os.getpid()


def test_a_refusal_in_a_copy_is_raised_where_it_is_asked_for(
    dep: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    monkeypatch.setenv("ROUTESCOPE_JOBS", "2")
    planned = [replace(dep, server_args={"n": k}) for k in (1, 3)]
    with TracedAhead(_retrace, planned, "trial") as traced:
        traced(planned[0])
        with pytest.raises(RoutescopeError, match="not a value the release accepts") as exc:
            traced(planned[1])
    assert exc.value.subject == "--set n=3"


def test_copies_nobody_asks_for_are_stopped(dep: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    monkeypatch.setenv("ROUTESCOPE_JOBS", "4")
    here = os.getpid()

    def slow_in_a_copy(d: Any) -> dict[str, Any]:
        if os.getpid() != here:
            time.sleep(60)  # a copy still tracing when the search ends
        return _retrace(d)

    planned = [replace(dep, server_args={"n": k}) for k in (5, 1, 2, 4)]
    start = time.monotonic()
    with TracedAhead(slow_in_a_copy, planned, "trial") as traced:
        assert traced(planned[0])["pid"] == here  # the way out: nothing after it is asked for
        pids = [c.pid for c in traced._copies.values()]
        assert len(pids) == 3
    assert time.monotonic() - start < 30  # stopped, not waited for
    for pid in pids:  # and reaped: no such process any more
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_report_larger_than_a_pipe_comes_back_whole(
    dep: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    monkeypatch.setenv("ROUTESCOPE_JOBS", "3")

    def big(d: Any) -> dict[str, Any]:
        doc = _retrace(d)
        doc["notes"] = [f"note {i} " + "x" * 100 for i in range(10_000)]  # ~1 MB
        return doc

    planned = [replace(dep, server_args={"n": k}) for k in (1, 2, 4)]
    with TracedAhead(big, planned, "trial") as traced:
        docs = [traced(d) for d in planned]
    assert [len(d["notes"]) for d in docs] == [10_000] * 3
    assert docs[2]["notes"][-1].startswith("note 9999 ") and docs[2]["pid"] != os.getpid()


def test_a_copy_that_crashes_is_traced_again_here(
    dep: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    monkeypatch.setenv("ROUTESCOPE_JOBS", "2")
    here = os.getpid()

    def crashes_in_a_copy(d: Any) -> dict[str, Any]:
        if os.getpid() != here:
            raise MemoryError("in the copy")
        return _retrace(d)

    planned = [replace(dep, server_args={"n": k}) for k in (1, 2)]
    with TracedAhead(crashes_in_a_copy, planned, "trial") as traced:
        docs = [traced(d) for d in planned]
    assert [d["pid"] for d in docs] == [here, here]


def test_no_copies_where_they_cannot_be_had(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTESCOPE_JOBS", "4")  # (asked for, and still not where unsafe)
    monkeypatch.setattr(ahead.multiprocessing, "parent_process", lambda: object())
    assert ahead.cores() == 1  # a worker of the timeline's or a matrix's pool
    monkeypatch.undo()
    monkeypatch.setenv("ROUTESCOPE_JOBS", "4")
    monkeypatch.setattr(ahead.threading, "active_count", lambda: 2)
    assert ahead.cores() == 1  # another thread runs in this process
    monkeypatch.undo()
    monkeypatch.setenv("ROUTESCOPE_JOBS", "1")
    assert ahead.cores() == 1
