"""Rule files: validated against their schema, once per content (a stamp under the cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from routescope import rules
from routescope.errors import RoutescopeError


def _hardware(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sm999.toml"
    path.write_text(text)
    return path


def test_a_valid_rule_file_is_validated_once_per_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROUTESCOPE_CACHE", str(tmp_path / "cache"))
    shipped = next(rules.rules_dir().glob("hardware/*.toml"))
    calls: list[object] = []
    import jsonschema

    real = jsonschema.validate
    monkeypatch.setattr(jsonschema, "validate", lambda d, s: (calls.append(d), real(d, s))[1])
    first = rules.load_rule_file(shipped, "hardware")
    assert rules.load_rule_file(shipped, "hardware") == first
    assert len(calls) == 1  # the second load found the stamp
    assert len(list((tmp_path / "cache" / "rules-valid").iterdir())) == 1


def test_a_changed_rule_file_is_validated_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamp is named by the file's and the schema's content: an edit after a valid load
    is never taken on the old stamp's word."""
    monkeypatch.setenv("ROUTESCOPE_CACHE", str(tmp_path / "cache"))
    shipped = next(rules.rules_dir().glob("hardware/*.toml"))
    path = _hardware(tmp_path, shipped.read_text())
    rules.load_rule_file(path, "hardware")
    path.write_text(shipped.read_text() + "\nnot_a_field = 1\n")
    with pytest.raises(RoutescopeError, match="invalid rule file"):
        rules.load_rule_file(path, "hardware")


def test_an_unwritable_cache_only_costs_validating_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("ROUTESCOPE_CACHE", str(blocked))  # a file: no folder can be made in it
    shipped = next(rules.rules_dir().glob("hardware/*.toml"))
    assert rules.load_rule_file(shipped, "hardware")["id"]
