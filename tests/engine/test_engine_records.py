"""Library semantics the engine evaluates: records (dataclasses, msgspec Structs, defstruct),
comprehensions, dict unpacking, list concatenation, copies, torch dtypes and paths."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.facts import Checkpoint, Facts
from tests.engine.test_engine_synthetic import SCORES, SINKS, make_tree, run

HEAD = """
import copy
import os
import dataclasses
from pathlib import Path
from typing import get_type_hints
import msgspec
import msgspec.structs
import torch
from fastk import topk_fast

"""


def _kinds(tmp_path: Path, body: str, facts: Facts | None = None) -> list[str | None]:
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES(),
                facts=facts)  # fmt: skip
    return sorted(str(p.sink.kind if p.sink else None) for p in paths)


def test_msgspec_struct_reflection_and_defstruct(tmp_path: Path) -> None:
    """SGLang 0.5.20+ assembles ServerArgs from namespace Structs with defstruct."""
    body = """
class Moe(msgspec.Struct):
    _NS_PATH = "exec.moe"
    runner: str = "auto"
    fuse: bool = False
    extra: list = msgspec.field(default_factory=list)

class Base:
    def describe(self):
        return self.runner

def collect(sources):
    annotations, defaults = {}, {}
    for source in sources:
        hints = get_type_hints(source, include_extras=True)
        for field in msgspec.structs.fields(source):
            annotations[field.name] = (source, hints[field.name])
            if field.default is not msgspec.NODEFAULT:
                defaults[field.name] = field.default
            elif field.default_factory is not msgspec.NODEFAULT:
                defaults[field.name] = msgspec.field(default_factory=field.default_factory)
    return annotations, defaults

_ann, _defaults = collect([Moe])
Args = msgspec.defstruct(
    "Args",
    [(n, a[1], _defaults[n]) if n in _defaults else (n, a[1]) for n, a in _ann.items()],
    namespace={k: v for k, v in vars(Base).items() if k not in ("__dict__", "__weakref__")},
)

def route(x):
    args = Args()
    names = [f.name for f in msgspec.structs.fields(Args)]
    if (args.describe() == "auto" and not args.fuse and args.extra == [] and names ==
            ["runner", "fuse", "extra"] and issubclass(Args, msgspec.Struct)):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_an_object_an_annotation_builds_keeps_its_fields(tmp_path: Path) -> None:
    """SGLang 0.5.19 marks ServerArgs fields `A[str, Arg(...), NS("exec.moe")]` and reads the
    marker's fields back through get_type_hints(include_extras=True). The annotation is
    evaluated on a path of its own: what its constructors set must outlive that path (it was
    lost, so `a.path` read as absent: an AttributeError where Python returns the path)."""
    body = """
from typing import Annotated, get_args, get_origin

class NS:
    def __init__(self, path):
        self.path = path

@dataclasses.dataclass
class Args:
    backend: Annotated[str, "help", NS("exec.moe")] = "auto"
    plain: int = 3

def namespace_of(cls):
    hints = get_type_hints(cls, include_extras=True)
    out = {}
    for field in dataclasses.fields(cls):
        tp = hints.get(field.name, field.type)
        if get_origin(tp) is Annotated:
            for a in get_args(tp)[1:]:
                if isinstance(a, NS):
                    out[field.name] = a.path
    return out

def route(x):
    if namespace_of(Args) == {"backend": "exec.moe"}:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_dataclass_reflection(tmp_path: Path) -> None:
    body = """
@dataclasses.dataclass
class Cfg:
    a: int = 1
    b: str = "x"

def route(x):
    names = tuple(f.name for f in dataclasses.fields(Cfg))
    if dataclasses.is_dataclass(Cfg) and not dataclasses.is_dataclass(3) and names == ("a", "b"):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_collection_abcs_and_the_checkpoint_config(tmp_path: Path) -> None:
    """isinstance against collections.abc / typing collection ABCs is exact for tracked
    containers and constants; the checkpoint's config is a PretrainedConfig, not a Mapping,
    and to_dict() gives its attributes (as SGLang 0.5.23's checkpoint_quantization reads it)."""
    body = """
from typing import Mapping, Sequence
from transformers import PretrainedConfig

def route(x, config):
    seen = {"a": 1}
    if not (isinstance(seen, Mapping) and isinstance([1], Sequence) and isinstance((1,), Sequence)
            and not isinstance("s", Mapping) and not isinstance(seen, Sequence)):
        return torch.topk(x, 2)
    if isinstance(config, Mapping) or not isinstance(config, PretrainedConfig):
        return torch.topk(x, 2)
    as_dict = config.to_dict()
    if as_dict.get("quantization_config") is None and as_dict["text_config"]["top_k"] == 8:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    from routescope.analysis.engine.values import Const, Instance

    text = Instance(None, {"top_k": Const(8)}, "config")
    config = Instance(None, {"model_type": Const("m"), "text_config": text}, "config")
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES(),
                config)  # fmt: skip
    assert [p.sink.kind if p.sink else None for p in paths] == ["cuda_kernel"]


def test_dataclass_replace_builds_a_new_record(tmp_path: Path) -> None:
    """dataclasses.replace: the same class, its fields with the changes over them, and
    __post_init__ run again; the original is left as it was (0.5.23's with_phase)."""
    body = """
@dataclasses.dataclass
class Phase:
    backend: str = "full"
    max_bs: int = 0
    doubled: int = 0

    def __post_init__(self):
        self.doubled = self.max_bs * 2

def route(x):
    first = Phase(max_bs=4)
    second = dataclasses.replace(first, backend="breakable")
    third = msgspec.structs.replace(first) if False else second
    if (second.backend == "breakable" and second.max_bs == 4 and second.doubled == 8
            and first.backend == "full" and second is not first and third is second):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_unpacking_concatenation_copies_dtypes(tmp_path: Path) -> None:
    body = """
BASE = {"mode": "auto", "k": 8}

def route(x):
    merged = {**BASE, "mode": "fast", **{"n": 2}}
    order = ["a"] + ["b", "c"]
    cfg = {"inner": {"v": 1}}
    dup = copy.deepcopy(cfg)
    dup["inner"]["v"] = 2
    same = torch.float == torch.float32 and torch.bfloat16 != torch.float16
    if (merged == {"mode": "fast", "k": 8, "n": 2} and order == ["a", "b", "c"]
            and cfg["inner"]["v"] == 1 and same):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_checkpoint_queries_follow_what_was_read(tmp_path: Path) -> None:
    """os.path and pathlib queries about the model path (Path.glob too: a directory holding only
    config.json has no weight shards) are answered from the checkpoint."""
    body = """
def route(x):
    root = "/models/glm5"
    gguf = Path(root).is_file() or Path(root).suffix == ".gguf"
    shards = sorted(Path(root).glob("*.safetensors"))
    if shards or len(list(Path(root).glob("*.json"))) != 1:
        return torch.topk(x, 2)
    modelopt = os.path.exists(os.path.join(root, "hf_quant_config.json"))
    if os.path.isdir(root) and os.path.isfile(root + "/config.json") and not gguf and not modelopt:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    known = Facts(sinks=SINKS, checkpoint=Checkpoint("/models/glm5", True,
                  frozenset({"config.json"}), "test"))  # fmt: skip
    assert _kinds(tmp_path, body, known) == ["cuda_kernel"]
    assert set(_kinds(tmp_path / "unknown", body)) == {"cuda_kernel", "torch"}  # no facts: both


def test_a_concrete_paths_disk_queries_are_unknown(tmp_path: Path) -> None:
    """A path of known text stands for pathlib.Path too: its methods that ask the server's disk
    (resolve, read_bytes) are unknown, never the AttributeError the pure class would raise
    (SGLang 0.5.15's JIT source hash resolves each header path, jit_kernel/utils.py:78-101:
    every way raised, and the NVFP4 experts' after-loading step read as never finishing)."""
    body = """
def route(x):
    p = Path("/opt/kernels/a.cuh").resolve()
    data = p.read_bytes()
    if (p.parent / "b.h").resolve().is_file() and Path("/opt/kernels/a.cuh").stem == "a":
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert sorted(_kinds(tmp_path, body)) == ["cuda_kernel", "torch"]


def test_context_var_default_set_and_reset(tmp_path: Path) -> None:
    """contextvars.ContextVar: its default until a `with` block sets it, the set value inside,
    the default again after the reset (0.5.23's deferred-finalize switch of the TRT-LLM MoE)."""
    body = """
import contextvars
from contextlib import contextmanager

_enabled = contextvars.ContextVar("enabled", default=False)
_unset = contextvars.ContextVar("unset")

@contextmanager
def enabled_context(on=True):
    token = _enabled.set(on)
    try:
        yield
    finally:
        _enabled.reset(token)

def route(x):
    before = _enabled.get()
    with enabled_context():
        inside = _enabled.get()
    after = _enabled.get()
    given = _enabled.get("given")  # no value of its own: get()'s default before its own
    if (before is False and inside is True and after is False and _unset.get(7) == 7
            and given == "given"):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_dataclass_transform_pydantic_fields_and_init_vars(tmp_path: Path) -> None:
    """vLLM's configs: a helper decorator declared with typing's dataclass_transform (PEP 681)
    makes a pydantic dataclass; `pydantic.Field(default=1)` is the field's default and its
    class attribute (`nnodes: int = ParallelConfig.nnodes` copies it); an InitVar field goes
    to __post_init__, not onto the object; next() over a generator expression gives its first
    item; `if TYPE_CHECKING:` blocks never run. Each was unknown or wrong before."""
    body = """
from typing import TYPE_CHECKING
from dataclasses import InitVar, field, fields, MISSING
from pydantic.dataclasses import dataclass as pdataclass
from pydantic.fields import Field, FieldInfo
from typing_extensions import dataclass_transform

if TYPE_CHECKING:
    SWITCH = True
else:
    SWITCH = False

@dataclass_transform(field_specifiers=(Field,))
def config(cls):
    return pdataclass(cls)

@config
class Parallel:
    nnodes: int = Field(default=1, ge=1)
    overrides: dict = field(default_factory=dict)
    mode: InitVar[str] = "eager"
    seen: str = "none"

    def __post_init__(self, mode):
        self.seen = mode

def default_of(cls, name):
    f = next(f for f in fields(cls) if f.name == name)
    if f.default is MISSING and not isinstance(f.default, FieldInfo):
        return f.default_factory
    return f.default

def route(x):
    p = Parallel(mode="graph")
    first = next((n for n in (3, 4) if n > 3), None)
    none = next((n for n in (3, 4) if n > 9), "empty")
    if (Parallel.nnodes == 1 and p.nnodes == 1 and p.overrides == {} and p.seen == "graph"
            and "mode" not in vars(p) and default_of(Parallel, "overrides") is dict
            and first == 4 and none == "empty" and not SWITCH):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_generators_signatures_and_lazy_modules(tmp_path: Path) -> None:
    """A generator function's call gives what it yields (list(), next(), a for loop; `yield
    from`), never the None its body ends with (list(None) raised a TypeError that is not
    Python's); inspect.signature of a function, a bound method and a class; a bound method's
    __func__; a lazy loader deriving types.ModuleType (its super().__init__(name) sets
    __name__, importlib imports it, its __dict__ is the module's namespace)."""
    (tmp_path / "fw" / "other.py").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "fw" / "other.py").write_text("VALUE = 7\n")
    body = """
import importlib
import inspect
from types import ModuleType

def layers(config, nested):
    if not config:
        return
    if nested:
        yield from (p for p in config.values() if p)
    else:
        yield config

class Lazy(ModuleType):
    def __init__(self, name):
        self._module = None
        super().__init__(name)

    def __getattr__(self, item):
        if self._module is None:
            self._module = importlib.import_module(self.__name__)
            self.__dict__.update(self._module.__dict__)
        return getattr(self._module, item)

class Model:
    def __init__(self, vllm_config, *, prefix=""):
        pass

    def forward(self, x, flag=True):
        return x

def takes(fn, name):
    p = inspect.signature(fn).parameters.get(name)
    return bool(p) and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                  inspect.Parameter.KEYWORD_ONLY)

def route(x):
    flat = list(layers({"rope_theta": 1.0}, False))
    nested = list(layers({"full": {"a": 1}, "sliding": {}}, True))
    none = list(layers({}, False))
    first = next(layers({"k": 2}, False))
    lazy = Lazy("fw.other")
    m = Model(None)
    if (len(flat) == 1 and flat[0]["rope_theta"] == 1.0 and nested == [{"a": 1}] and none == []
            and first == {"k": 2}
            and lazy.VALUE == 7 and lazy.__name__ == "fw.other"
            and takes(Model, "prefix") and not takes(Model, "self") and takes(m.forward, "flag")
            and list(inspect.signature(Model.__init__).parameters)[0] == "self"
            and m.forward.__func__ is Model.forward and not hasattr(Model.forward, "__func__")):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_closures_properties_class_decorators_and_registered_ops(tmp_path: Path) -> None:
    """A nested function that calls itself through its enclosing frame (bound by the def after
    it was made: it was never entered); a property read through super() runs (it gave the bound
    getter, which is true); a registering class decorator sets its class attribute; an op a
    torch.library.Library registers with a Python implementation runs that function when
    torch.ops.<namespace>.<op> is called (it counted as a compiled kernel)."""
    body = """
from torch.library import Library

lib = Library("fw", "FRAGMENT")
REGISTRY = {}

def register(name):
    def decorator(cls):
        cls.name = name
        REGISTRY[name] = cls
        return cls
    return decorator

@register("moe")
class Op:
    pass

class Base:
    @property
    def monolithic(self):
        return False

class Child(Base):
    @property
    def monolithic(self):
        return super().monolithic

def apply_defaults(root, defaults):
    def rec(obj, d):
        for k, v in d.items():
            if isinstance(v, dict):
                rec(obj[k], v)
            else:
                obj[k] = v
    rec(root, defaults)
    return root

def _impl(x):
    return torch.topk(x, 2)

lib.impl("moe_forward", _impl, "CUDA")

def route(x):
    cfg = apply_defaults({"a": {"b": {"c": None}}}, {"a": {"b": {"c": 1}}})
    if cfg["a"]["b"]["c"] == 1 and Op.name == "moe" and REGISTRY["moe"] is Op and (
            not Child().monolithic):
        return torch.ops.fw.moe_forward(x)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["torch"]


def test_calling_an_object_runs_its_call_or_forward(tmp_path: Path) -> None:
    """Calling an object runs its class's __call__, and a torch module's forward (what
    nn.Module.__call__ does): a MoE layer's shared experts module called inside the experts
    forward set its output there, and without it an assert on that output failed every way."""
    body = """
import torch.nn as nn

class Shared(nn.Module):
    def forward(self, x):
        return topk_fast(x)

class Scorer:
    def __call__(self, x):
        return x

def route(x):
    return Shared()(Scorer()(x))
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]
