"""The server-argument choices a release declares, read as its parser gets them."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.values import ClassVal
from routescope.analysis.phases.declared import declared_choices
from routescope.analysis.phases.trace import resolve_entry
from tests.engine.test_engine_synthetic import make_tree


def _declared(tmp_path: Path, source: str) -> dict[str, tuple[object, ...]]:
    engine = Engine(make_tree(tmp_path, {"args.py": source}), Facts())
    cls = resolve_entry(engine, "fw.args:ServerArgs")
    assert isinstance(cls, ClassVal)
    wanted = {"quantization", "tp_size", "moe_runner_backend", "other"}
    return {k: d.choices for k, d in declared_choices(engine, cls, wanted).items()}


def test_a_dataclass_fields_arg_choices(tmp_path: Path) -> None:
    got = _declared(
        tmp_path,
        """
        from dataclasses import dataclass
        from typing import Annotated, Optional
        CHOICES = ["fp8", "modelopt_fp4"]
        CHOICES.append("mxfp4")
        class Arg:
            def __init__(self, help="", choices=None):
                self.choices = choices
        @dataclass
        class ServerArgs:
            quantization: Annotated[Optional[str], Arg(help="q", choices=CHOICES)] = None
            tp_size: int = 1
    """,
    )
    assert got == {"quantization": ("fp8", "modelopt_fp4", "mxfp4")}


def test_argparse_add_argument_choices(tmp_path: Path) -> None:
    got = _declared(
        tmp_path,
        """
        from dataclasses import dataclass
        BACKENDS = ("auto", "triton")
        @dataclass
        class ServerArgs:
            moe_runner_backend: str = "auto"
            @staticmethod
            def add_cli_args(parser):
                parser.add_argument("--moe-runner-backend", type=str, choices=BACKENDS)
                parser.add_argument("--other", choices=unknown_name())
    """,
    )
    assert got == {"moe_runner_backend": ("auto", "triton")}  # unknown choices: nothing checked


def test_a_deployment_that_sets_nothing_reads_no_declarations(tmp_path: Path) -> None:
    source = """
        class ServerArgs:
            def add_cli_args(parser):
                parser.add_argument("--backend", choices=("auto", "triton"))
    """
    engine = Engine(make_tree(tmp_path, {"args.py": source}), Facts())
    cls = resolve_entry(engine, "fw.args:ServerArgs")
    assert isinstance(cls, ClassVal) and declared_choices(engine, cls, set()) == {}
    assert declared_choices(engine, cls, {"backend"})["backend"].choices == ("auto", "triton")
