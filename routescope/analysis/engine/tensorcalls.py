"""Calls of a tensor's methods, and torch's reductions that return two tensors.

torch returns a named pair (torch.return_types) from a reduction along a dimension and from a
sort: `t.max(dim=1)` is (values, indices), `t.max()` one tensor, `t.max(other)` one tensor
elementwise. Code reads the pair by name (`.values`, `.indices`), by index or by unpacking; taken
for one tensor, `.values` read as the tensor's own method (sparse `Tensor.values`) and anything
computed from it was unknown: a quantized experts layer's weight conversion that inverts
`scale.max(dim=1).values` could divide by zero there, and every way through it raised."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from routescope.analysis.engine.containers import TupleVal, new_tuple
from routescope.analysis.engine.contents import FIELD, seq_items
from routescope.analysis.engine.intervals import bounded, low_of
from routescope.analysis.engine.nones import opaque_not_none
from routescope.analysis.engine.sinks import producer_of, role_of
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.tensors import (
    METHOD_DTYPES,
    SAME_DTYPE,
    SAME_SHAPE,
    TensorMethod,
    known_result,
    pieces,
    reshaped,
    split_sizes,
    torch_dtype_name,
)
from routescope.analysis.engine.values import (
    AtLeast,
    ClassVal,
    Const,
    External,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)

# tensor methods that give no tensor: Python numbers and bools (item, numel, equal), lists of
# them (tolist), tuples (a size, strides), a storage, an array; `size(i)` not known is an int
# (and type() with no argument, a string). Not element_size() of a dtype not known: it is 1 to
# 16, and code divides by what it divides (vLLM 0.33.0 trtllm_bf16_moe.py:39-40, `block_k = 128
# // weight.element_size()` then `cols // block_k`): an unknown int, which may be 0 as far as the
# engine bounds it (from below only), would raise a ZeroDivisionError no dtype gives; the tensor
# it falls through to divides without raising (its own unsoundness: it passes as a tensor)
NOT_TENSORS = frozenset(
    {
        "item", "tolist", "numel", "nelement", "data_ptr", "get_device",
        "storage_offset", "stride", "size", "is_floating_point", "is_complex", "is_signed",
        "is_nonzero", "is_pinned", "is_shared", "is_inference", "equal", "allclose",
        "untyped_storage", "storage", "dim_order", "has_names", "is_set_to", "__len__", "numpy",
    }
)  # fmt: skip

# a pair when given a dimension (else one tensor): torch.max(t, dim), t.min(dim=0), ...
PAIR_WITH_DIM = frozenset({"max", "min", "median", "nanmedian"})
# always a pair, and its fields: (values, indices) unless said
PAIR_ALWAYS = {
    "mode": ("values", "indices"),
    "kthvalue": ("values", "indices"),
    "sort": ("values", "indices"),
    "cummax": ("values", "indices"),
    "cummin": ("values", "indices"),
    "aminmax": ("min", "max"),
}
# ops that reduce along their dimension (the others keep the input's shape)
_REDUCING = PAIR_WITH_DIM | {"mode", "kthvalue"}
_CLASSES: dict[tuple[str, tuple[str, str]], ClassVal] = {}


def return_type(op: str, names: tuple[str, str]) -> ClassVal:
    """torch.return_types.<op>: a NamedTuple of two fields (one class per op, per process)."""
    key = (op, names)
    cls = _CLASSES.get(key)
    if cls is None:
        attrs: dict[str, Value] = {f"{FIELD}{n}": Const(n) for n in names}
        cls = ClassVal(f"torch.return_types:{op}", None, None, (External("typing.NamedTuple"),),
                       attrs)  # fmt: skip
        _CLASSES[key] = cls
    return cls


def torch_pair(
    op: str,
    tensor: Value,
    rest: list[Value],
    kwargs: dict[str, Value],
    claims: dict[int, Any],
    made: Any,
) -> Value | None:
    """What `op(tensor, *rest, **kwargs)` returns where it is a named pair (or may be one:
    then Unknown); None where it is one tensor (or `op` is not one of these)."""
    names = PAIR_ALWAYS.get(op)
    dim: Value | None = kwargs.get("dim")
    if names is None:
        if op not in PAIR_WITH_DIM:
            return None
        first = rest[0] if rest else None
        if dim is None and first is not None and not isinstance(first, Tensor):
            dim = first
        if dim is None:
            return None  # t.max() or t.max(other): one tensor
        if not (isinstance(dim, Const) and isinstance(dim.value, int)):
            why = f"{op}() of an argument not known to be a dimension or a tensor"
            return Unknown(why, kind=UnknownKind.OPAQUE)
        names = ("values", "indices")
    inputs = [tensor, *rest, *kwargs.values()]
    shape = _shape(op, tensor, dim, kwargs.get("keepdim"))
    dtype = tensor.dtype if isinstance(tensor, Tensor) else None
    producer, role = producer_of(inputs, claims), role_of(inputs)
    second = "torch.int64" if names[1] == "indices" else dtype
    # the indices torch selects from the scores, where no kernel has routed: experts chosen
    chosen = "ids" if names[1] == "indices" and role == "scores" and producer is None else role
    fields: dict[str, Value] = {  # (each a tensor torch allocates for the result: row-major)
        names[0]: Tensor(shape, dtype, producer=producer, made_at=made, role=role, contiguous=True),
        names[1]: Tensor(
            shape, second, producer=producer, made_at=made, role=chosen, contiguous=True
        ),
    }
    return Instance(return_type(op, names), fields, f"torch.return_types.{op}")


def _shape(op: str, t: Value, dim: Value | None, keepdim: Value | None) -> tuple[Value, ...] | None:
    if not isinstance(t, Tensor) or t.shape is None:
        return None
    if op not in _REDUCING:
        return t.shape
    if op == "aminmax" or not (isinstance(dim, Const) and isinstance(dim.value, int)):
        return None
    n = len(t.shape)
    if not -n <= dim.value < n:
        return None
    i = dim.value % n
    if keepdim is None or (isinstance(keepdim, Const) and keepdim.value is False):
        return (*t.shape[:i], *t.shape[i + 1 :])
    if isinstance(keepdim, Const) and keepdim.value is True:
        return (*t.shape[:i], Const(1), *t.shape[i + 1 :])
    return None


def tensor_method(
    st: PathState,
    fn: TensorMethod,
    args: list[Value],
    kwargs: dict[str, Value],
    made_at: Callable[[], Any],
) -> Value:
    """What calling a tensor's method gives: its layout where asked (dim(), size(i),
    stride(i), element_size(), is_contiguous()), an unknown non-tensor where a method gives
    none (NOT_TENSORS), a named pair where torch returns one, else a new tensor (of the same
    shape for elementwise methods and dtype changes)."""
    shape = fn.tensor.shape
    if fn.name == "size" and not args and shape is not None and not fn.tensor.nn:
        return new_tuple(list(shape))  # torch.Size: a tuple
    if fn.name in ("dim", "ndimension") and not args:  # an int, known where the shape is
        if shape is not None:
            return Const(len(shape))
        return AtLeast(0, "the dimensions of a tensor of unknown shape")
    if fn.name == "is_contiguous":  # a bool: true for a fresh tensor, else not told
        why = Unknown("whether a tensor is contiguous", kind=UnknownKind.OPAQUE)
        return Const(True) if fn.tensor.contiguous else why
    known = known_result(fn.tensor, fn.name, args)  # stride(i), element_size()
    if known is not None:
        return known
    if (
        fn.name == "size"
        and shape is not None
        and len(args) == 1
        and isinstance(args[0], Const)
        and isinstance(args[0].value, int)
        and -len(shape) <= args[0].value < len(shape)
    ):
        return shape[args[0].value]
    if (fn.name in NOT_TENSORS or (fn.name == "type" and not args)) and not fn.tensor.nn:
        return opaque_not_none(f"{fn.name}() of a tensor")  # a number, a bool, a tuple, ...
    made = fn.tensor.made_at or made_at()
    if fn.name in NEW_FACTORIES:  # a fresh tensor: contiguous, the shape and dtype it is given
        return new_tensor(fn.tensor, fn.name, args, kwargs, made_at())
    pair = torch_pair(fn.name, fn.tensor, args, kwargs, st.claims, made)
    if pair is not None:
        return pair
    if fn.name in ("split", "chunk"):  # views of the pieces, where their sizes are known
        items = seq_items(st, args[0]) if args and not isinstance(args[0], Const) else None
        if items is not None and all(isinstance(i, Const) for i in items):  # split([3, 5])
            args = [Const(tuple(i.value for i in items if isinstance(i, Const))), *args[1:]]
        cut = split_sizes(fn.tensor, fn.name, args, kwargs)
        if cut is not None:
            return new_tuple(list(pieces(fn.tensor, *cut)))
    same = fn.name in SAME_SHAPE  # elementwise and dtype changes keep the shape
    dtype = METHOD_DTYPES.get(fn.name, fn.tensor.dtype if fn.name in SAME_DTYPE else None)
    new_shape = shape if same else None
    if fn.name in ("reshape", "view") and not kwargs:  # a contiguous tensor's view is one too
        new_shape = reshaped(fn.tensor, args)  # (None: view(dtype), or sizes not read)
        dtype = fn.tensor.dtype if new_shape is not None or fn.name == "reshape" else None
    flat = fn.name == "contiguous" or (
        fn.tensor.contiguous and (fn.name in SAME_SHAPE or fn.name in ("reshape", "view"))
    )
    return Tensor(
        new_shape,
        dtype,
        producer=producer_of([fn.tensor, *args], st.claims),
        made_at=made,
        contiguous=flat,
        role=role_of([fn.tensor, *args]),
    )


# tensor methods that make a new tensor of a given size (the tensor lends its dtype, device)
NEW_FACTORIES = ("new_empty", "new_zeros", "new_ones", "new_full")


def new_tensor(
    t: Tensor, name: str, args: list[Value], kwargs: dict[str, Value], made: Any
) -> Tensor:
    """`t.new_empty(size, dtype=...)` and its kin: a fresh (contiguous) tensor of that size
    (a tuple, or the sizes as arguments but for new_full, whose second is the fill value),
    in the dtype given, else t's."""
    first = args[0] if args else kwargs.get("size")
    sizes: list[Value] | None = None
    if isinstance(first, TupleVal) and all(_a_size(a) for a in first.items):
        sizes = list(first.items)
    elif isinstance(first, Const) and isinstance(first.value, (tuple, list)):
        sizes = [Const(v, first.origins) for v in first.value]
    elif name != "new_full" and args and all(_a_size(a) for a in args):
        sizes = list(args)
    dtype = kwargs.get("dtype")
    unsaid = dtype is None or (isinstance(dtype, Const) and dtype.value is None)
    dname = t.dtype if dtype is None or unsaid else torch_dtype_name(dtype)
    return Tensor(tuple(sizes) if sizes is not None else None, dname, made_at=made,
                  contiguous=True)  # fmt: skip


def _a_size(v: Value) -> bool:
    """What may be one size: an int, an integer known from below, a number not known (not a
    dtype, a tensor, nor a sequence of sizes)."""
    if isinstance(v, Const):
        return type(v.value) is int
    return isinstance(v, AtLeast) or (type(v) is Unknown and v.exc is None)


def broadcast(a: Value, b: Value) -> tuple[Value, ...] | None:
    """The shape of an elementwise `a OP b` of a tensor and a tensor or a Python number, as
    torch broadcasts it (right-aligned, a 1 stretches to the other): a pair of dimensions not
    known to match is, where the op does not raise, equal or one of them 1, so the larger, at
    least what each is known to be at least (None: two known sizes that do not match)."""
    if not isinstance(a, Tensor):
        a, b = b, a
    if not isinstance(a, Tensor) or a.shape is None:
        return None
    if isinstance(b, Const) and isinstance(b.value, (int, float, bool)):
        return a.shape  # a number broadcasts to every element
    if not isinstance(b, Tensor) or b.shape is None:
        return None
    x, y = list(a.shape), list(b.shape)
    pad: list[Value] = [Const(1)] * abs(len(x) - len(y))
    x, y = (pad + x, y) if len(x) < len(y) else (x, pad + y)
    out: list[Value] = []
    for p, q in zip(x, y, strict=True):
        if p is q or (isinstance(p, Const) and isinstance(q, Const) and p.value == q.value):
            out.append(p)
        elif isinstance(p, Const) and p.value == 1:
            out.append(q)
        elif isinstance(q, Const) and q.value == 1:
            out.append(p)
        elif isinstance(p, Const) and isinstance(q, Const):
            return None  # two sizes that do not broadcast: torch raises
        elif isinstance(p, Const) or isinstance(q, Const):  # a size not 1: the other is 1 or
            out.append(p if isinstance(p, Const) else q)  # it, wherever the op does not raise
        else:  # equal, or one of them 1, wherever the op does not raise: the larger
            out.append(bounded(max(low_of(p) or 0, low_of(q) or 0), [p, q]))
    return tuple(out)
