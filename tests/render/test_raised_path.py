"""A path that ends in a raise says what it raises and where, in every format: the JSON's
`raised`, the answer's "ending in", the path tree's last line and the verdict's why (a forked
answer once said only "ending in no kernel" and "stopped before a router kernel: raise")."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from rich.console import Console

from routescope.analysis.phases.trace import TracedPath
from routescope.render.schema import validate_report
from routescope.render.text_report import path_tree
from routescope.render.text_summary import summary
from routescope.report import _path, raised_text
from routescope.verdict.build import assess

SNAPSHOT = Path(__file__).parent / "snapshots" / "glm5-sglang-0.5.9-sm120-tp8.json"
AT = ("sglang/jit_kernel/utils.py", 101, "sglang.jit_kernel.utils:_local_jit_source_hash")


def _raising() -> dict:
    p = TracedPath((), (), None, "raise", "ZeroDivisionError", "", raised_at=AT)
    return _path(p, selected=False, also=0, ways=())


def test_the_json_names_the_exception_and_where_and_matches_the_schema() -> None:
    path = _raising()
    assert path["outcome"] == "raise"
    assert path["raised"] == {"exception": "ZeroDivisionError", "file": AT[0], "line": 101,
                              "function": AT[2]}  # fmt: skip
    returning = _path(
        TracedPath((), (), None, "return", "None", ""), selected=False, also=0, ways=()
    )
    assert returning["raised"] is None
    doc = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    forked = copy.deepcopy(doc)
    forked["dispatch"]["paths"].append(path)
    validate_report(forked)


def test_the_answer_the_tree_and_the_why_say_it() -> None:
    path = _raising()
    said = "raises ZeroDivisionError at sglang/jit_kernel/utils.py:101 in _local_jit_source_hash"
    assert raised_text(path) == said
    console = Console(width=200, record=True)
    console.print(path_tree(path, "path 2"))
    assert f"path {said}" in console.export_text()
    doc = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    kernel = doc["dispatch"]["paths"][0]
    doc["dispatch"].update(status="forked", paths=[kernel, path], undecided=[])
    lines = [t.plain for t in summary(doc, 120)]
    assert any(line.startswith("forked: 2 paths, ending in a raise (ZeroDivisionError), ")
               for line in lines), lines  # fmt: skip
    why = assess(doc, path, None, None, {})["why"]  # type: ignore[arg-type]
    assert why == f"the path {said} before a router kernel"


def test_ways_without_a_kernel_that_end_differently_are_not_one_path() -> None:
    # a way that raises was grouped with one that returns no kernel (and with one raising at
    # another line) as "equivalent": one representative, and the answer read as one path
    from routescope.analysis.phases.dispatch import Dispatch
    from routescope.report import dispatch_dict

    other = ("sglang/srt/x.py", 7, "sglang.srt.x:f")
    ways = (
        TracedPath((), (), None, "raise", "ZeroDivisionError", "", raised_at=AT),
        TracedPath((), (), None, "raise", "ZeroDivisionError", "", raised_at=AT),
        TracedPath((), (), None, "raise", "ZeroDivisionError", "", raised_at=other),
        TracedPath((), (), None, "return", "None", ""),
    )
    d = Dispatch("sglang", "0.5.23", "pypi", None, None, ways, (), 0.0)
    got = dispatch_dict(d)
    assert got["status"] == "forked"
    shown = [(p["outcome"], (p["raised"] or {}).get("line"), p["equivalent_paths"])
             for p in got["paths"]]  # fmt: skip
    assert shown == [("raise", 101, 1), ("raise", 7, 0), ("return", None, 0)]
