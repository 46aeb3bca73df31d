"""The trace engine on small synthetic framework trees: each case isolates one construct."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from routescope.analysis.engine.budget import Budget
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts, SinkRule
from routescope.analysis.engine.values import Const, Tensor, Value
from routescope.analysis.index import Index
from routescope.analysis.phases.trace import TracedPath, resolve_entry, trace_call
from routescope.source.local import CheckoutTree


def SCORES() -> Tensor:
    """What a router is handed: its scores (a kernel that reads them routes)."""
    return Tensor(role="scores")


SINKS = [
    SinkRule("cuda", "cuda_kernel", external="fastk.*"),
    SinkRule("compile", "torch_compile", decorator="torch.compile"),
    SinkRule("torch-topk", "torch", external="torch.topk"),
]


def make_tree(tmp_path: Path, files: dict[str, str]) -> Index:
    for rel, text in files.items():
        path = tmp_path / "fw" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (tmp_path / "fw" / "__init__.py").touch()
    return Index(CheckoutTree(tmp_path))


def run(index: Index, entry: str, *args: object, facts: Facts | None = None,
        budget: Budget | None = None, **kwargs: object) -> list[TracedPath]:  # fmt: skip
    engine = Engine(index, facts or Facts(sinks=SINKS), budget)
    fn = resolve_entry(engine, entry)
    vals = [a if isinstance(a, Value) else Const(a) for a in args]
    kw = {k: Const(v) for k, v in kwargs.items()}
    return trace_call(engine, fn, vals, kw)


def test_env_var_without_default_forks(tmp_path: Path) -> None:
    index = make_tree(
        tmp_path,
        {
            "route.py": """
        import os
        import torch
        from fastk import topk_fast

        def route(x):
            if os.environ.get("FW_FAST"):
                return topk_fast(x)
            return torch.topk(x, 2)
    """
        },
    )
    paths = run(index, "fw.route:route", SCORES())
    assert len(paths) == 2
    assert {p.sink.kind for p in paths if p.sink} == {"cuda_kernel", "torch"}
    assert all(not p.decided for p in paths)
    d = paths[0].decisions[0]
    assert d.value is None and "FW_FAST" in d.reason and d.line == 7


def test_env_var_given_decides(tmp_path: Path) -> None:
    index = make_tree(
        tmp_path,
        {
            "route.py": """
        import os
        import torch
        from fastk import topk_fast

        def route(x):
            if os.getenv("FW_FAST", "0") == "1":
                return topk_fast(x)
            return torch.topk(x, 2)
    """
        },
    )
    (path,) = run(index, "fw.route:route", SCORES())
    assert path.decided and path.sink is not None and path.sink.kind == "torch"
    assert (
        "default at" in path.decisions[0].inputs[0].origins[0] or path.decisions[0].value is False
    )
    facts = Facts(sinks=SINKS, env={"FW_FAST": "1"})
    (path,) = run(index, "fw.route:route", SCORES(), facts=facts)
    assert path.sink is not None and path.sink.name == "fastk.topk_fast"


def test_infinite_loop_ends_within_budget(tmp_path: Path) -> None:
    index = make_tree(
        tmp_path,
        {
            "loop.py": """
        def spin(n):
            while True:
                n = n + 1
            return n
    """
        },
    )
    paths = run(index, "fw.loop:spin", 0, budget=Budget(loop_limit=50))
    assert paths and all(p.outcome == "stop" and "did not finish" in p.stopped for p in paths)


def test_recursion_cycle_ends_within_budget(tmp_path: Path) -> None:
    index = make_tree(
        tmp_path,
        {
            "rec.py": """
        def ping(n):
            return pong(n)

        def pong(n):
            return ping(n)
    """
        },
    )
    paths = run(index, "fw.rec:ping", 1)
    assert paths and all(p.outcome == "stop" and "recursion" in p.stopped for p in paths)


def test_module_level_flags_guards_and_torch_compile(tmp_path: Path) -> None:
    index = make_tree(
        tmp_path,
        {
            "platform.py": """
            import torch
            def is_cuda():
                return torch.cuda.is_available() and torch.version.cuda is not None
            def capability_major():
                return torch.cuda.get_device_capability()[0]
        """,
            "topk.py": """
            import math
            import torch
            from .platform import is_cuda, capability_major
            _is_cuda = is_cuda()
            try:
                from fastk import fused_gate
            except ImportError:
                fused_gate = None

            def is_power_of_two(n):
                return n > 0 and math.log2(n).is_integer()

            @torch.compile(dynamic=True)
            def fallback_impl(logits, k):
                return torch.topk(logits, k)

            def select(logits, k, num_experts, groups):
                per_group = num_experts // groups
                if (
                    _is_cuda
                    and fused_gate is not None
                    and capability_major() >= 10
                    and per_group <= 32
                ):
                    return fused_gate(logits, k)
                return fallback_impl(logits, k)
        """,
        },
    )
    from routescope.analysis.engine.values import Const as C

    facts = Facts(
        sinks=SINKS,
        attributes={"torch.version.cuda": C("12.9", ("rules: torch CUDA version",))},
        calls={
            "torch.cuda.is_available": C(True),
            "torch.cuda.get_device_capability": C((12, 0), ("gpu sm120",)),
        },
        packages={"fastk": True},
    )
    (path,) = run(index, "fw.topk:select", SCORES(), 8, 256, 1, facts=facts)
    assert path.decided
    assert path.sink is not None and path.sink.kind == "torch_compile"
    assert path.sink.name == "fw.topk:fallback_impl"
    decision = path.decisions[-1]
    assert decision.value is False
    failing = [p for p in decision.parts if p.value is False]
    assert [p.text for p in failing] == ["per_group <= 32"]
    (path,) = run(index, "fw.topk:select", SCORES(), 8, 256, 8, facts=facts)
    assert path.sink is not None and path.sink.name == "fastk.fused_gate"
    facts.packages["fastk"] = False
    (path,) = run(index, "fw.topk:select", SCORES(), 8, 256, 8, facts=facts)
    assert path.sink is not None and path.sink.kind == "torch_compile"
    assert "fused_gate is not None" in [
        p.text for p in path.decisions[-1].parts if p.value is False
    ]


def test_dataclass_enum_and_method_dispatch(tmp_path: Path) -> None:
    index = make_tree(
        tmp_path,
        {
            "op.py": """
        from dataclasses import dataclass
        from enum import Enum, auto
        import torch

        class Fmt(Enum):
            STANDARD = auto()
            BYPASSED = auto()

        @dataclass
        class Config:
            top_k: int
            grouped: bool = False
            fmt: Fmt = Fmt.STANDARD

        class Base:
            def forward(self, x):
                return self.forward_cuda(x)

        class TopK(Base):
            def __init__(self, top_k, grouped=False):
                super().__init__()
                self.config = Config(top_k=top_k, grouped=grouped)

            def forward_cuda(self, x):
                if self.config.fmt == Fmt.BYPASSED:
                    return x
                if self.config.grouped:
                    return torch.topk(x, self.config.top_k)
                return other(x)

        def other(x):
            return torch.topk(x, 1)

        def build_and_run(x, grouped):
            return TopK(8, grouped=grouped).forward(x)
    """
        },
    )
    (path,) = run(index, "fw.op:build_and_run", SCORES(), True)
    assert path.sink is not None and path.sink.function == "fw.op:TopK.forward_cuda"
    (path,) = run(index, "fw.op:build_and_run", SCORES(), False)
    assert path.sink is not None and path.sink.function == "fw.op:other"
    assert [d.value for d in path.decisions] == [False, False]


@pytest.mark.parametrize("flag", [True, False])
def test_unknown_argument_forks_and_names_reason(tmp_path: Path, flag: bool) -> None:
    index = make_tree(
        tmp_path,
        {
            "f.py": """
        import torch
        def f(x, mode):
            if mode:
                return torch.topk(x, 1)
            return x
    """
        },
    )
    engine = Engine(index, Facts(sinks=SINKS))
    fn = resolve_entry(engine, "fw.f:f")
    from routescope.analysis.engine.values import Unknown

    paths = trace_call(engine, fn, [SCORES(), Unknown("--moe-mode not given")], {})
    assert len(paths) == 2 and all("--moe-mode" in p.decisions[0].reason for p in paths)
    known = trace_call(engine, fn, [SCORES(), Const(flag)], {})
    assert len(known) == 1 and (known[0].sink is not None) == flag


def test_decorator_registry_is_filled_by_the_modules_beside_it(tmp_path: Path) -> None:
    """A registry filled at import by `@register(...)` in other modules of its package (SGLang's
    FusedOpPool): the server imported those modules before the lookup, so the lookup finds what
    they registered although nothing on the path imports them."""
    index = make_tree(
        tmp_path,
        {
            "pool/__init__.py": "",
            "pool/base.py": """
        class Pool:
            funcs = {}

        def register(key):
            def decorator(fn):
                Pool.funcs[key] = fn
                return fn
            return decorator

        def lookup(key):
            return Pool.funcs.get(key)
    """,
            "pool/fast.py": """
        from fastk import topk_fast
        from fw.pool.base import register

        @register("fast")
        def run_fast(x):
            return topk_fast(x)
    """,
            "route.py": """
        import torch
        from fw.pool.base import lookup

        def route(x):
            fn = lookup("fast")
            if fn is None:
                return torch.topk(x, 2)
            return fn(x)
    """,
        },
    )
    paths = run(index, "fw.route:route", SCORES())
    assert [p.sink.kind if p.sink else None for p in paths] == ["cuda_kernel"]


def test_a_method_does_not_see_its_class_body(tmp_path: Path) -> None:
    """A bare name in a method is the module's (or an enclosing function's), never the class
    body's: SGLang 0.5.23's Fp8MoEMethod.get_moe_runner_backend(self, layer) calls the module
    function get_moe_runner_backend() inside its other methods."""
    index = make_tree(
        tmp_path,
        {
            "route.py": """
        import torch
        from fastk import topk_fast

        def backend():
            return "fast"

        def make():
            level = 2
            class Local:
                level = 3
                def get(self):
                    return level
            return Local()

        class Method:
            def backend(self, layer):
                return "slow"

            def pick(self):
                return backend()

        def route(x):
            if Method().pick() == "fast" and make().get() == 2:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
        },
    )
    paths = run(index, "fw.route:route", SCORES())
    assert [p.sink.kind if p.sink else None for p in paths] == ["cuda_kernel"]


def test_ways_raising_at_one_place_join(tmp_path: Path) -> None:
    """A check that may fail splits off a raising way per live path, and each call of a
    function with forks hands its caller that many ways raising at one place (a Triton MoE
    forward: 400 ways raising at one check, past the path limit, so the experts were never
    read). Ways raising one class at one place with the same kernels join, so the caller
    finishes, and a handler further up still sees the raise."""
    forks = "\n".join(f"    if os.environ.get('FW_{i}'):\n        x = x + {i}" for i in range(4))
    calls = "\n".join("    x = check(x, w)" for _ in range(20))
    index = make_tree(
        tmp_path,
        {
            "route.py": f"""
import os
import torch
from fastk import topk_fast

def check(x, w):
{forks}
    if w.shape[0] != x.shape[1]:
        raise ValueError("shape")
    return x

def experts(x, w):
{calls}
    return topk_fast(x)

def route(x, w):
    try:
        return experts(x, w)
    except ValueError:
        return torch.topk(x, 2)
""",
        },
    )
    paths = run(index, "fw.route:route", SCORES(), Tensor())
    assert not [p for p in paths if p.stopped], [p.stopped for p in paths]
    assert {p.sink.kind for p in paths if p.sink is not None} == {"cuda_kernel", "torch"}
    assert len(paths) < 64
