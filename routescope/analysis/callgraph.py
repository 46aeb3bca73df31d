"""The call graph of the code slice a trace touches, with call sites; DOT, GraphML, JSON out."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx


class CallGraph:
    """A directed graph of qualified names ("pkg.mod:Class.method"); each edge keeps its call
    sites as "file:line". Nodes may carry a `kind` (function, class, external) and location."""

    def __init__(self) -> None:
        self.graph: Any = nx.DiGraph()

    def add_function(self, qualname: str, *, kind: str = "function", location: str = "") -> None:
        """Add (or annotate) a node."""
        self.graph.add_node(qualname, kind=kind, location=location)

    def add_call(self, caller: str, callee: str, file: str, line: int) -> None:
        """Record that `caller` calls `callee` at file:line (several sites per edge are kept)."""
        for node in (caller, callee):
            if node not in self.graph:
                self.graph.add_node(node, kind="function", location="")
        site = f"{file}:{line}"
        if self.graph.has_edge(caller, callee):
            sites: list[str] = self.graph.edges[caller, callee]["sites"]
            if site not in sites:
                sites.append(site)
        else:
            self.graph.add_edge(caller, callee, sites=[site])

    def callees(self, qualname: str) -> list[str]:
        return sorted(self.graph.successors(qualname)) if qualname in self.graph else []

    def __len__(self) -> int:
        return int(self.graph.number_of_nodes())

    def to_json(self) -> str:
        """{"nodes": [{id, kind, location}], "edges": [{caller, callee, sites}]}, sorted."""
        nodes = [{"id": n, **self.graph.nodes[n]} for n in sorted(self.graph.nodes)]
        edges = [
            {"caller": a, "callee": b, "sites": list(d["sites"])}
            for a, b, d in sorted(self.graph.edges(data=True), key=lambda e: (e[0], e[1]))
        ]
        return json.dumps({"nodes": nodes, "edges": edges}, indent=2)

    def to_dot(self) -> str:
        """Graphviz DOT; external callees are drawn dashed."""
        lines = ["digraph calls {", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
        for n in sorted(self.graph.nodes):
            style = ', style="dashed"' if self.graph.nodes[n].get("kind") == "external" else ""
            lines.append(f"  {_q(n)} [label={_q(n)}{style}];")
        for a, b, d in sorted(self.graph.edges(data=True), key=lambda e: (e[0], e[1])):
            lines.append(f"  {_q(a)} -> {_q(b)} [tooltip={_q(', '.join(d['sites']))}];")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_graphml(self) -> str:
        """GraphML (sites joined by spaces, since GraphML attributes are scalars)."""
        g = nx.DiGraph()
        for n, d in self.graph.nodes(data=True):
            g.add_node(n, **d)
        for a, b, d in self.graph.edges(data=True):
            g.add_edge(a, b, sites=" ".join(d["sites"]))
        return "\n".join(nx.generate_graphml(g)) + "\n"


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
