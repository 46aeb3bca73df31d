"""The OEA verdict as a terminal panel: the answer, the point with its neighbours, constraints."""

from __future__ import annotations

from textwrap import dedent
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

_ANSWER = {
    True: ("insertable", "green"),
    False: ("not insertable", "red"),
    None: ("undecided", "yellow"),
}


def verdict_panel(doc: dict[str, Any]) -> RenderableType:
    """A rich Panel for doc["verdict"] (an empty Text when the report has none)."""
    v = doc.get("verdict")
    if v is None:
        return Text()
    word, style = _ANSWER[v["insertable"]]
    parts: list[RenderableType] = [
        Text.assemble((f"OEA: {word}", f"bold {style}"), f"  {v['why']}")
    ]
    _assessment(v, parts)
    for i, a in enumerate(v.get("paths", []), 1):
        w, s = _ANSWER[a["insertable"]]
        parts.append(Text.assemble((f"path {i}: {w}", f"bold {s}"), f"  {a['why']}"))
        _assessment(a, parts)
    return Panel(Group(*parts), title="OEA verdict", expand=False)


def _assessment(a: dict[str, Any], parts: list[RenderableType]) -> None:
    p = a.get("insertion_point")
    if p:
        parts.append(
            Text(
                f"insert after {p['file']}:{p['insert_after_line']} in {p['function']}",
                style="bold",
            )
        )
        parts.append(Text(dedent(p["before"]["text"]).splitlines()[0] + "  …", style="dim"))
        parts.append(Text(">>> OEA here", style="bold green"))
        if p["after"]:
            parts.append(Text(p["after"]["text"].strip(), style="dim"))
    s = a.get("switch")
    if s:
        parts.append(
            Text(
                f"switch: {s['flag']} (now {s['current']}; e.g. {s['suggest']}); "
                f"gives up: {s['gives_up']}",
                style="yellow",
            )
        )
    for c in a.get("constraints", []):
        parts.append(Text.assemble((f"{c['id']} {c['title']}: ", "cyan"), c["finding"]))
