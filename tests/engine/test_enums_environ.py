"""Enum members as Python makes and combines them (auto() values, Flag bits, truth), and the
environment listed (os.environ.items()): each met in vLLM 0.34.0's start-up, where the engine
raised TypeError or forked on what Python decides."""

from __future__ import annotations

from pathlib import Path

import pytest

from routescope.analysis.engine.facts import Facts
from tests.engine.test_engine_synthetic import SCORES, SINKS, make_tree, run

HEAD = """
import enum
import os
import torch
from fastk import topk_fast

"""


def _kinds(tmp_path: Path, body: str, facts: Facts | None = None) -> list[str]:
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES(),
                facts=facts)  # fmt: skip
    return sorted(str(p.sink.kind if p.sink else None) for p in paths)


CASES = {
    # 0.34.0 config/kv_transfer.py:50-76 (KVCacheAccess(enum.IntFlag): IN_PROCESS = 0, then
    # auto() members) and config/vllm.py:3195-3249 (`KVCacheAccess.LEGACY_IPC in access`,
    # `access.needs_single_chunk()`: `bool(self & (A | B | C))`)
    "int_flag": """
class Access(enum.IntFlag):
    IN_PROCESS = 0
    REGISTERS = enum.auto()
    EXPORTS_FD = enum.auto()
    EXPORTS_FABRIC = enum.auto()
    LEGACY_IPC = enum.auto()

    def needs_single_chunk(self):
        exports = Access.EXPORTS_FD | Access.EXPORTS_FABRIC
        return bool(self & (Access.REGISTERS | exports))

def route(x):
    access = Access.IN_PROCESS
    both = Access.REGISTERS | Access.LEGACY_IPC
    if (Access.LEGACY_IPC not in access and not access.needs_single_chunk() and not access
            and Access.LEGACY_IPC.value == 8 and Access.LEGACY_IPC in both
            and Access.EXPORTS_FD not in both and both == 9 and both.needs_single_chunk()
            and (both & Access.REGISTERS) is Access.REGISTERS
            and (Access.REGISTERS | Access.REGISTERS) == Access.REGISTERS):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
    # auto() as each kind of enum gives it: a StrEnum its name in lower case, an Enum the
    # highest value so far plus one, a Flag the next power of two
    "auto_values": """
class Mode(enum.StrEnum):
    EAGER = enum.auto()
    GRAPH = enum.auto()

class Level(enum.IntEnum):
    NONE = 0
    LOW = 5
    HIGH = enum.auto()

class Bits(enum.Flag):
    A = enum.auto()
    B = enum.auto()
    C = 16
    D = enum.auto()

def route(x):
    if (Mode.GRAPH == "graph" and Mode.EAGER.value == "eager" and Level.HIGH == 6
            and Level.HIGH + 1 == 7 and not Level.NONE and Level.LOW
            and Bits.B.value == 2 and Bits.D.value == 32 and Bits.A != Bits.B):
        return topk_fast(x)
    return torch.topk(x, 2)
""",
}


def test_one_list_of_the_enum_kinds() -> None:
    """values.truth's enums true as their values are: every kind enums.py tells apart."""
    from routescope.analysis.engine import enums, values

    assert values._VALUED == enums.FLAG_BASES | enums.INT_BASES | enums.STR_BASES


@pytest.mark.parametrize("name", sorted(CASES))
def test_enum_decided_as_python_decides(tmp_path: Path, name: str) -> None:
    assert _kinds(tmp_path, CASES[name]) == ["cuda_kernel"]


# 0.34.0 platforms/interface.py:1476-1490 validate_environ: `for env, value in
# os.environ.items(): if env == "VLLM_USE_V2_MODEL_RUNNER": if value != "1": raise ValueError`
ENVIRON = """
def route(x):
    for env, value in os.environ.items():
        if env == "FW_OLD_RUNNER" and value != "1":
            raise ValueError(env)
    if sorted(os.environ.keys()) == sorted(os.environ.copy()):
        return topk_fast(x)
    return torch.topk(x, 2)
"""


def test_the_environment_listed_is_what_was_given(tmp_path: Path) -> None:
    """Where a variable not given is taken as unset, the environment lists exactly the given
    ones; where it is not, what it lists is unknown, and the check may raise."""
    absent = Facts(sinks=SINKS, env_unset_means_absent=True)
    assert _kinds(tmp_path / "a", ENVIRON, absent) == ["cuda_kernel"]
    given = Facts(sinks=SINKS, env={"FW_OLD_RUNNER": "0"}, env_unset_means_absent=True)
    assert _kinds(tmp_path / "b", ENVIRON, given) == ["None"]  # it raises: no kernel
    unknown = Facts(sinks=SINKS)
    assert "None" in _kinds(tmp_path / "c", ENVIRON, unknown)
