"""The transformers view is built with torch kept out of sight (intake/transformers_view.py): the
views must be what transformers gives with torch importable, for every example config, and the
hiding must leave the process as it found it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import pytest

from routescope.intake import transformers_view
from tests.conftest import CONFIGS

BUILD_ALL = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from routescope.intake import transformers_view as tv
    if sys.argv[1] == "torch":
        import torch  # imported first: transformers finds it, as in a deployment
    out = {}
    for path in sorted(Path(sys.argv[2]).glob("*.json")):
        raw = json.loads(path.read_text())
        for routing_path in ("", "text_config") if "text_config" in raw else ("",):
            out[f"{path.name}|{routing_path}"] = tv._build(raw, routing_path)
    torch_loaded = sys.modules.get("torch") is not None
    print(json.dumps({"views": out, "torch": torch_loaded}, sort_keys=True, default=str))
    """
)

needs_both = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None,
    reason="needs transformers and torch installed (the dev and sim extras)",
)


def _views(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", BUILD_ALL, mode, str(CONFIGS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@needs_both
def test_views_without_torch_are_those_with_torch() -> None:
    with_torch, hidden = _views("torch"), _views("hidden")
    assert with_torch["torch"] is True
    assert hidden["torch"] is False  # the build did not import it
    views = hidden["views"]
    assert isinstance(views, dict) and len(views) >= 45
    assert sum("values" in v for v in views.values()) >= 40  # the configs built, not refused
    assert views == with_torch["views"]


def test_hiding_leaves_the_process_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with transformers_view._torch_hidden():
        assert sys.modules["torch"] is None
        with pytest.raises(ImportError):
            import torch  # noqa: F401
        assert importlib.util.find_spec("torch") is None
    assert "torch" not in sys.modules


def test_a_process_with_torch_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    present = type(sys)("torch")
    monkeypatch.setitem(sys.modules, "torch", present)
    with transformers_view._torch_hidden():
        assert sys.modules["torch"] is present
    assert sys.modules["torch"] is present
