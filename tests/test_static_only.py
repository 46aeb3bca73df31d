"""Static only: a whole trace imports no module of the framework or its kernel libraries and
executes none of their code (CPython's audit hooks see every import and every exec)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from routescope import api
from tests.conftest import CONFIGS

FRAMEWORK_PACKAGES = ("sglang", "vllm", "flashinfer", "sgl_kernel", "triton_kernels", "deep_gemm")
_seen: list[tuple[str, str]] = []
_on = [False]


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _on[0]:
        return
    if event == "import" and str(args[0]).split(".")[0] in FRAMEWORK_PACKAGES:
        _seen.append((event, str(args[0])))
    if event == "exec":
        code = args[0]
        filename = getattr(code, "co_filename", "")
        if any(f"/{p}/" in filename or filename.startswith(f"{p}/") for p in FRAMEWORK_PACKAGES):
            _seen.append((event, filename))


sys.addaudithook(_hook)  # hooks cannot be removed: this one is off outside the test


@pytest.mark.network
def test_a_trace_imports_and_runs_no_framework_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTESCOPE_TRACE_CACHE", "0")  # trace for real, not from the cache
    before = {m for m in sys.modules if m.split(".")[0] in FRAMEWORK_PACKAGES}
    _on[0] = True
    try:
        doc = api.inspect(
            api.InspectRequest(
                model=str(CONFIGS / "zai-org--GLM-5.json"),
                framework="sglang==0.5.23",
                gpu="sm120",
                tp=8,
            )
        )
    finally:
        _on[0] = False
    assert doc["dispatch"]["status"] == "selected"  # the trace went all the way
    after = {m for m in sys.modules if m.split(".")[0] in FRAMEWORK_PACKAGES}
    assert after == before == set()
    assert _seen == []
