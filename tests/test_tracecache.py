"""The report cache: a report is read back only under the key of everything that decides it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from routescope import api, tracecache


@pytest.fixture
def trace_cache_on(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ROUTESCOPE_TRACE_CACHE", "1")
    return isolated_cache


def _counting(report: dict[str, object]) -> tuple[list[int], object]:
    calls: list[int] = []

    def compute() -> dict[str, object]:
        calls.append(1)
        return dict(report)

    return calls, compute


def test_second_read_does_not_recompute(trace_cache_on: Path) -> None:
    key = tracecache.key_for("tree", {"deployment": {"gpu": "sm120", "tp": 8}})
    calls, compute = _counting({"verdict": "insertable"})
    assert tracecache.cached(key, compute) == {"verdict": "insertable"}
    assert tracecache.cached(key, compute) == {"verdict": "insertable"}
    assert len(calls) == 1
    assert list((trace_cache_on / "traces").glob("*/*.json"))


def test_torn_entry_is_recomputed_and_replaced(trace_cache_on: Path) -> None:
    key = tracecache.key_for("tree", {"x": 1})
    assert key is not None
    path = trace_cache_on / "traces" / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"key": "' + key + '", "report": {"verd')  # a write cut short
    calls, compute = _counting({"ok": True})
    assert tracecache.cached(key, compute) == {"ok": True}
    assert json.loads(path.read_text())["report"] == {"ok": True}
    assert len(calls) == 1


def test_every_input_is_in_the_key(trace_cache_on: Path) -> None:
    base = {"deployment": {"gpu": "sm120", "tp": 8}, "spec": "GLM-5"}
    k = tracecache.key_for("tree-a", base)
    assert k == tracecache.key_for("tree-a", dict(base))
    assert k != tracecache.key_for("tree-b", base)
    assert k != tracecache.key_for("tree-a", {**base, "deployment": {"gpu": "sm100", "tp": 8}})
    assert k != tracecache.key_for("tree-a", {**base, "spec": "GLM-5.1"})


def test_another_transformers_is_another_key(
    trace_cache_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which model_types AutoConfig knows, and each class's defaults, come with the installed
    transformers: a report traced under one is not read back under another."""
    from routescope.intake import transformers_view

    k = tracecache.key_for("tree", {"spec": "GLM-5"})
    monkeypatch.setattr(transformers_view, "transformers_version", lambda: "99.0.0")
    assert k != tracecache.key_for("tree", {"spec": "GLM-5"})


def test_no_key_for_a_checkout_or_when_disabled(
    trace_cache_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tracecache.key_for(None, {}) is None  # a checkout can change under the same path
    monkeypatch.setenv("ROUTESCOPE_TRACE_CACHE", "0")
    assert tracecache.key_for("tree", {}) is None
    calls, compute = _counting({})
    tracecache.cached(None, compute)
    tracecache.cached(None, compute)
    assert len(calls) == 2


def test_code_fingerprint_covers_engine_and_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fp = tracecache.code_fingerprint()
    assert len(fp) == 64 and fp == tracecache.code_fingerprint()
    # a changed rule file is a different trace: the fingerprint follows the rules read
    import shutil

    from routescope import rules

    copy = tmp_path / "rules"
    shutil.copytree(rules.rules_dir(), copy)
    monkeypatch.setattr(rules, "rules_dir", lambda: copy)
    tracecache.code_fingerprint.cache_clear()
    try:
        same = tracecache.code_fingerprint()
        (copy / "frameworks" / "sglang.toml").write_text(
            (copy / "frameworks" / "sglang.toml").read_text() + "\n# changed\n"
        )
        tracecache.code_fingerprint.cache_clear()
        assert same == fp and tracecache.code_fingerprint() != fp
    finally:
        tracecache.code_fingerprint.cache_clear()


@pytest.mark.network
def test_inspect_reads_back_the_same_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTESCOPE_TRACE_CACHE", "1")
    req = api.InspectRequest(
        model="examples/configs/zai-org--GLM-5.json", framework="sglang==0.5.9", gpu="sm120", tp=8
    )
    traced = api.inspect(req)
    monkeypatch.setattr(
        "routescope.analysis.phases.dispatch.trace_dispatch",
        lambda *a, **k: pytest.fail("traced again although the report was cached"),
    )
    assert api.inspect(req) == traced


def test_cache_clear_drops_reports(trace_cache_on: Path) -> None:
    from routescope.source.cache import clear_cache

    key = tracecache.key_for("tree", {"y": 2})
    tracecache.cached(key, lambda: {"a": 1})
    assert list((trace_cache_on / "traces").glob("*/*.json"))
    assert clear_cache() > 0
    assert not list((trace_cache_on / "traces").glob("*/*.json"))


@pytest.mark.network
@pytest.mark.parametrize("whole", [True, False], ids=["the whole wheel", "its closure"])
def test_cold_trace_prefetches_the_routing_code_once(
    isolated_cache: Path, monkeypatch: pytest.MonkeyPatch, whole: bool
) -> None:
    """A trace that starts cold fetches the routing code once: SGLang 0.5.9's wheel is 85%
    Python, so the whole of it in one request (kept, no blob per file); where a wheel is mostly
    binary, the seeds' import closure in one streamed pass, and a marker says it is done. The
    next trace fetches and scans nothing."""
    from routescope.analysis import closure
    from routescope.source.wheel import WheelTree

    calls: list[int] = []
    real = closure.import_closure

    def counting(*a: object, **k: object) -> closure.Closure:
        calls.append(1)
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(closure, "import_closure", counting)
    if not whole:
        monkeypatch.setattr(WheelTree, "whole_is_cheaper", lambda self: False)
    req = api.InspectRequest(
        model="examples/configs/Qwen--Qwen3-30B-A3B.json", framework="sglang==0.5.9", gpu="sm90"
    )
    first = api.inspect(req)
    markers = list((isolated_cache / "source" / "closures").glob("*.done"))
    assert len(markers) == (0 if whole else 1)  # a kept wheel is its own mark
    kept = list((isolated_cache / "source" / "wheels").glob("*.whl"))
    blobs = list((isolated_cache / "source" / "blobs").glob("*/*"))
    assert (len(kept), bool(blobs), calls) == ((1, False, []) if whole else (0, True, [1]))
    api.inspect(dataclasses.replace(req, gpu="sm120"))
    assert calls == ([] if whole else [1])
    assert first["dispatch"]["paths"]  # traced from what was fetched
