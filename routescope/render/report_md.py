"""Several reports -> one Markdown file: a matrix (model x GPU) on top, then each section."""

from __future__ import annotations

import re
from typing import Any

from routescope.render.markdown import cell, code, given_options, render_section, verdict_word


def _anchor(text: str) -> str:
    # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens
    return re.sub(r"[^a-z0-9 _-]", "", text.lower()).replace(" ", "-")


def _name(doc: dict[str, Any]) -> str:
    """A model's short name: "org--name.json" or "org/name" -> "name"."""
    ref = str(doc["model"]["ref"]).rstrip("/").rsplit("/", 1)[-1].removesuffix(".json")
    return ref.split("--", 1)[-1]


def _heading(doc: dict[str, Any]) -> str:
    dep = doc["deployment"]
    opts = given_options(dep)
    return f"{_name(doc)} · {dep['gpu']['family']} · TP{dep['tp']}{opts} · {dep['quant']}"


def _where(doc: dict[str, Any]) -> str:
    v = doc.get("verdict") or {}
    p = v.get("insertion_point")
    if p:
        return (
            f"{code(p['function'].split(':')[-1])} after {p['file'].rsplit('/', 1)[-1]}:{p['line']}"
        )
    s = v.get("switch")
    if s and s.get("flag"):
        return "needs " + code(f"{s['flag']} {s['suggest']}")
    return "-"


def render_matrix(docs: list[dict[str, Any]]) -> str:
    """The whole document; `docs` are reports with a deployment, in the order to show them."""
    fw = {
        f"{d['deployment']['framework']} {d['deployment']['version'] or ''}".strip()
        for d in docs
        if "error" not in d
    }
    out = [f"# routescope report: {', '.join(sorted(fw))}", ""]
    out += ["| model | GPU | TP | quant | dispatch | router kernel | OEA | where |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for d in docs:
        if "error" in d:  # a deployment that could not be traced: its row says why
            out.append(f"| {cell(_name(d))} | {d['gpu']} | {d['tp']} | - | not traced | - | - "
                       f"| {cell(d['error'])} |")  # fmt: skip
            continue
        dep, disp = d["deployment"], d["dispatch"]
        sel = next((p for p in disp["paths"] if p["selected"]), None)
        sink = sel["sink"]["name"].split(":")[-1].split(".")[-1] if sel and sel["sink"] else "-"
        link = f"[{cell(_name(d))}](#{_anchor(_heading(d))})"
        status = disp["status"]
        if status == "blocked":
            status = "**blocked**"
        elif d.get("blockers"):  # the path is decided and a kernel on it does not run there
            status = f"{status}, **blocked**"
        out.append(
            f"| {link} | {dep['gpu']['family']} | {dep['tp']} | {dep['quant']} | {status} "
            f"| {code(sink) if sink != '-' else '-'} | **{verdict_word(d.get('verdict'))}** "
            f"| {_where(d)} |"
        )
    out.append("")
    for d in docs:
        if "error" not in d:
            out += [f"## {_heading(d)}", "", render_section(d, level=3)]
    return "\n".join(out).rstrip() + "\n"
