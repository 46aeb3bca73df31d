"""Shared fixtures: an isolated routescope cache per test session, paths to real inputs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "examples" / "configs"
DATA = Path(__file__).resolve().parent / "data" / "moe-model-configs.json"

# Integration tests share one git-ignored cache (framework wheels are large); unit tests that
# need isolation use the `isolated_cache` fixture.
os.environ.setdefault("ROUTESCOPE_CACHE", str(ROOT / ".cache" / "routescope-test"))
os.environ.setdefault("NO_COLOR", "1")
# Renders size themselves from $COLUMNS when piped; the runner's own (pytest-xdist's workers get
# COLUMNS=80) must not decide a test's layout: a test that wants a width sets it.
for _var in ("COLUMNS", "LINES"):
    os.environ.pop(_var, None)
# Tests trace for real (some change budgets or rules in-process, which a cached report would
# not see); tests/test_tracecache.py turns the report cache on where it is the subject.
os.environ["ROUTESCOPE_TRACE_CACHE"] = "0"


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("ROUTESCOPE_CACHE", str(cache))
    return cache


def shared_models() -> list[dict[str, Any]]:
    models: list[dict[str, Any]] = json.loads(DATA.read_text())["models"]
    return models


def config_path(name: str) -> Path:
    return CONFIGS / name


REPO = ROOT


def load_script(path: Path) -> Any:
    """An examples/*/generate.py script as a module (its CASES and render)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.parent.name + "_gen", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
