"""Report -> terminal: the model table, the router as built, the path as a tree, the sink."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from rich.tree import Tree

from routescope.render.markdown import given_options, server_args_set
from routescope.render.text_verdict import verdict_panel
from routescope.report import raised_text, sink_args_text, sink_label

_WORD = {True: "true", False: "false", None: "unknown"}
_STYLE = {True: "green", False: "red", None: "yellow"}


def short_path(path: str) -> str:
    """A source path as the terminal shows it: its last two parts (moe/topk.py)."""
    return "/".join(path.split("/")[-2:])


def _decision(d: dict[str, Any]) -> Text:
    value = d["value"]
    t = Text()
    t.append(f"{short_path(d['file'])}:{d['line']}  ", style="dim")
    t.append(d["condition"][:160])
    t.append(f"  → {_WORD[value]}", style=f"bold {_STYLE[value]}")
    if value is None:
        t.append(f"  (undecided: {d.get('undecided_because', '')})", style="yellow")
    failing = [p["condition"] for p in d.get("parts", []) if p["value"] is not True]
    if failing and len(d.get("parts", [])) > 1:
        pairs = ((p["condition"], p["value"]) for p in d["parts"] if p["value"] is not True)
        why = "; ".join(f"{c} is {'false' if v is False else 'unknown'}" for c, v in pairs)
        t.append("  ← " + why, style=_STYLE[value])
    return t


def path_tree(path: dict[str, Any], title: str) -> Tree:
    tree = Tree(Text(title, style="bold"))
    nodes: dict[str, Tree] = {}
    model_setup = [d for d in path.get("setup_decisions", []) if "/models/" in d["file"]]
    if model_setup:
        node = tree.add(Text("model construction (model code only)", style="cyan"))
        for d in model_setup:
            node.add(_decision(d))
    for d in path["decisions"]:
        fn = d["function"].split(":")[-1] or d["function"]
        key = d["function"]
        if key not in nodes:
            nodes[key] = tree.add(Text(fn, style="cyan"))
        nodes[key].add(_decision(d))
    sink = path["sink"]
    if sink:
        t = Text("→ sink ", style="bold")
        t.append(sink["name"], style="bold magenta")
        t.append(
            f"  [{sink_label(sink)}]  called at {short_path(sink['file'])}:{sink['line']}",
            style="magenta",
        )
        if sink.get("args"):  # how a fused MoE kernel is told to route
            given = sink_args_text(sink)
            t.append(f"\n  given {given}", style="magenta")
        tree.add(t)
    if path["stopped"]:
        tree.add(Text(f"path stopped: {path['stopped']}", style="yellow"))
    elif path.get("raised") and not sink:
        tree.add(Text(f"path {raised_text(path)}", style="yellow"))
    return tree


def render_dispatch(doc: dict[str, Any]) -> RenderableType:
    dep, disp = doc["deployment"], doc["dispatch"]
    head = Text()
    head.append(f"{doc['model']['ref']}", style="bold")
    head.append(
        f"  on {dep['framework']} {dep['version'] or '(checkout)'} · {dep['gpu']['family']} "
        f"({dep['gpu']['name']}) · TP{dep['tp']}{given_options(dep)} · {dep['quant']}"
    )
    parts: list[RenderableType] = [head]
    if disp["block_class"]:
        via = " → ".join(c.split(":")[-1] for c in disp["construction_chain"])
        parts.append(Text(f"router built by {disp['block_class']}  (via {via})", style="dim"))
    router = disp.get("router") or {}
    keys = (
        "top_k",
        "num_fused_shared_experts",
        "use_grouped_topk",
        "num_expert_group",
        "topk_group",
        "renormalize",
        "routed_scaling_factor",
        "output_format",
        "scoring_func",
    )
    shown = [f"{k}={router[k]['repr']}" for k in keys if k in router]
    if shown:
        parts.append(Text("router: " + ", ".join(shown)))
    changed = server_args_set(disp)
    if changed:
        parts.append(Text("server arguments set: " + ", ".join(changed), style="dim"))
    status = {
        "selected": ("one path selected", "green"),
        "blocked": ("blocked: a step the server runs raises on every way (see blockers)", "red"),
        "provisional": ("provisional: one path, but set-up did not finish (see notes)", "yellow"),
        "forked": ("the facts do not decide: several paths", "yellow"),
        "unknown": ("no path reached a sink", "red"),
    }[disp["status"]]
    parts.append(Text(status[0], style=f"bold {status[1]}"))
    for i, p in enumerate(disp["paths"], 1):
        sink = p["sink"]
        label = f"path {i}" + (" (selected)" if p["selected"] else "")
        label += f": {sink['name']} [{sink_label(sink)}]" if sink else ""
        if p["equivalent_paths"]:
            label += f"  (+{p['equivalent_paths']} equivalent)"
        parts.append(path_tree(p, label))
    if disp["undecided"]:
        parts.append(Text("would decide:", style="bold yellow"))
        for u in disp["undecided"]:
            parts.append(Text(f"  {short_path(u['file'])}:{u['line']}  {u['condition'][:120]}  "
                              f"({u['undecided_because']})", style="yellow"))  # fmt: skip
    for note in disp["notes"]:
        parts.append(Text(f"note: {note}", style="dim"))
    if disp.get("assumptions"):
        parts.append(Text(assumptions_line(disp["assumptions"]), style="dim"))
    parts.append(verdict_panel(doc))
    return Group(*parts)


def assumptions_line(items: list[dict[str, Any]]) -> str:
    """One line: how many facts the answer rests on that the code cannot show, by kind."""
    kinds: dict[str, list[str]] = {}
    for a in items:
        kinds.setdefault(a["kind"], []).append(a["name"])
    shown = "; ".join(
        f"{k}: {', '.join(names[:4])}" + (f" (+{len(names) - 4})" if len(names) > 4 else "")
        for k, names in kinds.items()
    )
    return f"assumes ({len(items)} facts the code cannot show; `--format json` lists them): {shown}"
