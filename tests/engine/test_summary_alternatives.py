"""A rules summary may list alternatives: the engine takes the first whose names the release
defines where the function lives (vLLM 0.11+ build the decode step's forward context with
create_forward_context; 0.10.x construct ForwardContext in set_forward_context). The choice is
recorded as the assumption the answer rests on."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const
from routescope.analysis.phases.trace import resolve_entry
from tests.engine.test_engine_synthetic import make_tree

NEW = """
def create_context(config):
    return ("made by the helper", config)

def get_context():
    raise AssertionError("no context outside a step")
"""
OLD = """
class Context:
    def __init__(self, layers):
        self.layers = layers

def get_context():
    raise AssertionError("no context outside a step")
"""
SUMMARY = (("", "create_context(server_config)"), ("", "Context(layers=server_config)"))


def _returned(tmp_path: Path, source: str) -> tuple[object, list[str]]:
    facts = Facts(summaries={"fw.ctx:get_context": SUMMARY})
    facts.bindings["server_config"] = Const("the config")
    engine = Engine(make_tree(tmp_path, {"ctx.py": source}), facts)
    fn = resolve_entry(engine, "fw.ctx:get_context")
    outs = engine.call(PathState(envs=[{}]), fn, [], {}, None)
    assert len(outs) == 1 and outs[0][0].raising is None
    said = [a.value for a in facts.used.values() if a.kind == "summary"]
    return outs[0][1], said


def test_the_first_alternative_the_release_defines_is_taken(tmp_path: Path) -> None:
    value, said = _returned(tmp_path / "new", NEW)
    assert said == ["returns create_context(server_config)"]
    assert isinstance(value, Const) and value.value == ("made by the helper", "the config")
    value, said = _returned(tmp_path / "old", OLD)
    assert said == ["returns Context(layers=server_config)"]
    assert getattr(value, "cls", None) is not None and value.cls.qualname == "fw.ctx:Context"


READS = """
def get_config(path):
    sidecar = path + "/" + "hf_quant_config.json"
    return sidecar
"""
IGNORES = """
def get_config(path):
    "Reads config.json (not hf_quant_config.json: a docstring is not code)."
    return path
"""


def test_an_alternative_holds_where_the_function_has_its_string(tmp_path: Path) -> None:
    """vLLM 0.10.1+'s get_config attaches ModelOpt's sidecar file; 0.10.0's reads no such
    file: the summary that attaches it applies only where the function's code names it."""
    alternatives = (("hf_quant_config.json", "'with the sidecar'"), ("", "'as written'"))
    for where, source, want in (("new", READS, "with the sidecar"), ("old", IGNORES, "as written")):
        facts = Facts(summaries={"fw.cfg:get_config": alternatives})
        engine = Engine(make_tree(tmp_path / where, {"cfg.py": source}), facts)
        fn = resolve_entry(engine, "fw.cfg:get_config")
        outs = engine.call(PathState(envs=[{}]), fn, [Const("/ckpt")], {}, None)
        assert [v.value for _, v in outs] == [want], where  # type: ignore[attr-defined]


def test_the_first_router_class_a_release_has_is_taken(tmp_path: Path) -> None:
    """The rules' router class alternatives: a release without the first (no such module, or
    no such class in it) takes the next; one whose module does not import is an error that
    names why, not a reason to take the next; none at all is an error naming them all."""
    import pytest

    from routescope.analysis.phases.trace import first_class
    from routescope.errors import RoutescopeError

    files = {
        "layer.py": "class FusedLayer:\n    pass\n",
        "router.py": "class Other:\n    pass\n",
        "broken.py": "raise ImportError('no kernels here')\n",
    }
    engine = Engine(make_tree(tmp_path, files), Facts())
    names = ("fw.nowhere:Router", "fw.router:Router", "fw.layer:FusedLayer")
    assert first_class(engine, names, "test").qualname == "fw.layer:FusedLayer"
    with pytest.raises(RoutescopeError, match=r"fw\.broken:Router"):
        first_class(engine, ("fw.broken:Router", "fw.layer:FusedLayer"), "test")
    with pytest.raises(RoutescopeError, match=r"fw\.nowhere:Router or fw\.router:Router"):
        first_class(engine, names[:2], "test")
