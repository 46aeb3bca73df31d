"""The status line `inspect` shows while it traces: only on an interactive terminal, and
cleared before the answer, so that nothing of it stays on the screen or reaches a pipe."""

from __future__ import annotations

import io

import pytest

from routescope import status


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _off() -> object:
    yield
    status.disable()


def test_a_terminal_sees_the_line_rewritten_then_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("COLUMNS", "50")
    status.enable()
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
