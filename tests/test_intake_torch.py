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
    else:
        tv.keep_torch_out()  # as the CLI does
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
    monkeypatch.setattr(transformers_view, "_KEEP_TORCH_OUT", [True])
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delitem(sys.modules, "transformers", raising=False)
    with transformers_view._torch_hidden():
        assert sys.modules["torch"] is None
        with pytest.raises(ImportError):
            import torch  # noqa: F401
        assert importlib.util.find_spec("torch") is None
    assert "torch" not in sys.modules


def test_a_process_with_torch_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transformers_view, "_KEEP_TORCH_OUT", [True])
    present = type(sys)("torch")
    monkeypatch.setitem(sys.modules, "torch", present)
    with transformers_view._torch_hidden():
        assert sys.modules["torch"] is present
    assert sys.modules["torch"] is present


@pytest.mark.parametrize("why", ["a library caller", "transformers imported already"])
def test_torch_is_hidden_only_in_a_process_routescope_owns_before_transformers(
    monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    """A library caller may use transformers with torch afterwards; a transformers imported
    before has decided that torch is there, and would fail to import it."""
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    if why == "a library caller":
        monkeypatch.setattr(transformers_view, "_KEEP_TORCH_OUT", [False])
        monkeypatch.delitem(sys.modules, "transformers", raising=False)
    else:
        monkeypatch.setattr(transformers_view, "_KEEP_TORCH_OUT", [True])
        monkeypatch.setitem(sys.modules, "transformers", type(sys)("transformers"))
    with transformers_view._torch_hidden():
        assert "torch" not in sys.modules  # not made absent


@needs_both
def test_a_library_process_that_imported_transformers_still_builds_views() -> None:
    """The failure the review found: transformers imported first (it decided torch is there),
    then a view built in a process that keeps torch out: transformers must get its torch."""
    code = textwrap.dedent(
        """
        import transformers
        from routescope.intake import transformers_view as tv
        tv.keep_torch_out()
        view = tv._build({"model_type": "llama"}, "")
        assert "values" in view, view
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
