"""A vendored package registered under its own name, as Python's import system finds it.

vLLM 0.34.0 carries OpenAI's triton_kernels in vllm/third_party/triton_kernels and, where the
package is not installed, registers that copy as `triton_kernels` in sys.modules
(utils/import_utils.py:55-78, :560-566). Its version probe then asks the package for a name
under `except ImportError` (:570-586), and the MoE forward imports `triton_kernels.routing`,
whose top-k is a torch.autograd.Function (third_party/triton_kernels/topk.py:69-124) that
checks `isinstance(x, Tensor)` against the package's own dataclass (topk.py:10, tensor.py:97).
Each step is Python's semantics, not vLLM's: before them, gpt-oss on Hopper reached no kernel.
"""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.tensors import Count
from tests.engine.test_engine_synthetic import SCORES, SINKS, make_tree, run

VENDORED = {
    "third_party/__init__.py": "",
    "third_party/vend/__init__.py": "",
    "third_party/vend/tensor.py": """
        from dataclasses import dataclass

        @dataclass
        class Tensor:
            storage: object
            shape: list = None
    """,
    # the vendored modules import their package by its own name, as the original does
    "third_party/vend/topk.py": """
        import torch
        from fastk import topk_fast
        from vend.tensor import Tensor

        class TopK(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                ctx.k = k
                if not isinstance(x, Tensor):
                    return topk_fast(x)
                return torch.topk(x, k)

        def topk(x, k):
            return TopK.apply(x, k)
    """,
    "importing.py": """
        import importlib.util
        import sys
        from functools import cache

        @cache
        def import_vendored():
            if importlib.util.find_spec("vend") is not None:
                import vend
            else:
                import fw.third_party.vend as vend
                sys.modules["vend"] = vend

        def api_version():
            import_vendored()
            try:
                from vend.tensor import SparseMatrix  # the newer API's name
            except ImportError:
                return "legacy"
            return "new"
    """,
}


def _kinds(tmp_path: Path, route: str, *args: object, installed: bool = False) -> list[str]:
    files = {**VENDORED, "route.py": route}
    facts = Facts(sinks=SINKS, packages={"vend": installed})
    paths = run(make_tree(tmp_path, files), "fw.route:route", SCORES(), *args, facts=facts)
    return sorted(str(p.sink.kind if p.sink else None) for p in paths)


def test_a_vendored_package_registered_in_sys_modules_is_imported_by_its_name(
    tmp_path: Path,
) -> None:
    route = """
        import torch
        from fw.importing import api_version, import_vendored

        def route(x):
            if api_version() == "legacy":
                from vend.topk import topk
                return topk(x, 2)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, route) == ["cuda_kernel"]


def test_an_installed_package_is_not_the_vendored_copy(tmp_path: Path) -> None:
    """With the package installed nothing is registered: `vend` is the library routescope does
    not read, and its topk is nothing the rules know (no sink)."""
    route = """
        from fw.importing import import_vendored

        def route(x):
            import_vendored()
            from vend.topk import topk
            return topk(x, 2)
    """
    assert _kinds(tmp_path, route, installed=True) == ["None"]


def test_a_missing_name_raises_import_error_where_a_handler_catches_it(tmp_path: Path) -> None:
    """`from m import name` for a name m does not define raises ImportError (not its subclass
    ModuleNotFoundError); a name m defines imports."""
    route = """
        import torch
        from fastk import topk_fast

        def route(x):
            try:
                from fw.third_party.vend.tensor import Tensor
                from fw.third_party.vend.tensor import SparseMatrix
            except ModuleNotFoundError:
                return torch.topk(x, 2)
            except ImportError:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, route) == ["cuda_kernel"]


def test_what_torch_makes_is_no_instance_of_a_plain_framework_class(tmp_path: Path) -> None:
    """A tensor is no instance of a class that derives from no torch class; a batch's token
    count (known from below) is an int and no bool."""
    route = """
        import torch
        from fastk import topk_fast
        from fw.third_party.vend.tensor import Tensor

        def route(x, n):
            if (not isinstance(x, Tensor) and isinstance(n, int) and not isinstance(n, bool)
                    and not isinstance(n, (str, float))):
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    assert _kinds(tmp_path, route, Count(1, "tokens in the batch")) == ["cuda_kernel"]


def test_names_bound_are_what_the_top_level_surely_binds() -> None:
    """What decides, without running a module, that `from m import name` finds the name: the
    definitions, assignments and imports of its own unconditional statements, less what it
    deletes or its functions declare global; each star import (resolved by the engine); a
    marker for dynamic binding. What a branch, a loop, a with or a try binds is not sure."""
    import ast
    import textwrap

    from routescope.analysis.engine.modnames import ANY, STAR, names_bound

    text = textwrap.dedent("""
        import os.path
        import numpy as np
        from .sibling import a, b as c
        from ..pkg import *
        X: int = 1
        Q: int
        Y, (Z, *W) = 1, (2, 3)
        GONE = 1
        del GONE
        if os.environ.get("A"):
            def f(): local = 1
        else:
            class K:
                inside = 1
        try:
            from ext import e
        except ImportError as err:
            e = None
        for i in range(2):
            pass
        with open("f") as fh:
            pass
        if (n := 3):
            pass
        def g():
            global G
            G = 1
    """)
    got = names_bound(ast.parse(text), text.splitlines(), "fw.sub.mod", False)
    assert got == {"os", "np", "a", "c", f"{STAR}fw.pkg", "X", "Y", "Z", "W", "g"}
    dynamic = "def h():\n    globals()['Q'] = 1\n"
    assert ANY in names_bound(ast.parse(dynamic), dynamic.splitlines(), "fw.m", False)
    getter = "def __getattr__(name):\n    return name\n"
    assert "__getattr__" in names_bound(ast.parse(getter), getter.splitlines(), "fw.m", False)


IMPORTED = """
    import torch
    from fastk import topk_fast

    def route(x):
        try:
            from fw.lib import {name}
        except ImportError:
            return topk_fast(x)
        return torch.topk(x, 2)
"""
LIB = """
from typing import TYPE_CHECKING
from .third_party.vend.tensor import *
if TYPE_CHECKING:
    from .third_party.vend.tensor import Storage
_hidden = 1
GONE = 1
del GONE
"""


def test_an_import_of_a_name_the_module_lacks_when_it_has_run_raises(tmp_path: Path) -> None:
    """A name the module binds only for the type checker, deletes, or keeps out of a star
    import (a leading underscore) is not there once it has run: ImportError. A name its star
    import gives, or its own top level binds, is there."""
    cases = {"Storage": "cuda_kernel", "GONE": "cuda_kernel", "_private": "cuda_kernel",
             "Tensor": "torch", "_hidden": "torch"}  # fmt: skip
    for n, (name, kind) in enumerate(cases.items()):
        files = {**VENDORED, "route.py": IMPORTED.format(name=name), "lib.py": LIB}
        paths = run(make_tree(tmp_path / str(n), files), "fw.route:route", SCORES(),
                    facts=Facts(sinks=SINKS))  # fmt: skip
        assert sorted(str(p.sink.kind if p.sink else None) for p in paths) == [kind], name


def test_a_module_that_binds_names_dynamically_perhaps_lacks_one(tmp_path: Path) -> None:
    """A module that may bind names no statement spells (globals() written) and lacks the name
    when imported: both ways, the import raising and the import going on."""
    lib = "def make():\n    globals()['Dyn'] = 1\n"
    files = {**VENDORED, "route.py": IMPORTED.format(name="Dyn"), "lib.py": lib}
    paths = run(make_tree(tmp_path, files), "fw.route:route", SCORES(), facts=Facts(sinks=SINKS))
    assert sorted(str(p.sink.kind if p.sink else None) for p in paths) == ["cuda_kernel", "torch"]
