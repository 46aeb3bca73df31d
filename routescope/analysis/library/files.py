"""open() and json.load of the checkpoint's own JSON files: what the server reads from them is what
routescope read (hf_quant_config.json beside config.json); any other file stays Unknown."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from routescope.analysis.engine.containers import from_python
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Value
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase


class CheckpointFile(Value):
    """An open file of the checkpoint whose contents routescope read (a `with` enters it as
    itself, as a file object does)."""

    enters_as_itself = True

    def __init__(self, relpath: str, contents: Any, origin: str) -> None:
        super().__init__((origin,))
        self.relpath = relpath
        self.contents = contents

    def __repr__(self) -> str:
        return f"CheckpointFile({self.relpath})"


@models("open", "io.open", "builtins.open")
def _open(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    cp = eng.facts.checkpoint
    path = args[0] if args else kwargs.get("file")
    mode = args[1] if len(args) > 1 else kwargs.get("mode", Const("r"))
    if cp is None or not isinstance(path, Const) or not isinstance(mode, Const):
        return None
    if not isinstance(mode.value, str) or set(mode.value) - set("rtb"):
        return None  # a write, or a mode not known
    found = cp.document(str(path.value))
    if found is None:
        return None
    rel, contents = found
    return one(st, CheckpointFile(rel, contents, f"{cp.root}/{rel} as routescope read it"))


@models("json.load")
def _json_load(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    f = args[0] if args else None
    if not isinstance(f, CheckpointFile):
        return None
    return one(st, from_python(f.contents, f.origins))
