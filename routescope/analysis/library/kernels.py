"""How CUDA code is compiled or loaded at run time (tvm-ffi, torch.utils.cpp_extension): the
module such a call gives is a CompiledModule, whose functions are kernels (cuda_kernel, provider
jit), whoever calls the loader."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from routescope.analysis.engine.sinks import CompiledModule
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Value
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase


@models("tvm_ffi.cpp.load_inline", "tvm_ffi.cpp.load", "tvm_ffi.load_module",
        "torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline")  # fmt: skip
def _loaded(eng: EngineBase, st: PathState, name: str, args: list[Value],
            kwargs: dict[str, Value], node: ast.AST | None) -> Paths | None:  # fmt: skip
    first = args[0] if args else kwargs.get("name")
    label = str(first.value) if isinstance(first, Const) else f"a module {name} builds"
    return one(st, CompiledModule(label))
