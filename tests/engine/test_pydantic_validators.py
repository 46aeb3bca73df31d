"""pydantic's validators run when a pydantic dataclass is built, as pydantic runs them.

vLLM's configuration classes are pydantic dataclasses (0.34.0 config/utils.py:52-83, `@config`
-> pydantic.dataclasses.dataclass), and from 0.34.0 a validator decides a value routing code
reads: `EPLBConfig.num_redundant_experts` defaults to None (config/parallel.py:78) and
ParallelConfig's "after" model validator sets it to 0 when EPLB is off (:559, :624-633), which
DeepseekV2MoE adds to the expert count (models/deepseek_v2.py:338-340). Without the validators
every MoE block raised TypeError there.
"""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.facts import Facts
from tests.engine.test_engine_synthetic import SCORES, SINKS, make_tree, run

HEAD = """
import torch
from fastk import topk_fast
from pydantic import Field, field_validator, model_validator
from pydantic.dataclasses import dataclass as pdataclass
from typing_extensions import dataclass_transform

@dataclass_transform(field_specifiers=(Field,))
def config(cls):
    return pdataclass(cls)

"""


def _kinds(tmp_path: Path, body: str) -> list[str]:
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES(),
                facts=Facts(sinks=SINKS))  # fmt: skip
    return sorted(str(p.sink.kind if p.sink else None) for p in paths)


def test_after_model_validator_runs_after_post_init(tmp_path: Path) -> None:
    body = """
@config
class Eplb:
    redundant: int = Field(default=None, ge=0)

@config
class Parallel:
    enable_eplb: bool = False
    eplb: Eplb = Field(default_factory=Eplb)
    order: str = ""

    def __post_init__(self):
        self.order += "post,"

    @model_validator(mode="after")
    def _validate(self):
        self.order += "after"
        if not self.enable_eplb:
            self.eplb.redundant = 0
        return self

def route(x):
    p = Parallel()
    if 256 + p.eplb.redundant == 256 and p.order == "post,after":
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_field_validators_modes_order_and_defaults(tmp_path: Path) -> None:
    """A field's validators run on the value the call gives, "before" and "wrap" ones in
    reverse order of definition, then "after" ones in order; a default is not validated unless
    the field asks (validate_default=True); a validator may take the ValidationInfo."""
    body = """
@config
class Model:
    mode: str = "AUTO"
    trail: str = ""
    checked: str = Field(default="X", validate_default=True)
    named: str = ""

    @field_validator("trail", mode="before")
    @classmethod
    def _first_defined(cls, value):
        return value + "1"

    @field_validator("trail", mode="before")
    @classmethod
    def _second_defined(cls, value):
        return value + "2"

    @field_validator("trail")
    @classmethod
    def _after(cls, value):
        return value + "A"

    @field_validator("mode", "checked", mode="wrap")
    @classmethod
    def _lower(cls, value, handler):
        return handler(value).lower()

    @field_validator("named")
    def _name(cls, value, info):
        return info.field_name

def route(x):
    given = Model(mode="FAST", trail="t", named="?")
    default = Model()
    if (given.mode == "fast" and given.trail == "t21A" and given.checked == "x"
            and given.named == "named" and default.mode == "AUTO" and default.trail == ""
            and default.checked == "x"):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_a_validator_that_raises_raises_and_a_subclass_replaces_one(tmp_path: Path) -> None:
    body = """
@config
class Cache:
    dtype: str = "auto"

    @field_validator("dtype")
    @classmethod
    def _known(cls, value):
        if value not in ("auto", "fp8"):
            raise ValueError(value)
        return value

@config
class Lenient(Cache):
    @field_validator("dtype")
    @classmethod
    def _known(cls, value):
        return value

def route(x):
    try:
        Cache(dtype="int3")
        rejected = False
    except ValueError:
        rejected = True
    if rejected and Cache(dtype="fp8").dtype == "fp8" and Lenient(dtype="int3").dtype == "int3":
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_post_init_that_raises_raises(tmp_path: Path) -> None:
    """A dataclass whose __post_init__ raises is not built: the call raises (the paths on
    which it raised went on before, as if it had been built)."""
    body = """
import dataclasses

@dataclasses.dataclass
class Spec:
    tp: int = 1

    def __post_init__(self):
        if self.tp > 8:
            raise ValueError("tp")

def route(x):
    try:
        Spec(tp=16)
        built = True
    except ValueError:
        built = False
    if not built and Spec(tp=8).tp == 8:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_before_model_validators_run_on_the_arguments(tmp_path: Path) -> None:
    """A "before" model validator is handed the arguments (0.34.0 config/pooler.py:125-131
    rejects removed parameters): what it raises, the building raises; what it hands back
    unchanged leaves the fields as given; anything else leaves them not told."""
    body = """
from pydantic_core import ArgsKwargs

@config
class Pooler:
    kind: str = "mean"

    @model_validator(mode="before")
    @classmethod
    def reject_removed(cls, data):
        values = data.kwargs if isinstance(data, ArgsKwargs) else data
        if "softmax" in values:
            raise ValueError("softmax was removed")
        return data

@config
class Rewritten:
    kind: str = "mean"

    @model_validator(mode="before")
    @classmethod
    def rewrite(cls, data):
        return {"kind": "last"}

def route(x):
    try:
        Pooler(softmax=True)
        rejected = False
    except ValueError:
        rejected = True
    if rejected and Pooler(kind="cls").kind == "cls":
        return topk_fast(x)
    return torch.topk(x, 2)

def rewritten(x):
    if Rewritten(kind="cls").kind == "cls":
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]
    index = make_tree(tmp_path / "r", {"route.py": HEAD + body})
    paths = run(index, "fw.route:rewritten", SCORES(), facts=Facts(sinks=SINKS))
    assert sorted(str(p.sink.kind if p.sink else None) for p in paths) == [
        "cuda_kernel",
        "torch",
    ]  # the field it rewrote: not told
