"""torch as the routing code uses it: tensor factories, parameters, the default dtype, the
namespaces that answer questions about the platform rather than make tensors, and any other
torch (or triton) call as an op on tensors that keeps what its inputs came from."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from routescope.analysis.engine.bound import LIBRARY, FakeRegistration, op_attribute
from routescope.analysis.engine.containers import new_tuple
from routescope.analysis.engine.contents import seq_items
from routescope.analysis.engine.nones import opaque_not_none
from routescope.analysis.engine.sinks import producer_of, role_of
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.tensorcalls import (
    PAIR_ALWAYS,
    PAIR_WITH_DIM,
    broadcast,
    torch_pair,
)
from routescope.analysis.engine.tensors import (
    FACTORIES,
    NON_TENSOR_TORCH,
    PARAMETER,
    SAME_DTYPE,
    concatenated,
    made_tensor,
)
from routescope.analysis.engine.values import (
    Const,
    External,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library.isinstance_of import isinstance_of
from routescope.analysis.library.modules import BUFFER, MODULE, module_members, torch_module
from routescope.analysis.library.modules import PARAMETER as PARAMETER_KIND
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase


@models(*NON_TENSOR_TORCH)
def _platform(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    # (the rules' platform facts answer the calls they name before any model runs)
    return one(st, Unknown(f"result of {name}()", kind=UnknownKind.OPAQUE))


# what these calls give is an object, never None: torch.cuda's stream and event classes
# (torch/cuda/streams.py `class Stream`, `class ExternalStream`, `class Event`) and the calls
# that return a Stream (torch/cuda/__init__.py current_stream, default_stream); none of the
# classes defines __bool__ or __len__, so the object is also true
CUDA_OBJECTS = (
    "torch.cuda.Stream",
    "torch.cuda.ExternalStream",
    "torch.cuda.Event",
    "torch.cuda.streams.Stream",
    "torch.cuda.streams.ExternalStream",
    "torch.cuda.streams.Event",
    "torch.cuda.current_stream",
    "torch.cuda.default_stream",
)


@models(*CUDA_OBJECTS)
def _cuda_object(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    return one(st, Unknown(f"result of {name}()", truthy=True, kind=UnknownKind.OPAQUE))


@models("torch.library.Library")
def _library(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """torch.library.Library(namespace, kind): where a framework registers its own ops (their
    Python implementations run when torch.ops.<namespace>.<op> is called)."""
    ns = args[0] if args else kwargs.get("ns")
    return one(st, Instance(None, {"ns": ns or Const(None)}, LIBRARY))


@models("torch.library.register_fake", "torch.library.impl_abstract")
def _register_fake(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """register_fake("ns::op"[, fn]): a decorator that records the function as the op's fake
    implementation (with fn: recorded now, fn returned). None (opaque) when the op is not
    named by a string."""
    op = args[0] if args else kwargs.get("op_name", kwargs.get("qualname"))
    target = op_attribute(op.value) if isinstance(op, Const) and isinstance(op.value, str) else None
    if target is None:
        return None
    registration = FakeRegistration(target, eng.facts.fakes)
    fn = args[1] if len(args) > 1 else kwargs.get("func")
    if fn is not None and not (isinstance(fn, Const) and fn.value is None):
        return one(st, registration.call(st, [fn]))
    return one(st, registration)


BUFFERS = ("torch.nn.Buffer", "torch.nn.parameter.Buffer", "nn.Buffer")


@models(*PARAMETER)
def _parameter(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    data = args[0] if args else kwargs.get("data")
    if not isinstance(data, Tensor):
        return None
    made = Tensor(data.shape, data.dtype, data.producer, data.made_at, data.contiguous, data.role)
    made.nn = PARAMETER_KIND  # a new tensor over the same data, which a module registers
    return one(st, made)


@models(*BUFFERS)
def _buffer(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """torch.nn.Buffer(t) (torch 2.5+): `t`, which a module registers as a buffer, not a
    parameter."""
    data = args[0] if args else kwargs.get("data")
    if not isinstance(data, Tensor):
        return None
    data.nn = BUFFER
    return one(st, data)


@models(*FACTORIES)
def _factory(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    first = args[0] if args else kwargs.get("size")
    sizes = seq_items(st, first) if first is not None else None
    made = made_tensor(name, args, kwargs, eng.made_at(node), sizes)
    made.dtype = made.dtype or eng.default_dtype
    return one(st, made)


@models("torch.get_default_dtype")
def _default_dtype(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    return one(st, External(eng.default_dtype)) if eng.default_dtype else None


# torch functions that give no tensor: bools, numbers, dtypes, a dtype's limits, a generator
NOT_TENSOR_FUNCTIONS = (
    "torch.equal",
    "torch.allclose",
    "torch.is_tensor",
    "torch.is_storage",
    "torch.numel",
    "torch.is_floating_point",
    "torch.is_complex",
    "torch.is_nonzero",
    "torch.get_default_dtype",
    "torch.finfo",
    "torch.iinfo",
    "torch.promote_types",
    "torch.result_type",
    "torch.can_cast",
    "torch.is_grad_enabled",
    "torch.is_inference_mode_enabled",
    "torch.are_deterministic_algorithms_enabled",
    "torch.is_autocast_enabled",
    "torch.get_num_threads",
    "torch.get_num_interop_threads",
    "torch.Generator",
    "torch.Size",
)


@models(*NOT_TENSOR_FUNCTIONS)
def _not_a_tensor(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """What these give, where no model before this one knows it: no tensor, and not None
    (`torch.is_tensor(x)`, which is `isinstance(x, torch.Tensor)`, where that is known)."""
    if name == "torch.is_tensor" and len(args) == 1:
        known = isinstance_of(args[0], External("torch.Tensor"))
        if isinstance(known, Const):
            return one(st, known)
    if name == "torch.Size" and len(args) == 1:
        items = seq_items(st, args[0])
        if items is not None:
            return one(st, new_tuple(items))
    return one(st, opaque_not_none(f"result of {name}()"))


@models("torch.nn.functional.linear")
def _linear(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """F.linear(x, weight, bias): x's leading sizes, then the weight's rows (a gate's logits
    have as many columns as the gate has experts)."""
    got = _tensor_op(eng, st, name, args, kwargs, node)
    x = args[0] if args else kwargs.get("input")
    w = args[1] if len(args) > 1 else kwargs.get("weight")
    out = got[0][1] if got else None
    if (
        isinstance(out, Tensor)
        and isinstance(x, Tensor)
        and isinstance(w, Tensor)
        and x.shape
        and w.shape is not None
        and len(w.shape) == 2
    ):
        out.shape = (*x.shape[:-1], w.shape[0])
        out.dtype = x.dtype
    return got


# ops whose result torch allocates row-major, whatever their inputs' layout (aten's cat and
# stack allocate the output with the default memory format)
_ALLOCATING = frozenset({"cat", "concat", "concatenate", "stack"})


def _row_major(op: str, inputs: list[Value]) -> bool:
    """Whether `torch.<op>(...)` certainly gives a contiguous tensor: a concatenation, or an
    elementwise op (of tensors.py's SAME_DTYPE, as a function) on tensors all known to be
    contiguous (TensorIterator lays the output out as its inputs are)."""
    if op in _ALLOCATING:
        return True
    tensors = [v for v in inputs if isinstance(v, Tensor)]
    return op in SAME_DTYPE and bool(tensors) and all(t.contiguous for t in tensors)


def _elementwise_shape(op: str, args: list[Value]) -> tuple[Value, ...] | None:
    """The shape of an elementwise `torch.<op>(t, ...)` (tensors.py's SAME_DTYPE, as functions):
    the two operands' broadcast for add/sub/mul/div, else its tensor's (softmax along a dim,
    masked_fill with a mask that broadcasts to it); None where not known."""
    if op not in SAME_DTYPE or not args or not isinstance(args[0], Tensor):
        return None
    if op in ("add", "sub", "mul", "div"):
        return broadcast(args[0], args[1]) if len(args) > 1 else None
    return args[0].shape


@models("torch.", "triton")
def _tensor_op(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    """An op on tensors: its result keeps the routing kernel that produced its inputs, or the
    router's scores it was computed from."""
    inputs = [*args, *kwargs.values()]
    op = name.removeprefix("torch.")
    if args and (op in PAIR_WITH_DIM or op in PAIR_ALWAYS):  # torch.max(t, dim=1): a pair
        pair = torch_pair(op, args[0], args[1:], kwargs, st.claims, eng.made_at(node))
        if pair is not None:
            return one(st, pair)
    shape = _elementwise_shape(op, args)
    if op in ("cat", "concat", "concatenate") and args:  # the sizes along dim added
        shape = concatenated(seq_items(st, args[0]) or [],
                             args[1] if len(args) > 1 else kwargs.get("dim"))  # fmt: skip
    made = Tensor(
        shape,
        producer=producer_of(inputs, st.claims),
        made_at=eng.made_at(node),
        role=role_of(inputs),
        contiguous=_row_major(op, inputs),
    )
    if torch_module(name):  # torch.nn.Linear(...): a module the parent registers
        made.nn = f"{MODULE}:{name}"
        made.members = module_members(name, args, kwargs)
    return one(st, made)
