"""An optional package's version as the framework's code asks for it: `__import__(name)`,
`name.__version__` (the version the release pins, an assumption) and packaging's parse."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.values import Const, Value, truth
from routescope.analysis.phases.frameworks import required_packages
from routescope.analysis.phases.trace import resolve_entry, trace_call
from routescope.source.tree import Metadata
from tests.engine.test_engine_synthetic import make_tree

# sglang 0.5.4.post1 layers/moe/utils.py:211-216, the check that forked DeepSeek-V3 on SM100
SRC = """
import importlib.util
from packaging import version as pkg_version

def new_enough():
    return not importlib.util.find_spec("flashinfer") or pkg_version.parse(
        __import__("flashinfer").__version__
    ) >= pkg_version.parse("0.2.9rc1")

def version():
    return __import__("flashinfer.fused_moe").__version__

def bad():
    return pkg_version.parse("not a version")
"""


def _run(tmp_path: Path, entry: str, facts: Facts) -> list[Value | None]:
    engine = Engine(make_tree(tmp_path, {"m.py": SRC}), facts)
    paths = trace_call(engine, resolve_entry(engine, f"fw.m:{entry}"), [], {})
    return [p.value for p in paths]


def test_a_pinned_package_version_decides_a_version_check(tmp_path: Path) -> None:
    pin = ("0.4.1", "flashinfer-python==0.4.1, pinned")
    facts = Facts(packages={"flashinfer": True}, versions={"flashinfer": pin})
    (value,) = _run(tmp_path, "new_enough", facts)
    assert value is not None and truth(value) is True  # 0.4.1 >= 0.2.9rc1, whatever find_spec
    (v,) = _run(tmp_path / "b", "version", facts)  # __import__("a.b") gives the top module a
    assert isinstance(v, Const) and v.value == "0.4.1"
    assert ("package", "flashinfer.__version__") in facts.used


def test_without_a_pin_the_version_is_unknown_and_a_bad_one_raises(tmp_path: Path) -> None:
    (v,) = _run(tmp_path, "version", Facts(packages={"flashinfer": True}))
    assert not isinstance(v, Const)
    engine = Engine(make_tree(tmp_path / "b", {"m.py": SRC}), Facts())
    (p,) = trace_call(engine, resolve_entry(engine, "fw.m:bad"), [], {})
    assert p.outcome == "raise" and "InvalidVersion" in p.result


REQUIRES = """
import importlib.util

def has(name):
    return importlib.util.find_spec(name) is not None
"""


def _has(tmp_path: Path, facts: Facts) -> list[Value | None]:
    engine = Engine(make_tree(tmp_path, {"r.py": REQUIRES}), facts)
    return [p.value for p in trace_call(engine, resolve_entry(engine, "fw.r:has"),
                                        [Const("cutlass")], {})]  # fmt: skip


def test_a_package_the_release_requires_imports(tmp_path: Path) -> None:
    """vLLM 0.34.0 requires nvidia-cutlass-dsl[cu13]==4.8.0 (METADATA) and probes `cutlass`
    with find_spec (utils/import_utils.py:413): installed with the release, it imports, over
    what the rules' table says; only the user's --package says otherwise."""
    lines = ("nvidia-cutlass-dsl[cu13]==4.8.0", "tilelang==0.1.12; platform_system == 'Linux'")
    meta = Metadata("vllm", "0.34.0", None, lines)
    dists = {"cutlass": "nvidia-cutlass-dsl", "tilelang": "tilelang", "quack": "quack-kernels"}
    required = required_packages(dists, meta)
    assert set(required) == {"cutlass"}  # a line under a marker, or none, says nothing
    assert "nvidia-cutlass-dsl[cu13]==4.8.0" in required["cutlass"]
    (unknown,) = _has(tmp_path, Facts())  # neither the facts nor the release say
    assert not isinstance(unknown, Const)
    facts = Facts(packages={"cutlass": False}, required=required)
    (v,) = _has(tmp_path / "b", facts)
    assert isinstance(v, Const) and v.value is True
    assert "METADATA" in facts.used[("package", "cutlass")].source
    user = Facts(packages={"cutlass": False}, required=required,
                 given_packages=frozenset({"cutlass"}))  # fmt: skip
    (v,) = _has(tmp_path / "c", user)
    assert isinstance(v, Const) and v.value is False
