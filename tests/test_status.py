"""The status line `inspect` shows while it traces: only on an interactive terminal, and
cleared before the answer, so that nothing of it stays on the screen or reaches a pipe."""

from __future__ import annotations

import io
import os

import pytest

from routescope import status


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _off() -> object:
    yield
    status.disable()


def _at_a_terminal(mp: pytest.MonkeyPatch, term: _Terminal, columns: int) -> _Terminal:
    """stderr an interactive terminal `columns` wide, outside CI; the status line turned on."""
    mp.setattr("sys.stderr", term)
    mp.delenv("CI", raising=False)
    mp.setenv("TERM", "xterm")
    mp.setenv("COLUMNS", str(columns))
    status.enable()
    return term


def test_a_terminal_sees_the_line_rewritten_then_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    term = _at_a_terminal(monkeypatch, _Terminal(), 50)
    status.show("tracing sglang 0.5.23 on sm120 (rtx-pro-6000) for zai-org/GLM-5-NVFP4 …")
    status.show("tracing a way out: --quant modelopt_fp4 …")
    status.clear()
    status.clear()  # (once cleared, nothing more)
    writes = term.getvalue().split("\r\x1b[K")
    assert writes[0] == "" and writes[-1] == ""
    assert writes[1].startswith("tracing sglang 0.5.23") and writes[1].endswith("…")
    assert len(writes[1]) < 50  # cut to the terminal's width
    assert writes[2] == "tracing a way out: --quant modelopt_fp4 …"
    assert len(writes) == 4


@pytest.mark.parametrize("where", ["pipe", "ci", "dumb"])
def test_nothing_is_written_off_an_interactive_terminal(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO() if where == "pipe" else _Terminal()
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setenv("TERM", "dumb" if where == "dumb" else "xterm")
    if where == "ci":
        monkeypatch.setenv("CI", "true")
    else:
        monkeypatch.delenv("CI", raising=False)
    status.enable()
    status.show("tracing …")
    status.clear()
    assert stream.getvalue() == ""


def test_off_unless_the_cli_turns_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    monkeypatch.delenv("CI", raising=False)
    status.show("a library caller's trace")  # (never enabled in this process)
    status.clear()
    assert term.getvalue() == ""


def _no_release(req: object) -> dict[str, str]:
    """A stand-in for one release's trace (in a worker process): why there is none, and
    whether the worker would write a status line of its own."""
    return {"error": f"{getattr(req, 'framework', '')}: not traced; line on: {status._on}"}


def test_a_timeline_says_how_many_releases_came_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from routescope import api, timeline

    term = _at_a_terminal(monkeypatch, _Terminal(), 200)
    monkeypatch.setattr(timeline, "_one", _no_release)
    req = api.InspectRequest(model="m", framework="sglang")
    got = timeline.build_timeline(req, ["0.5.9", "0.5.10", "0.5.11"], jobs=2)
    status.clear()
    assert [r["status"] for r in got["releases"]] == ["error"] * 3
    assert all(r["error"].endswith("line on: False") for r in got["releases"])  # (workers)
    lines = [w for w in term.getvalue().split("\r\x1b[K") if w]
    assert lines == [
        "tracing 3 releases of sglang, 2 at a time …",
        "traced 1 of 3 releases of sglang (0.5.9) …",
        "traced 2 of 3 releases of sglang (0.5.10) …",
        "traced 3 of 3 releases of sglang (0.5.11) …",
    ]  # and cleared at the end
    assert term.getvalue().endswith("\r\x1b[K")


def test_a_terminal_of_no_size_is_taken_as_the_usual_width(monkeypatch: pytest.MonkeyPatch) -> None:
    class Sized(_Terminal):
        def fileno(self) -> int:
            return 2

    term = _at_a_terminal(monkeypatch, Sized(), 60)
    monkeypatch.setattr(status.os, "get_terminal_size", lambda fd: os.terminal_size((0, 0)))
    status.show("tracing 19 releases of sglang, 2 at a time …")  # (a pseudo-terminal's 0 columns)
    assert term.getvalue() == "\r\x1b[Ktracing 19 releases of sglang, 2 at a time …"
