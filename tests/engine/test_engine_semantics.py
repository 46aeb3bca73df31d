"""Python semantics met in a quantized deployment's start-up (the quantization config probe, the
experts backend oracle, the layer-skip check), each in the smallest program that shows it: the
branch must be decided the way Python decides it (cuda_kernel), never forked."""

from __future__ import annotations

from pathlib import Path

import pytest

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.phases.trace import resolve_entry, trace_call
from tests.engine.test_engine_synthetic import SCORES, SINKS, make_tree, run

HEAD = """
import dataclasses
import enum
import math
from typing import Literal, NamedTuple, get_args
import torch
from fastk import topk_fast

"""


def _kinds(tmp_path: Path, body: str) -> list[str | None]:
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES())
    return sorted(str(p.sink.kind if p.sink else None) for p in paths)


CASES = {
    # vLLM 0.33.0 quantization/__init__.py:50 QUANTIZATION_METHODS = list(get_args(Literal[...]))
    "literal_args": """
Methods = Literal["fp8", "awq", "gptq"]
ALL = list(get_args(Methods))

def route(x):
    if ALL == ["fp8", "awq", "gptq"] and "awq" in get_args(Methods):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.33.0 experts/rocm_aiter_moe.py:498-503: a staticmethod handed its class calls
    # super(): super(__class__, <first argument>)
    "super_in_staticmethod": """
class Base:
    @staticmethod
    def supported(cls, n):
        return n > 1, cls.NAME

class Kernel(Base):
    NAME = "k"

    @staticmethod
    def supported(cls, n):
        ok, name = super().supported(cls, n)
        return ok and name == "k", name

def route(x):
    ok, _ = Kernel.supported(Kernel, 4)
    if ok:
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # a class method's super() follows the class it is called on, not the defining class
    "super_in_classmethod": """
class A:
    @classmethod
    def name(cls):
        return "A"

class B(A):
    @classmethod
    def name(cls):
        return "B" + super().name()

class C(B):
    pass

class D(C, A):
    @classmethod
    def name(cls):
        return "D" + super().name()

def route(x):
    if D.name() == "DBA" and C.name() == "BA":
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.33.0 quant_utils.py:684-688: filter() with a lambda, then any()
    "filter_and_map_with_a_lambda": """
IGNORED = ["model.layers.0.mlp.gate", "lm_head", "model.layers.1.mlp.experts"]

def skipped(prefix):
    experts = filter(lambda name: "experts" in name, IGNORED)
    return any(prefix in name for name in experts)

def route(x):
    lengths = list(map(lambda s: len(s), ["ab", "c"]))
    if (not skipped("model.layers.0.mlp.experts") and skipped("model.layers.1.mlp.experts")
            and lengths == [2, 1] and list(filter(None, [0, 3, ""])) == [3]):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.34.0 v1/worker/workspace.py:202-220 (get_simultaneous): the offsets of views into
    # one buffer, running totals of sizes not known; there are as many as sizes, so indexing
    # them by range(len(...)) raises no IndexError
    "accumulate_running_totals": """
import operator
from itertools import accumulate

def route(x):
    n = x.shape[0]
    sizes = [n * 4, 128, n]
    offsets = list(accumulate([0] + sizes[:-1]))
    spans = [x[offsets[i] : offsets[i] + sizes[i]] for i in range(len(sizes))]
    if (len(offsets) == 3 and len(spans) == 3 and list(accumulate([1, 2, 3])) == [1, 3, 6]
            and list(accumulate([1, 2, 3], initial=10)) == [10, 11, 13, 16]
            and list(accumulate([2, 3, 4], operator.mul)) == [2, 6, 24]
            and list(accumulate([1, 5, 2], func=max)) == [1, 5, 5]
            and list(accumulate([])) == [] and list(accumulate((), initial=0)) == [0]):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.33.0 quant_utils.py:110-229: QuantKey(dtype, ScaleDesc(..., GroupShape(...)))
    # compared as tuples of frozen dataclasses holding a NamedTuple subclass
    "records_in_tuples_compare": """
class _Shape(NamedTuple):
    row: int
    col: int

class Shape(_Shape):
    def is_block(self):
        return self.row > 1

@dataclasses.dataclass(frozen=True)
class Scale:
    dtype: torch.dtype
    static: bool
    shape: Shape

@dataclasses.dataclass(frozen=True)
class Key:
    dtype: torch.dtype
    scale: Scale
    scale2: Scale | None = None
    symmetric: bool = True

W128 = Key(torch.float8_e4m3fn, Scale(torch.float32, True, Shape(128, 128)))
A128 = Key(torch.float8_e4m3fn, Scale(torch.float32, False, Shape(1, 128)))
W32 = Key(torch.float8_e4m3fn, Scale(torch.float32, True, Shape(32, 32)))

def route(x):
    w = Key(torch.float8_e4m3fn, Scale(torch.float32, True, Shape(32, 32)))
    if ((w, A128) != (W128, A128) and (w, A128) == (W32, A128) and (W32, A128) in [(W32, A128)]
            and w.scale.shape.is_block() and w.scale.shape == (32, 32)
            and (w, A128) != (None, None) and (None, None) not in [(w, A128)]):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.33.0 quant_utils.py:110-141: ClassVar annotations are no NamedTuple's fields; the
    # class attributes set after the class are read back
    "class_var_is_not_a_field": """
from typing import ClassVar

class _Shape(NamedTuple):
    row: int
    col: int

class Shape(_Shape):
    PER_TENSOR: ClassVar["Shape"]
    PER_TOKEN: ClassVar["Shape"]

Shape.PER_TENSOR = Shape(-1, -1)
Shape.PER_TOKEN = Shape(1, -1)

@dataclasses.dataclass
class Cfg:
    LIMIT: ClassVar[int] = 4
    n: int = 1

def route(x):
    s = Shape(1, -1)
    if (s == Shape.PER_TOKEN and s != Shape.PER_TENSOR and len(s) == 2
            and [f.name for f in dataclasses.fields(Cfg)] == ["n"] and Cfg(2).LIMIT == 4):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.33.0 humming/priority.py:38-44: enum members' names, next() over a generator
    "next_over_a_filtered_generator": """
from enum import Enum

class Backend(Enum):
    TRITON = "triton"
    MARLIN = "marlin"
    HUMMING = "humming"

def route(x):
    kernels = [Backend.TRITON, Backend.MARLIN, Backend.HUMMING]
    names = [(k.name if isinstance(k, Enum) else k.__name__).lower() for k in kernels]
    humming = next((i for i, name in enumerate(names) if "humming" in name), None)
    absent = next((i for i, name in enumerate(names) if "cutlass" in name), None)
    if humming == 2 and absent is None:
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.22.0 config/kernel.py:257: asdict() of a dataclass, nested ones converted too
    "dataclasses_asdict": """
@dataclasses.dataclass
class Inner:
    ops: list = dataclasses.field(default_factory=list)

@dataclasses.dataclass
class Priority:
    rms_norm: list | None = None
    inner: Inner = dataclasses.field(default_factory=Inner)

def route(x):
    d = dataclasses.asdict(Priority(["native"]))
    if (list(d) == ["rms_norm", "inner"] and d["inner"] == {"ops": []}
            and d["rms_norm"] == ["native"]):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.33.0 fp8_utils.py:1177: a dtype among others
    "dtype_in_a_tuple": """
def route(x):
    dt = torch.float32
    if dt not in (torch.float8_e8m0fnu, torch.uint8) and torch.uint8 in (dt, torch.uint8):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.33.0 marlin_utils.py:347: math.lcm
    "math_lcm": """
def route(x):
    import fnmatch
    from fnmatch import fnmatch as match
    if (math.lcm(96, 64) == 192 and math.gcd(128, 96) == 32
            and match("model.layers.3.mlp.gate", "model.layers.*.mlp.gate")
            and not fnmatch.fnmatch("lm_head", "model.*")):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.34.0 router/fused_moe_router.py:92-97: `if not (topk_weights.is_contiguous() and
    # topk_ids.is_contiguous()): raise ValueError`: a bool (a fresh tensor's: true), not a tensor
    "tensor_is_contiguous": """
def route(x):
    fresh = torch.empty(4, 8)
    if fresh.is_contiguous() is True and fresh.float().contiguous().is_contiguous() is True:
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.34.0 third_party/triton_kernels/topk.py:10-13, :42: the router logits are wrapped
    # (`Tensor(x, shape=...)`, whose Storage holds the torch tensor: tensor.py:105) before the
    # _topk_forward launch: a kernel handed an object that holds the scores reads them
    "kernel_handed_a_wrapper": """
class Storage:
    def __init__(self, data):
        self.data = data

class Wrapped:
    def __init__(self, storage):
        self.storage = Storage(storage)

def route(x):
    return topk_fast(Wrapped(x), 4)
""",
    # vLLM 0.34.0 router/fused_topk_bias_router.py:432-434 hands `e_score_correction_bias.data`
    # to can_use_dsv4_topk (router/dsv4_topk.py:28-31: its dtype, shape, is_contiguous()):
    # a tensor's `.data` is that tensor's storage, with its shape and dtype
    "tensor_data": """
def route(x):
    bias = torch.empty(256, dtype=torch.float32).data
    if bias.dtype == torch.float32 and bias.shape == (256,) and bias.is_contiguous():
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.34.0 model_executor/utils.py:130-161 _in_own_storage: `offset % size` and
    # `offset // size` with size = new.element_size(): the dtype's bytes
    "tensor_element_size": """
def route(x):
    if (torch.empty(4, dtype=torch.bfloat16).element_size() == 2
            and torch.empty(2, dtype=torch.float8_e4m3fn).element_size() == 1):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.34.0 utils/torch_utils.py:849-858 aux_stream() gives torch.cuda.Stream(), and
    # fused_moe/runner/shared_experts.py:79 tests it `is not None`: a class's object, never None
    "cuda_stream_object": """
def route(x):
    stream, event = torch.cuda.Stream(), torch.cuda.Event()
    if stream is not None and event is not None and torch.cuda.current_stream() is not None:
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.33.0 fused_moe/activation.py: a property of an enum member
    "enum_member_property": """
class Act(enum.Enum):
    SILU = "silu"
    SILU_NO_MUL = "silu_no_mul"

    @property
    def is_gated(self) -> bool:
        return not self.value.endswith("_no_mul")

def route(x):
    supported = frozenset({Act.SILU, Act.SILU_NO_MUL})
    if (Act.SILU.is_gated and not Act.SILU_NO_MUL.is_gated and Act("silu").is_gated == True
            and Act.SILU in supported and len(supported) == 2):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.15.1 modular_kernel.py:862-870 _chunk_info: `CHUNK_SIZE = max(1, M if ... else
    # min(M, envs.VLLM_FUSED_MOE_CHUNK_SIZE))`, then utils cdiv(M, CHUNK_SIZE) = -(M // -CHUNK):
    # a divisor known to be at least 1 (and its negation) is not zero
    "bounded_divisor": """
def cdiv(a, b):
    return -(a // -b)

def route(x):
    m = x.shape[0] + x.shape[1]
    chunk = max(1, min(m, 16384))
    n = cdiv(m, chunk) + m % max(chunk, 2) + m // min(4, max(chunk, 3))
    return topk_fast(x)
""",
    # vLLM 0.15.1 layer.py:1785-1786: the experts layer runs the gate itself (a linear layer:
    # F.linear), and the router reads the number of experts off its logits
    # (grouped_topk_router.py:298-306 `router_logits.shape[-1]`)
    "linear_shape": """
def route(x):
    w = torch.nn.Parameter(torch.empty(64, 16))
    logits = torch.nn.functional.linear(torch.empty(4, 16), w, None)
    if logits.shape[-1] == 64 and logits.shape[0] == 4 and logits.shape[-1] % 8 == 0:
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # sglang 0.5.23 modelopt_quant.py:1646 `first_group = next(iter(config_groups.values()), {})`:
    # iter() over what the path holds, next() takes the first item (and consumes it), else the
    # default
    "iter_next": """
def route(x):
    groups = {"g0": {"weights": {"group_size": 16}}, "g1": {}}
    first = next(iter(groups.values()), {})
    it = iter(groups)
    a, b = next(it), next(it, "none")
    rest = next(it, "none")
    empty = next(iter([]), {"weights": {}})
    nums = iter([1, 2])
    taken = [next(nums), next(nums), next(nums, None)]
    if (first["weights"]["group_size"] == 16 and (a, b, rest) == ("g0", "g1", "none")
            and empty == {"weights": {}} and next((k for k in groups if k != "g0"), None) == "g1"
            and taken == [1, 2, None] and iter([])):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # sglang 0.5.23 checkpoint_quantization.py:92 `deepcopy(dict(config))` of a checkpoint's
    # quantization config (config_groups.group_0.weights.group_size: four dicts deep); what the
    # original shares, the copy shares, and the original is not changed through it
    "deepcopy_nested_shared": """
import copy

def route(x):
    shared = {"k": 0}
    cfg = {"groups": {"g0": {"weights": {"group_size": 16, "more": {"deep": [1, {"v": 2}]}}}},
           "a": shared, "b": shared}
    c = copy.deepcopy(dict(cfg))
    c["a"]["k"] = 1
    w = c["groups"]["g0"]["weights"]
    node = {"name": "root"}
    node["kid"] = {"parent": node}
    n = copy.deepcopy(node)
    if (w["group_size"] == 16 and w["more"]["deep"][1]["v"] == 2 and c["b"]["k"] == 1
            and shared["k"] == 0 and c["a"] is c["b"] and c["a"] is not shared
            and n["kid"]["parent"] is n and n is not node):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # sglang 0.5.23 configs/model_config.py:2294-2297 `config_dtype = getattr(config, "dtype")`,
    # `isinstance(config_dtype, str)`: a torch dtype is a torch.dtype, no str; :232-233
    # `callable(getattr(config, "get_text_config", None))` of a method the engine carries out
    "dtype_isinstance_and_callable": """
import contextvars

VAR = contextvars.ContextVar("v", default=0)

def route(x):
    d = torch.bfloat16
    if (not isinstance(d, str) and isinstance(d, torch.dtype) and not isinstance(d, (int, dict))
            and callable(VAR.get) and callable(VAR.set)):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.33.0 parameter.py:32-39 / sglang 0.5.23 quantization/utils.py:581: a framework
    # subclass of Parameter is the tensor it is made from (`__new__(cls, data)`): `scale.ndim`
    "parameter_subclass_tensor": """
class Param(torch.nn.Parameter):
    def __new__(cls, data, **kwargs):
        return super().__new__(cls, data=data, requires_grad=False)

    def __init__(self, data, weight_loader=None):
        self._weight_loader = weight_loader

def route(x):
    p = Param(data=torch.empty(4, 8, dtype=torch.float32), weight_loader=print)
    q = Param(torch.empty(2, 3, 5))
    if (p.ndim == 2 and p.shape[0] == 4 and q.data.shape[2] == 5 and q.ndim == 3
            and p.dtype == torch.float32 and p._weight_loader is print):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # sglang 0.5.23 arg_groups/fields/__init__.py:46 `n not in set(POSITIONAL_FIELD_ORDER)`
    # per field: a new set each time (its contents made once), never the same object
    "set_of_a_constant_each_call": """
ORDER = ("a", "b", "c", "b")

def route(x):
    first, second = set(ORDER), set(ORDER)
    second.add("d")
    second.discard("a")
    rest = [n for n in ("a", "d", "e") if n not in set(ORDER)]
    if (first == {"a", "b", "c"} and second == {"b", "c", "d"} and first is not second
            and rest == ["d", "e"] and len(set(ORDER)) == 3 and set("aba") == {"a", "b"}):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.10.1 modelopt.py:1211-1220: `layer.w13_input_scale.max(dim=1).values.to(float32)`
    # then `1 / w13_input_scale`: a reduction along a dimension is torch's named pair (values,
    # indices), read by name, index or unpacking; `t.max()` and `t.max(other)` are one tensor
    "reduction_named_pair": """
def route(x):
    s = torch.empty(4, 2, dtype=torch.float32)
    scale = s.max(dim=1).values.to(torch.float32)
    inv = 1 / scale
    v, i = torch.min(s, 0)
    kept = s.max(1, keepdim=True)[0]
    order = torch.sort(s, dim=-1)
    if (scale.shape == (4,) and isinstance(inv, torch.Tensor) and v.shape == (2,)
            and i.dtype == torch.int64 and kept.shape == (4, 1) and order.indices.shape == (4, 2)
            and isinstance(s.max(), torch.Tensor) and isinstance(torch.max(s, s), torch.Tensor)
            and s.aminmax().max.dtype == torch.float32):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.10.1 scalar_type.py:142-166 ScalarType.id: a nested function writes the enclosing
    # function's variables through `nonlocal` (each type's id; from_id :305-309 reads the map
    # back). The writes were lost: every id was 0, and from_id(float4_e2m1f.id) gave the last
    # type registered (uint8b128), so fused_marlin_moe.py:78 took NVFP4 for 8 bits
    "nonlocal_writes_the_enclosing_frame": """
IDS = {}

class Kind:
    def __init__(self, bits, bias):
        self.bits, self.bias = bits, bias

    def ident(self):
        val = 0
        offset = 0

        def advance(member, width):
            nonlocal val
            nonlocal offset
            val = val | (int(member) & ((1 << width) - 1)) << offset
            offset = offset + width

        advance(self.bits, 8)
        advance(self.bias, 32)
        IDS[val] = self
        return val

def outer():
    total = 1

    def middle():
        def inner():
            nonlocal total
            total += 10
        inner()
        inner()
        return total

    got = middle()
    return got, total

FP4, U8 = Kind(4, 0), Kind(8, 128)
FP4_ID, U8_ID = FP4.ident(), U8.ident()

def route(x):
    if (FP4_ID == 4 and U8_ID == 8 | 128 << 8 and IDS[FP4_ID] is FP4
            and outer() == (21, 21)):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # SGLang 0.5.15 / vLLM quantization/base_config.py method_has_implemented_embedding: whether
    # a quant method overrides the base's `embedding`, compared by identity through
    # inspect.getattr_static (no descriptor run); the default where no class of the MRO has it
    "getattr_static_reads_the_class_dictionaries": """
import inspect
from abc import ABC

class Method(ABC):
    def embedding(self, layer):
        raise NotImplementedError

    def apply(self, layer):
        pass

class Plain(Method):
    def apply(self, layer):
        pass

class WithEmbedding(Plain):
    def embedding(self, layer):
        return layer

def implements(cls):
    base = inspect.getattr_static(Method, "embedding", None)
    own = inspect.getattr_static(cls, "embedding", None)
    return own is not None and own is not base

def route(x):
    if (not implements(Plain) and implements(WithEmbedding)
            and inspect.getattr_static(Plain, "missing", 7) == 7):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.29.0 config/utils.py:83-127: replace() keeps the instance's __dict__ entries whose
    # Field (rebuilt with dataclasses.field(..., init=...)) is an __init__ parameter, so the
    # copy keeps the quantization config already built; model_loader/utils.py:239-256 memoizes
    # the model class by hash() of a tuple of the config's values
    "dataclass_field_objects_and_hash": """
from dataclasses import dataclass, field, fields, MISSING

def get_field(cls, name):
    f = next(f for f in fields(cls) if f.name == name)
    return field(default=f.default, default_factory=f.default_factory, init=f.init)

def replace(inst, **kwargs):
    cls = type(inst)
    kept = {k: v for k, v in inst.__dict__.items() if get_field(cls, k).init}
    kept.update(kwargs)
    return cls(**kept)

@dataclass
class Config:
    model: str = "m"
    quant: object = None
    hidden: int = field(default=3, init=False)
    extra: list = field(default_factory=list)

    def __post_init__(self):
        if self.quant is None:
            self.quant = "built for " + self.model

BY_HASH = {}

def arch(model, archs):
    key = hash((model, "none", tuple(archs or [])))
    if key in BY_HASH:
        return BY_HASH[key]
    BY_HASH[key] = (model, len(archs))
    return BY_HASH[key]

def route(x):
    copy = replace(Config("outer"), model="text")
    if (copy.quant == "built for outer" and copy.model == "text"
            and not get_field(Config, "hidden").init
            and get_field(Config, "extra").default is MISSING
            and arch("m", ["A"]) == arch("m", ["A"]) == ("m", 1)
            and hash(1) == hash(1.0)):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.29.0 models/mimo_v2.py:158-176: the gate is a torch.nn.Linear, and the block
    # hangs the correction bias on it (`self.gate.e_score_correction_bias = nn.Parameter(..)`),
    # then hands it to the experts' factory, which tests `is not None` (router_factory.py:164):
    # what code sets on a torch.nn module is its attribute, and torch's own (weight) are there
    "torch_module_attributes": """
from torch import nn

def route(x):
    gate = nn.Linear(16, 8, bias=False)
    gate.e_score_correction_bias = nn.Parameter(torch.empty(8))
    bias = gate.e_score_correction_bias
    if (bias is not None and bias.shape == (8,) and gate.weight.shape == (8, 16)
            and hasattr(gate, "e_score_correction_bias")):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # SGLang 0.5.15 modelopt_quant.py:1366-1373 HybridFp8NvFp4Config.__init__ copies the FP8
    # config's attributes with `self.__dict__.update(fp8_config.__dict__)` (no super().__init__):
    # what is written into an object's __dict__ is its attributes
    "instance_dict_writes_are_attributes": """
class Fp8:
    def __init__(self, mx):
        self.use_mx = mx
        self.block = [128, 128]

    def name(self):
        return "mxfp8" if self.use_mx else "fp8"

class Hybrid(Fp8):
    def __init__(self, inner):
        self.__dict__.update(inner.__dict__)
        held = self.__dict__
        self.block = [64, 64]  # (set after the dict was read: a later write keeps it)
        held["experts"] = "nvfp4"

def route(x):
    h = Hybrid(Fp8(False))
    if h.name() == "fp8" and h.block == [64, 64] and h.experts == "nvfp4":
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # SGLang 0.5.21 layer_boundary/boundary.py:415 `gathered == {TokenAxis.ATTN_CP}`: a set
    # computed from constants against a set display of enum members, by members
    "sets_of_enum_members_compare_by_members": """
from enum import Enum, IntEnum, auto

class Axis(Enum):
    DP = auto()
    CP = auto()

class N(IntEnum):
    A = 1

def route(x):
    none, cp = frozenset(), frozenset([Axis.CP])
    if (not (none == {Axis.CP}) and cp == {Axis.CP} and {Axis.CP} != {Axis.DP}
            and {N.A} == {1} and {Axis.DP} != {1} and set() == frozenset()):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # SGLang 0.5.21 layer_boundary/factories.py:259-260 keeps a connection's edges as
    # `MappingProxyType(dict(...))`; vLLM 0.34.0 quant_utils.py:637 defaults
    # `fused_mapping=MappingProxyType({})`: a live read-only view of the dict
    "mapping_proxy_is_a_live_read_only_view": """
import collections.abc
import types
from types import MappingProxyType

REG = {}
VIEW = MappingProxyType(REG)

def register(k, v):
    REG[k] = v

def route(x):
    register("a", 1)
    try:
        VIEW["z"] = 3
        refused = False
    except TypeError:
        refused = True
    if (VIEW["a"] == 1 and "z" not in REG and refused and "x" not in MappingProxyType({})
            and len(VIEW) == 1 and list(VIEW.items()) == [("a", 1)]
            and not isinstance(VIEW, dict) and isinstance(VIEW, collections.abc.Mapping)
            and type(VIEW) is types.MappingProxyType and not hasattr(VIEW, "update")):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # SGLang 0.5.21 arg_groups/boundary_reduction.py:41-42 `get_text = getattr(config,
    # "get_text_config", None)` then `if get_text is not None`: a bound method is never None
    "a_bound_method_is_not_none": """
def route(x):
    items = []
    append, upper = items.append, "x".upper
    if append is not None and not (upper is None):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.34.0 transformers_utils/model_arch_config_convertor.py:420-427 builds each layer's
    # architecture in a comprehension, and a call in each item forks on whether multimodal
    # inputs are on (:783-789): each way goes on with the items after it, as a loop would
    # (before, the whole list was unknown)
    "a_comprehension_whose_items_fork_goes_on_each_way": """
import os

def layer(i):
    if os.environ.get("FW_MM"):
        return i
    return i

def route(x):
    sizes = [layer(i) for i in range(3)]
    if sizes == [0, 1, 2] and {i: layer(i) for i in range(2)} == {0: 0, 1: 1}:
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.34.0 fused_moe/expert_map_manager.py:436-438: `device = torch.get_default_device()`
    # `device if device.type != "meta" else torch.device("cpu")`, read inside the loader's
    # `with target_device:` (model_loader/base_loader.py:85-87); torch.device parses
    # "type:index" and compares by both
    "torch_device": """
def place():
    device = torch.get_default_device()
    device = device if device.type != "meta" else torch.device("cpu")
    return device

def route(x):
    with torch.device("cuda:1"):
        inner = place()
    same = inner == torch.device("cuda", 1) and inner != torch.device("cuda")
    if same and isinstance(inner, torch.device) and inner.index == 1 and inner.type == "cuda":
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.34.0 fused_moe/router/gate_linear.py:87-92, :115-116: `can_use_specialized_kernels
    # = is_cuda() and (is_hopper or is_blackwell) and ...` (False off SM90/SM100), then
    # `can_use_specialized_kernels &= self.is_unquantized`, an isinstance() of the layer's
    # quant method: False & a bool is False, whatever the bool
    "bool_and_unknown_bool": """
class Unseen:
    pass

def route(x):
    method = torch.cuda.get_device_name()
    allowed = False
    allowed &= isinstance(method, Unseen)
    either = True
    either |= not method
    if not allowed and either:
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.34.0 router/fused_moe_router.py:92-96 raises ValueError unless the routing
    # tensors are contiguous; Llama-4's custom routing (llama4.py:75-85, models/utils.py:1280-1282)
    # returns `torch.sigmoid(scores.float())` of a `torch.max(..., keepdim=True)` and its
    # indices `.to(torch.int32)`, sparsemixer a `torch.concat` (phimoe.py:220-221): torch
    # allocates each result row-major
    "fresh_results_are_contiguous": """
def route(x):
    best, first = torch.max(x, dim=-1, keepdim=True)
    weights = torch.sigmoid(best.float())
    ids = first.to(torch.int32)
    both = torch.concat((ids, ids), dim=-1)
    if weights.is_contiguous() and ids.is_contiguous() and both.is_contiguous():
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.34.0 prepare_finalize/no_dp_ep.py:74-80 `a1 = a1 * topk_weights.to(a1.dtype)`
    # (Llama-4 applies the router weight on the input), then modular_kernel.py:910 `a1.dim()
    # == 2` and `M = a1.size(0)`: an elementwise op broadcasts its operands' shapes
    "broadcast_shapes": """
def route(x):
    a = torch.empty(4, 8)
    w = torch.empty(4, 1)
    y = a * w
    z = 2.0 * y
    if y.dim() == 2 and y.size(0) == 4 and y.size(1) == 8 and z.size(1) == 8:
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # no_dp_ep.py:80 again: the activations' rows and the router weights' rows are the tokens,
    # made by two computations routescope does not tell equal; wherever `*` does not raise
    # they are equal (or one is 1), so the product has the larger, at least 1 here, and
    # `M_full == 0` (modular_kernel.py:1410) is false
    "broadcast_unknown_dims": """
import os

def route(x):
    n = max(1, int(os.environ.get("FW_TOKENS", "1")))
    m = max(1, int(os.environ.get("FW_ROWS", "1")))
    a = torch.empty(n, 8) * torch.empty(m, 1)
    b = torch.empty(4, 8) + torch.empty(n, 8)
    if a.dim() == 2 and a.size(1) == 8 and a.size(0) != 0 and b.size(0) == 4:
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # vLLM 0.19.1 fused_moe/utils.py:269-271: an NVFP4 layer's quant_dtype is the string
    # "nvfp4", compared with fp8's and int8's torch dtypes: a dtype equals only a dtype
    "a_dtype_equals_only_a_dtype": """
def quantize(quant_dtype):
    if quant_dtype == torch.float8_e4m3fn:
        return "fp8"
    elif quant_dtype == torch.int8:
        return "int8"
    elif quant_dtype == "nvfp4":
        return "nvfp4"
    return "other"

def route(x):
    kinds = [quantize(q) for q in ("nvfp4", 8, None, 1.5, torch.int8, torch.float8_e4m3fn)]
    same = torch.int8 != torch.float8_e4m3fn and torch.bfloat16 == torch.bfloat16
    if kinds == ["nvfp4", "other", "other", "other", "int8", "fp8"] and same:
        return topk_fast(x)
    return torch.topk(x, 2)
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_decided_as_python_decides(tmp_path: Path, name: str) -> None:
    assert _kinds(tmp_path, CASES[name]) == ["cuda_kernel"]


def test_a_budget_overrun_ends_the_way_it_happened_on(tmp_path: Path) -> None:
    """A way that routed and then ran long (an experts forward) ends where the budget ran out,
    keeping the kernel it reached; before, the function's every way was replaced by the state
    it was entered with, and the kernel was lost."""
    from routescope.analysis.engine.budget import Budget

    body = """
import os

def experts(ids):
    squares = [i * i for i in range(2_000)]
    return squares

def route(x):
    if os.environ.get("FW_FAST"):
        ids = topk_fast(x)
    else:
        ids = topk_fast(x)
    out = experts(ids)
    return out
"""
    budget = Budget()
    budget.push(3_000, "over budget")
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES(),
                budget=budget)  # fmt: skip
    assert paths and all(p.stopped == "over budget" for p in paths)
    assert all(any(k.kind == "cuda_kernel" for k in p.kernels) for p in paths)


def test_a_way_that_routed_does_not_spend_the_budget_of_ways_still_to_route(
    tmp_path: Path,
) -> None:
    """vLLM 0.15.1's experts layer forks before its router (a shared-experts stream the facts
    do not decide) and runs long modular experts after it: the first way's experts spent the
    whole decode budget and the second way stopped before its router. Past their kernel that
    routes, the ways share a part of the budget; a way still to route keeps the rest."""
    from routescope.analysis.engine.budget import Budget

    body = """
import os

def experts(ids):
    squares = [i * i for i in range(2_000)]
    return squares

def layer(x):
    ids = topk_fast(x)
    return experts(ids)

def route(x):
    if os.environ.get("FW_STREAM"):
        out = layer(x)
    else:
        out = layer(x)
    return out
"""
    budget = Budget()
    budget.push(6_000, "over budget")
    budget.routed_steps = 1_000
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES(),
                budget=budget)  # fmt: skip
    assert len(paths) == 2
    assert all(any(k.kind == "cuda_kernel" for k in p.kernels) for p in paths)
    assert all("outgrew their share" in p.stopped for p in paths)


def test_a_kernel_handed_experts_torch_code_chose_does_not_route_that_code_does(
    tmp_path: Path,
) -> None:
    """Phi-3.5-MoE's sparsemixer (vLLM 0.33.0 phimoe.py:177-240) takes its top 2 with two
    `scores.max(dim=-1)` and hands the indices and weights to the experts kernel
    (flashinfer's cutlass_fused_moe), which routes nothing: it is not the routing kernel, and
    no kernel here routes: sparsemixer's torch code does. A kernel handed the scores
    themselves still routes, and so does one handed the group maxima a grouped router takes
    before its top-k (values, not indices)."""
    body = """
def route(x):
    best, first = x.max(dim=-1, keepdim=True)
    masked = x.masked_fill(first == 0, float("-inf"))
    second_best, second = masked.max(dim=-1, keepdim=True)
    ids = torch.cat((first, second), dim=-1)
    weights = torch.cat((best, second_best), dim=-1)
    return topk_fast(ids, weights)

def route_scores(x):
    return topk_fast(x, 2)

def route_groups(x):
    groups = x.view(4, 8, -1).max(dim=-1).values
    return topk_fast(groups, 2)
"""
    tree = make_tree(tmp_path, {"route.py": HEAD + body})
    (chose,) = run(tree, "fw.route:route", SCORES())
    assert chose.sink is None
    for entry in ("route_scores", "route_groups"):
        (routed,) = run(tree, f"fw.route:{entry}", SCORES())
        assert routed.sink is not None and routed.sink.kind == "cuda_kernel", entry
    # In a decode trace by kernel (a layer that routes and runs its experts: vLLM's), the
    # experts were chosen where the torch code made the ids the kernel is handed: that is the
    # routing (the line of `ids = torch.cat(...)`), and the kernel is a launch on the path.
    engine = Engine(tree, Facts(sinks=SINKS))
    engine.tracing = True
    (decoded,) = trace_call(engine, resolve_entry(engine, "fw.route:route"), [SCORES()], {},
                            by_kernel=True)  # fmt: skip
    sink = decoded.sink
    assert sink is not None and (sink.kind, sink.rule, sink.name) == ("torch", "torch-ops",
                                                                      "fw.route:route")  # fmt: skip
    assert sink.line == HEAD.count("\n") + 6 and not decoded.stopped
    assert [k.name for k in decoded.launches] == ["fastk.topk_fast"]
    for entry in ("route_scores", "route_groups"):  # a kernel handed scores still routes
        engine = Engine(tree, Facts(sinks=SINKS))
        engine.tracing = True
        (routed,) = trace_call(engine, resolve_entry(engine, f"fw.route:{entry}"), [SCORES()],
                               {}, by_kernel=True)  # fmt: skip
        assert routed.sink is not None and routed.sink.kind == "cuda_kernel", entry


def test_the_default_device_outside_a_with_is_not_told(tmp_path: Path) -> None:
    """Outside `with device:` (and where the rules did not say what the loader builds the
    model on) the default device is torch's process-wide setting, which the code may have
    changed anywhere: its type is not decided, and both ways are shown."""
    body = """
def route(x):
    if torch.get_default_device().type == "cuda":
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "torch"]


def test_a_view_is_not_known_to_be_contiguous(tmp_path: Path) -> None:
    """A transpose is a view of its input with the strides swapped: not contiguous, and an
    elementwise op keeps that layout; neither is told (both ways)."""
    body = """
def route(x):
    best, first = torch.max(x, dim=-1, keepdim=True)
    flipped = torch.sigmoid(torch.transpose(best, 0, 1))
    if flipped.is_contiguous():
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "torch"]


def test_shapes_that_do_not_broadcast_are_not_told(tmp_path: Path) -> None:
    """torch refuses to broadcast 4 against 3 (the op raises); a dimension neither known to
    match nor 1 gives no shape, and the dimensions of a tensor of unknown shape are an int,
    not known: both ways."""
    body = """
def route(x):
    y = torch.empty(4, 8) * torch.empty(3, 8)
    if y.dim() == 2:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "torch"]


@pytest.mark.parametrize(
    "made",
    [
        "torch.empty((4, *shape))",  # vLLM 0.29.0 marlin_utils_fp4.py:323-327
        "torch.empty([4, *shape])",
        "torch.empty(4, *shape)",
    ],
)
def test_a_size_with_a_starred_part_of_unknown_length_has_no_known_rank(
    tmp_path: Path, made: str
) -> None:
    """`torch.empty((num_experts, *marlin_qweight.shape))` with the repacked weight's shape
    unknown: the starred part may be any number of sizes, so the tensor's rank is not known
    (it was read as one size: a 2-D tensor, and vLLM 0.29.0's Marlin experts asserting
    `w1.dim() == 3` failed on every way). Python decides neither way: both are shown. With the
    shape known, the rank is."""
    body = f"""
def route(x):
    shape = topk_fast(x).shape
    w = {made}
    if w.dim() == 3:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "torch"]
    known = body.replace("topk_fast(x).shape", "(8, 16)")
    assert _kinds(tmp_path / "known", known) == ["cuda_kernel"]


def test_a_private_name_torch_module_does_not_define_is_absent(tmp_path: Path) -> None:
    """vLLM 0.15.1 fp8.py:860: `getattr(layer, "_already_called_process_weights_after_loading",
    False)` on the experts layer (an nn.Module through CustomOp). nn.Module's private
    attributes are a known set (its __init__'s bookkeeping and its private methods): any other
    private name not among the object's fields is absent, so getattr gives the default, as
    Python does (it was unknown, and a way skipped building the experts' kernel). One of
    nn.Module's own (`_forward_hooks`) is still not told."""
    body = """
class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.empty(4, 4)

def route(x):
    layer = Layer()
    if getattr(layer, "_already_called_process_weights_after_loading", False):
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]
    own = body.replace('"_already_called_process_weights_after_loading"', '"_forward_hooks"')
    assert _kinds(tmp_path / "own", own) == ["cuda_kernel", "torch"]


def test_the_nn_module_attribute_lists_are_torch_s() -> None:
    """library/nn_module.py writes torch.nn.Module's attributes down (the engine never imports
    torch): its public names and its private bookkeeping, which decide that any other private
    name on a module is a field or absent. They are what the installed torch (CI pins 2.13) has,
    dir() and vars() of a Module, no more and no less."""
    torch = pytest.importorskip("torch")
    from routescope.analysis.library.nn_module import MODULE_ATTRS, MODULE_PRIVATE

    module = torch.nn.Module()
    names = set(dir(module)) | set(vars(module))
    assert {n for n in names if not n.startswith("_")} == MODULE_ATTRS
    assert {n for n in names if n.startswith("_") and not n.startswith("__")} == MODULE_PRIVATE


@pytest.mark.parametrize(
    "method",
    ["max().item()", "tolist()", "numel()", "data_ptr()", "is_floating_point()", "stride()",
     "equal(torch.empty(4))", "untyped_storage()", "size(int(os.environ['D']))"],
)  # fmt: skip
def test_a_tensor_method_that_gives_no_tensor_is_no_tensor(tmp_path: Path, method: str) -> None:
    """`t.item()`, `t.numel()`, `t.equal(u)`, ... give Python numbers, bools, tuples, storages:
    read as tensors (the default of a tensor method), `isinstance(v, torch.Tensor)` was decided
    true, the way Python never takes."""
    is_tensor = f"""
import os

def route(x):
    v = torch.empty(4).{method}
    if isinstance(v, torch.Tensor):
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert "cuda_kernel" in _kinds(tmp_path, is_tensor)


@pytest.mark.parametrize(
    "call",
    ["torch.equal(torch.empty(4), torch.empty(4))", "torch.allclose(x, x)", "torch.numel(x)",
     "torch.finfo(torch.float16)", "torch.get_default_dtype()", "torch.is_grad_enabled()",
     "torch.promote_types(torch.float16, torch.float32)", "torch.Generator()"],
)  # fmt: skip
def test_a_torch_function_that_gives_no_tensor_is_no_tensor(tmp_path: Path, call: str) -> None:
    body = f"""
def route(x):
    v = {call}
    if isinstance(v, torch.Tensor) or v is None:
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert "cuda_kernel" in _kinds(tmp_path, body)


def test_torch_is_tensor_and_size_are_known(tmp_path: Path) -> None:
    body = """
def route(x):
    shape = torch.Size([2, 8])
    w = torch.nn.Parameter(torch.empty(2))
    known = torch.is_tensor(w) and not torch.is_tensor(torch.nn.Linear(2, 2))
    if torch.is_tensor(x) and not torch.is_tensor(3) and shape[1] == 8 and len(shape) == 2:
        if not known:
            return torch.topk(x, 2)
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_a_tensors_size_is_its_shape(tmp_path: Path) -> None:
    body = """
def route(x):
    t = torch.empty(4, 8)
    a, b = t.size()
    if t.size(0) == 4 and t.size(-1) == 8 and (a, b) == (4, 8) and len(t.size()) == 2:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_a_tensors_item_is_a_number_not_a_tensor_nor_none(tmp_path: Path) -> None:
    """`t.item()` and `t.tolist()` give Python numbers (lists of them), never None."""
    never_none = """
def route(x):
    v = torch.empty(4).max().item()
    rows = torch.empty(4).tolist()
    if v is None or rows is None:
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path / "b", never_none) == ["cuda_kernel"]
