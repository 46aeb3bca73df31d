"""`routescope report` over several models, one of which the release cannot trace (GLM-5 on vLLM
0.15.1, whose registry has no GlmMoeDsaForCausalLM): the others are still reported, that one's
row says why, and the command exits 2 after writing the file. A flag every deployment shares is
still one line and no file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from routescope import api
from routescope.cli import main
from routescope.errors import RoutescopeError

SNAPSHOT = Path(__file__).parent / "render" / "snapshots" / "glm5-sglang-0.5.9-sm120-tp8.json"


def _fake(bad: str) -> Any:
    doc = json.loads(SNAPSHOT.read_text())

    def inspect(req: api.InspectRequest) -> dict[str, Any]:
        if req.model == bad:
            raise RoutescopeError("GlmMoeDsaForCausalLM", "the registry has no model class for it")
        return doc

    return inspect


def test_a_model_the_release_cannot_trace_is_a_row_not_an_abort(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(api, "inspect", _fake("glm5.json"))
    out = tmp_path / "r.md"
    argv = ["report", "dsv3.json", "glm5.json", "--framework", "vllm==0.15.1", "--gpu",
            "sm120,sm90", "--tp", "8", "-o", str(out)]  # fmt: skip
    assert main(argv) == 2
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| glm5 |")]
    assert len(rows) == 2 and all("not traced" in r and "no model class" in r for r in rows)
    assert text.count("](#") == 2  # the traced deployments keep their sections
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("routescope: error: glm5.json: ")
    assert "2 of 4 deployment(s) could not be traced" in err[0] and str(out) in err[0]


def test_nothing_traced_or_a_shared_flag_is_one_line_and_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r.md"
    monkeypatch.setattr(api, "inspect", _fake("glm5.json"))
    assert main(["report", "glm5.json", "--framework", "vllm==0.15.1", "-o", str(out)]) == 2
    assert not out.exists()

    def bad_flag(req: api.InspectRequest) -> dict[str, Any]:
        raise RoutescopeError("--set moe_backend=warp", "not a choice")

    monkeypatch.setattr(api, "inspect", bad_flag)
    assert main(["report", "a.json", "b.json", "--framework", "vllm==0.15.1", "-o", str(out)]) == 2
    assert not out.exists()
