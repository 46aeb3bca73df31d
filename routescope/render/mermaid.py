"""The selected decode path as a Mermaid flowchart: the call chain down to the router kernel."""

from __future__ import annotations

from typing import Any


def _label(text: str) -> str:
    # Mermaid labels in "..." take entity codes for quotes; keep them short and single-line
    return text.replace('"', "#quot;").replace("\n", " ")


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def chain(path: dict[str, Any]) -> list[dict[str, Any]]:
    """The frames from the entry point down to the sink's caller; helpers drop out. A router
    that handed its result on (a handoff) gives its own chain, then the layer's down to the sink."""
    frames = path["frames"]
    sink = path["sink"]
    if not frames:
        return []
    handoff = path.get("handoff")
    if handoff and sink is not None:
        cut, made = handoff["frame"], handoff["decision"]
        router = {**path, "frames": frames[:cut], "decisions": path["decisions"][:made],
                  "sink": None, "handoff": None}  # fmt: skip
        return chain(router) + chain({**path, "frames": frames[cut:], "handoff": None})
    # the chain ends at the sink's caller, or where a router that routed nothing took the last
    # branch it took (it returns from there)
    taken = [d["function"] for d in path["decisions"] if d["value"] is True]
    anchor = sink["called_from"] if sink else taken[-1] if taken else None
    by_name = {f["function"]: f for f in frames}
    out: list[dict[str, Any]] = []
    frame = by_name.get(anchor) if anchor else frames[0]
    while frame is not None and frame not in out:
        out.insert(0, frame)
        site = frame["called_at"]
        if not site:
            break
        file, _, line = site.rpartition(":")
        before = frames[: frames.index(frame)]
        # the caller holds the call line: of the functions entered earlier in that file, the
        # one defined nearest above it (helpers entered and left in between start further up)
        callers = [f for f in before if f["file"] == file and f["line"] <= int(line)]
        frame = max(reversed(callers), key=lambda f: f["line"], default=None)
    return out


def flowchart(path: dict[str, Any], verdict: dict[str, Any] | None) -> str:
    """Mermaid `flowchart TD` source for one path (no fences)."""
    lines = ["flowchart TD"]
    nodes = chain(path)
    point = (verdict or {}).get("insertion_point")
    for i, f in enumerate(nodes):
        name = f["function"].split(":")[-1]
        lines.append(f'  n{i}["{_label(name)}<br/>{_label(_short(f["file"]))}:{f["line"]}"]')
        if i and f["called_at"]:
            lines.append(f'  n{i - 1} -->|"{_label(_short(f["called_at"]))}"| n{i}')
        elif i:  # the router returned its inputs; the block hands them to this layer
            lines.append(f'  n{i - 1} -.->|"hands its result to"| n{i}')
    last = f"n{len(nodes) - 1}" if nodes else None
    sink = path["sink"]
    if sink is not None:
        lines.append(
            f'  sink[["{_label(sink["name"].split(":")[-1])}<br/>{_label(sink["kind"])}"]]'
        )
        if last:
            lines.append(f'  {last} -->|"{_label(_short(sink["file"]))}:{sink["line"]}"| sink')
    else:
        lines.append('  ret(["returns its inputs: routing fused into the MoE kernel"])')
        if last:
            lines.append(f"  {last} --> ret")
    if point is not None:
        idx = next((i for i, f in enumerate(nodes) if f["function"] == point["function"]), None)
        lines.append(f'  oea{{{{"OEA here: after line {point["insert_after_line"]}"}}}}')
        if idx is not None:
            lines.append(f"  n{idx} -.- oea")
        lines.append("  classDef oea fill:#e6f4ea,stroke:#188038")
        lines.append("  class oea oea")
    return "\n".join(lines)
