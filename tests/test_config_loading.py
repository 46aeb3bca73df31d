"""Whether the server's get_config can build a config for the checkpoint's model_type.

A release builds the config with AutoConfig, which raises ValueError for a model_type that
neither transformers nor the release registers, unless config.json names a class of its own
(auto_map AutoConfig) and --trust-remote-code is given (SGLang 0.5.23
utils/hf_transformers/config.py:228-233; vLLM 0.34.0 transformers_utils/config.py:476-499).
sgl-project's DeepSeek-V4-Flash-FP8 is such a checkpoint: its model_type `deepseek_ref` is
spelled nowhere in either release, and no transformers has it.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from routescope import api
from routescope.analysis.engine.values import Const, Unknown
from routescope.analysis.phases import ownconfig
from routescope.analysis.phases.frameworks import LOADS
from routescope.analysis.phases.ownconfig import _bounded_by, config_loading
from routescope.source.tree import Metadata
from tests.conftest import CONFIGS

CHECKPOINT = CONFIGS.parent / "checkpoints" / "sgl-project--DeepSeek-V4-Flash-FP8"


@pytest.mark.parametrize(
    ("requirement", "bounded"),
    [
        ("transformers==5.19.0", True),
        ("transformers<5.23.0,>=5.16.1", True),
        ("transformers<=5.25.0", True),
        ("transformers==5.26.0", False),  # newer than routescope's: it may have the class
        ("transformers<5.26", False),
        ("transformers>=4.56.0", False),
        ("transformers!=5.0.*,>=4.56.0", False),
        ("transformers==5.19.*", False),  # (a wildcard is not taken as a bound)
        ("not a requirement ==", False),
    ],
)
def test_bounded_by_routescope_transformers(requirement: str, bounded: bool) -> None:
    assert _bounded_by(requirement, "5.25.0") is bounded


class _Tree:
    """A release with one config module and the given requirement on transformers."""

    def __init__(self, requirement: str | None, config_text: str = "X = 1\n") -> None:
        self.requirement = requirement
        self.texts = {"fw/configs/some.py": config_text.encode(), "fw/models/m.py": b"deepseek_ref"}

    def files(self) -> list[str]:
        return list(self.texts)

    def prefetch(self, paths: Any) -> None:
        pass

    def read_bytes(self, path: str) -> bytes:
        return self.texts[path]

    def metadata(self) -> Metadata:
        reqs = (self.requirement,) if self.requirement else ()
        return Metadata("fw", "1.0", None, reqs)


def _load(
    monkeypatch: pytest.MonkeyPatch, tree: _Tree, config: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    known = frozenset({"deepseek_v3"})
    monkeypatch.setattr(ownconfig, "known_model_types", lambda: ("5.25.0", known))
    monkeypatch.setattr(ownconfig, "registered", lambda engine, rules, model_type: None)
    engine = SimpleNamespace(facts=SimpleNamespace(bindings=dict(LOADS)))
    rules = SimpleNamespace(data={"config_sources": ["fw/configs/"]})
    spec = SimpleNamespace(model_type=Const(config.get("model_type")), config_file=config)
    notes: list[str] = []
    config_loading(engine, rules, tree, spec, notes)  # type: ignore[arg-type]
    return engine.facts.bindings, notes


def test_a_model_type_transformers_has_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    bound, notes = _load(monkeypatch, _Tree("transformers==5.19.0"), {"model_type": "deepseek_v3"})
    assert bound["model_type_known"].value is True and bound["remote_config"].value is False
    assert not notes


def test_a_model_type_no_allowed_transformers_has_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    bound, notes = _load(monkeypatch, _Tree("transformers==5.19.0"), {"model_type": "deepseek_ref"})
    assert isinstance(bound["model_type_known"], Const)
    assert bound["model_type_known"].value is False
    raised = bound["model_type_unknown"]
    assert isinstance(raised, Unknown) and raised.exc == "ValueError"
    assert "'deepseek_ref'" in raised.reason and "transformers==5.19.0" in raised.reason
    assert not notes


def test_a_model_type_a_config_module_spells_is_not_decided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A release file under config_sources that names it may register it: nothing is said (a
    file elsewhere, here a model's, registers nothing at server start-up the rules know of)."""
    tree = _Tree("transformers==5.19.0", 'AutoConfig.register("deepseek_ref", RefConfig)\n')
    bound, _ = _load(monkeypatch, tree, {"model_type": "deepseek_ref"})
    assert bound["model_type_known"].value is True


def test_a_release_that_allows_newer_transformers_leaves_it_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bound, notes = _load(monkeypatch, _Tree("transformers>=4.56.0"), {"model_type": "deepseek_ref"})
    assert isinstance(bound["model_type_known"], Unknown)
    assert len(notes) == 1 and notes[0].startswith("assumed: the server's transformers has")


def test_a_config_class_of_its_own_is_remote_code(monkeypatch: pytest.MonkeyPatch) -> None:
    config = {"model_type": "deepseek_ref", "auto_map": {"AutoConfig": "configuration_x.XConfig"}}
    bound, _ = _load(monkeypatch, _Tree("transformers==5.19.0"), config)
    assert bound["remote_config"].value is True
    assert "--trust-remote-code" in bound["model_type_unknown"].reason


def _inspect(model: Path, framework: str, **server_args: str) -> dict[str, Any]:
    req = api.InspectRequest(model=str(model), framework=framework, gpu="sm120", tp=8,
                             server_args=server_args)  # fmt: skip
    return api.inspect(req)


@pytest.mark.network
@pytest.mark.parametrize(
    ("framework", "where"),
    [
        ("sglang==0.5.23", "sglang/srt/utils/hf_transformers/config.py:336"),
        ("vllm==0.34.0", "vllm/transformers_utils/config.py:924"),
    ],
)
def test_a_model_type_nothing_registers_stops_the_server(framework: str, where: str) -> None:
    """Each release pins or bounds transformers below routescope's (5.19.0; <5.23.0), so the
    server's AutoConfig has no class for `deepseek_ref` and get_config raises; no flag helps."""
    bound = {"sglang==0.5.23": "transformers==5.19.0", "vllm==0.34.0": "transformers<5.23.0"}
    version = metadata.version("transformers")
    if not _bounded_by(bound[framework], version):
        pytest.skip(f"transformers {version} here is older than {bound[framework]} allows")
    report = _inspect(CHECKPOINT, framework)
    assert report["dispatch"]["status"] == "blocked"
    (blocker,) = report["blockers"]
    assert f"{blocker['exception']} at {blocker['where']}" == f"ValueError at {where}"
    assert blocker["way_out"]["flags"] == []


@pytest.mark.network
def test_a_release_allowing_any_transformers_says_what_it_assumes() -> None:
    """vLLM 0.20.0 requires transformers>=4.56.0: a newer one may have the class, so the answer
    stands on that, and says so."""
    report = _inspect(CHECKPOINT, "vllm==0.20.0")
    assert report["dispatch"]["status"] == "selected"
    assert any("assumed: the server's transformers has a config class for model_type "
               "'deepseek_ref'" in n for n in report["dispatch"]["notes"])  # fmt: skip


@pytest.mark.network
def test_a_class_of_its_own_loads_with_trust_remote_code(tmp_path: Path) -> None:
    """The same checkpoint with config.json naming its own class: blocked until
    --trust-remote-code, which the way out finds; with it, the router runs."""
    if not _bounded_by("transformers==5.19.0", metadata.version("transformers")):
        pytest.skip("transformers here is older than SGLang 0.5.23's pin")
    config = json.loads((CHECKPOINT / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "configuration_deepseek.DeepseekRefConfig"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    report = _inspect(tmp_path, "sglang==0.5.23")
    assert report["dispatch"]["status"] == "blocked"
    assert report["blockers"][0]["way_out"]["flags"] == ["--set trust_remote_code=true"]
    trusted = _inspect(tmp_path, "sglang==0.5.23", trust_remote_code="true")
    assert trusted["dispatch"]["status"] == "selected"
