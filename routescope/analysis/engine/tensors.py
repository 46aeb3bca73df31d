"""Abstract tensors: what torch factories and tensor methods make of them."""

from __future__ import annotations

from typing import Any

from routescope.analysis.engine.containers import ListVal, TupleVal
from routescope.analysis.engine.values import (
    AtLeast,
    Const,
    External,
    Tensor,
    Unknown,
    Value,
)

# torch's dtypes: one object each, several names for some (torch.float is torch.float32).
_DTYPE_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "long": "int64",
    "int": "int32",
    "short": "int16",
}
DTYPES = {
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "complex64",
    "complex128",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "uint16",
    "uint32",
    "uint64",
}


def torch_dtype(v: Value) -> str | None:
    """The canonical dtype name of `torch.<dtype>` (an External), else None."""
    if not isinstance(v, External) or not v.name.startswith("torch."):
        return None
    name = v.name[len("torch.") :]
    name = _DTYPE_ALIASES.get(name, name)
    return name if name in DTYPES else None


# tensor methods whose result has the tensor's shape (and, for the second set, its dtype)
SAME_DTYPE = {
    "contiguous",
    "clone",
    "detach",
    "sigmoid",
    "softmax",
    "abs",
    "neg",
    "exp",
    "relu",
    "sqrt",
    "log",
    "tanh",
    "mul",
    "add",
    "sub",
    "div",
    "masked_fill",
}
SAME_SHAPE = SAME_DTYPE | {"float", "half", "bfloat16", "to", "type_as", "int", "long"}
METHOD_DTYPES = {
    "float": "torch.float32",
    "half": "torch.float16",
    "bfloat16": "torch.bfloat16",
    "int": "torch.int32",
    "long": "torch.int64",
}
PARAMETER = {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "nn.Parameter"}
# the bases that make a framework class a tensor (an instance is made from a tensor, `data`)
TENSOR_BASES = PARAMETER | {"torch.Tensor", "torch.nn.parameter.Buffer", "torch.nn.Buffer"}
# what an instance of such a class answers from the tensor it was made from: its data and
# torch's own tensor attributes and methods (any other name is the instance's own, or absent)
TENSOR_MEMBERS = frozenset(
    {
        "data", "shape", "dtype", "ndim", "device", "is_cuda", "requires_grad", "T", "mT",
        "size", "dim", "numel", "nelement", "stride", "storage_offset", "element_size",
        "is_contiguous", "contiguous", "view", "view_as", "reshape", "narrow", "t", "transpose",
        "permute", "unsqueeze", "squeeze", "flatten", "expand", "repeat", "chunk", "split",
        "to", "cuda", "cpu", "float", "half", "bfloat16", "int", "long", "type", "type_as",
        "detach", "clone", "copy_", "fill_", "zero_", "normal_", "uniform_", "sum", "max",
        "min", "abs", "amax", "__getitem__", "nbytes", "itemsize", "new_empty", "new_zeros",
    }
)  # fmt: skip
# torch factories whose first arguments are the shape (torch.full: then the fill value)
FACTORIES = {f"torch.{n}" for n in ("empty", "zeros", "ones", "full", "rand", "randn")}


def made_tensor(
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    made: Any,
    sizes: list[Value] | None = None,
) -> Tensor:
    """A new tensor with the shape and dtype its factory call gives it, where they are known
    (`sizes`: the items of a size tuple or list given as the first argument)."""
    dims: list[Value] | None = None
    first = args[0] if args else kwargs.get("size")
    if sizes is not None:
        dims = sizes
    elif name != "torch.full":
        dims = [a for a in args if not isinstance(a, Const) or isinstance(a.value, int)]
        if len(dims) != len(args) or any(_not_a_size(a) for a in args):
            dims = None  # (a size sequence of unknown length is no one dimension)
    elif first is not None:
        dims = [first]
    dtype = kwargs.get("dtype")
    dname = torch_dtype_name(dtype) if dtype is not None else None
    return Tensor(tuple(dims) if dims is not None else None, dname, made_at=made, contiguous=True)


def stride_of(t: Tensor, args: list[Value]) -> Value | None:
    """t.stride(i) of a row-major tensor of known trailing sizes."""
    if not t.contiguous or t.shape is None or len(args) != 1 or not isinstance(args[0], Const):
        return None
    i = args[0].value
    if not isinstance(i, int) or not -len(t.shape) <= i < len(t.shape):
        return None
    step = 1
    for d in t.shape[i % len(t.shape) + 1 :]:
        if not (isinstance(d, Const) and isinstance(d.value, int)):
            return None
        step *= d.value
    return Const(step)


def reshaped(t: Tensor, args: list[Value]) -> tuple[Value, ...] | None:
    """The shape `t.reshape(*shape)` or `t.view(*shape)` gives (a shape as the arguments or
    one tuple; where torch does not raise): the sizes given, and the one given as -1 inferred
    from t's: the same dimension of t where the other sizes are t's own, rank for rank (so
    `x.reshape(-1, x.shape[-1])` of [tokens, hidden] keeps the tokens: one count, bounded
    alike everywhere); the product of t's leading (trailing) dimensions where the other sizes
    are t's trailing (leading) ones; the number where every size is. None when a size is not
    an integer of this path (a dtype: `view(torch.uint8)`; a sequence not known)."""
    dims = list(args[0].items) if len(args) == 1 and isinstance(args[0], TupleVal) else args
    if len(dims) == 1 and isinstance(dims[0], Const) and isinstance(dims[0].value, tuple):
        dims = [Const(v, dims[0].origins) for v in dims[0].value]
    old = t.shape

    def size(v: Value) -> bool:
        if isinstance(v, Const):
            return type(v.value) is int and v.value >= -1
        return isinstance(v, AtLeast) or (old is not None and any(v is d for d in old))

    if not dims or not all(size(d) for d in dims):
        return None
    inferred = [i for i, d in enumerate(dims) if isinstance(d, Const) and d.value == -1]
    if not inferred:
        return tuple(dims)
    if len(inferred) > 1:
        return None  # torch raises: only one dimension can be inferred
    j, rest = inferred[0], [d for d in dims if not (isinstance(d, Const) and d.value == -1)]
    dims[j] = _inferred(old, dims, j, rest) or AtLeast(0, "a size reshape infers")
    return tuple(dims)


def _same(a: Value, b: Value) -> bool:
    return a is b or (isinstance(a, Const) and isinstance(b, Const) and a.value == b.value)


def _inferred(
    old: tuple[Value, ...] | None, dims: list[Value], j: int, rest: list[Value]
) -> Value | None:
    """The size reshape infers at `j` (see reshaped), where t's shape decides it."""
    if old is None:
        return None
    if all(isinstance(d, Const) and type(d.value) is int for d in (*old, *rest)):
        total, others = 1, 1
        for d in old:
            total *= d.value  # type: ignore[attr-defined]
        for d in rest:
            others *= d.value  # type: ignore[attr-defined]
        return Const(total // others) if others and total % others == 0 else None
    n, k = len(old), len(rest)
    if n == len(dims) and all(_same(d, old[i]) for i, d in enumerate(dims) if i != j):
        return old[j]
    if j == 0 and k < n and all(_same(a, b) for a, b in zip(rest[::-1], old[::-1], strict=False)):
        lead = old[: n - k]  # (-1, h) of (a, b, h): a * b
    elif j == len(dims) - 1 and k < n and all(_same(a, b) for a, b in zip(rest, old, strict=False)):
        lead = old[k:]  # (a, -1) of (a, b, h): b * h
    else:
        return None
    if len(lead) == 1:
        return lead[0]
    lows = [d.low if isinstance(d, AtLeast) else d.value if isinstance(d, Const) else None
            for d in lead]  # fmt: skip
    if not all(type(low) is int and low >= 0 for low in lows):
        return None
    product = 1
    for low in lows:
        product *= low  # type: ignore[operator]
    return AtLeast(product, "a size reshape infers, a product of sizes")


def _int(v: Value | None) -> int | None:
    return v.value if isinstance(v, Const) and type(v.value) is int else None


def axis_of(t: Tensor, dim: Value | None) -> int | None:
    """A dimension of t by index (negative from the end); None when not known or out of it."""
    d = 0 if dim is None else _int(dim)
    if t.shape is None or d is None or not -len(t.shape) <= d < len(t.shape):
        return None
    return d % len(t.shape)


def split_sizes(
    t: Tensor, name: str, args: list[Value], kwargs: dict[str, Value]
) -> tuple[list[int], int] | None:
    """The sizes along the dimension `t.split(size_or_sizes, dim)` or `t.chunk(chunks, dim)`
    cuts t into, where t's size there and the arguments are known numbers (torch: pieces of
    `size`, the last the rest; `chunks` pieces of ceil(n / chunks), as many as that takes),
    with that dimension; None else."""
    how = args[0] if args else kwargs.get("split_size_or_sections", kwargs.get("chunks"))
    d = axis_of(t, args[1] if len(args) > 1 else kwargs.get("dim"))
    n = _int(t.shape[d]) if d is not None and t.shape is not None else None
    if how is None or d is None or n is None or n < 0:
        return None
    if name == "split" and isinstance(how, Const) and isinstance(how.value, (tuple, list)):
        sizes = list(how.value)
        ok = all(type(x) is int and x >= 0 for x in sizes) and sum(sizes) == n
        return (sizes, d) if ok else None
    step = _int(how)
    if step is None or step <= 0:
        return None
    if name == "chunk":
        step = -(-n // step)
        if step == 0:
            return [0], d
    return [min(step, n - i) for i in range(0, n, step)] or [0], d


def pieces(t: Tensor, sizes: list[int], d: int) -> list[Tensor]:
    """t cut along dimension d into pieces of those sizes: views, contiguous where the cut is
    along the first dimension of a contiguous tensor."""
    shape = t.shape or ()
    out = []
    for size in sizes:
        dims = (*shape[:d], Const(size), *shape[d + 1 :])
        out.append(Tensor(dims, t.dtype, t.producer, t.made_at, t.contiguous and d == 0, t.role))
    return out


def concatenated(tensors: list[Value], dim: Value | None) -> tuple[Value, ...] | None:
    """The shape `torch.cat(tensors, dim)` gives: theirs, with the sizes along dim added, where
    every one is a tensor of known rank, the sizes along dim known numbers and every other
    size the same (torch raises else); None else."""
    if not tensors or not all(isinstance(t, Tensor) and t.shape is not None for t in tensors):
        return None
    shapes = [t.shape for t in tensors if isinstance(t, Tensor) and t.shape is not None]
    rank = len(shapes[0])
    d = _int(dim) if dim is not None else 0
    if d is None or not all(len(s) == rank for s in shapes) or not -rank <= d < rank:
        return None
    d %= rank
    along = [_int(s[d]) for s in shapes]
    if any(x is None for x in along):
        return None
    for i in range(rank):
        if i != d and not all(_same(s[i], shapes[0][i]) for s in shapes):
            return None
    return (*shapes[0][:d], Const(sum(x for x in along if x is not None)), *shapes[0][d + 1 :])


def torch_dtype_name(v: Value) -> str | None:
    return v.name if isinstance(v, External) and v.name.startswith("torch.") else None


NON_TENSOR_TORCH = (
    "torch.cuda.",
    "torch._C.",
    "torch.version",
    "torch.backends.",
    "torch.distributed.",
    "torch.compiler.",
    "torch._dynamo.",
    "torch.library.",
)


class TensorMethod(Value):
    never_none = True

    def __init__(self, tensor: Tensor, name: str) -> None:
        super().__init__()
        self.tensor = tensor
        self.name = name

    @property
    def shown(self) -> str:  # (describe: "compare a tensor's .dtype with torch.float32")
        return f"a tensor's .{self.name}"


class Count(AtLeast):
    """An integer count known from below: the tokens in a batch (an int, never a float: what
    max() of unknown numbers bounds from below may be one)."""

    __slots__ = ()


# bytes per element of each dtype (torch's element_size(); float4_e2m1fn_x2 packs two in one)
_ITEMSIZE = {
    "float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "complex64": 8, "complex128": 16,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1,
    "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1,
    "float4_e2m1fn_x2": 1, "uint16": 2, "uint32": 4, "uint64": 8,
}  # fmt: skip


def element_size(t: Tensor) -> Value | None:
    """t.element_size(): the bytes of one element of its dtype; None when the dtype is not
    known (the call's default answer then)."""
    name = (t.dtype or "").removeprefix("torch.")
    size = _ITEMSIZE.get(_DTYPE_ALIASES.get(name, name))
    return Const(size) if size is not None else None


def dtype_attribute(dtype: Value, name: str) -> Value | None:
    """A torch dtype's own number: `torch.bfloat16.itemsize` (bytes per element, as
    element_size() says); of a tensor's dtype not known (`x.dtype.itemsize`), at least 1, as
    every dtype's is; else None."""
    if isinstance(dtype, TensorMethod) and dtype.name == "dtype" and name == "itemsize":
        return AtLeast(1, "the bytes of an element of a dtype not known")
    canonical = torch_dtype(dtype)
    size = _ITEMSIZE.get(canonical) if canonical is not None and name == "itemsize" else None
    return Const(size, dtype.origins) if size is not None else None


def known_result(t: Tensor, name: str, args: list[Value]) -> Value | None:
    """What a tensor method that describes its layout gives, where it is known."""
    if name == "element_size" and not args:
        return element_size(t)
    return stride_of(t, args) if name == "stride" else None


# the reason of an unknown that stands for a starred part of unknown contents (`*t.shape`), or
# a display made with one (`(n, *t.shape)`): a sequence of unknown length, not one item
STARRED_UNKNOWN = "a starred part of unknown contents"


def unknown_length(v: Value) -> bool:
    """Is `v` a sequence of unknown length (a starred part of unknown contents, or a display
    made with one)?"""
    return isinstance(v, Unknown) and v.reason == STARRED_UNKNOWN


def _not_a_size(v: Value) -> bool:
    """A factory's argument that is no one size: a sequence of sizes whose items are not
    known (`torch.empty([4, *shape])`), or of unknown length."""
    return unknown_length(v) or isinstance(v, (ListVal, TupleVal))
