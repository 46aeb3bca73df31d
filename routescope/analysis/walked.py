"""ast.walk, each tree walked once per process: the phases ask the same questions of the same
function bodies (which calls a constructor makes, which function holds a call, which names a
guard reads): the largest trace measured walked 102k nodes to see 19k of them, 5% of its time.
Parsed trees are not changed once made (a lazily parsed body is parsed when first read, which a
walk does), so a tree's nodes stay what they were when first walked."""

from __future__ import annotations

import ast

# id of a node -> (the node, kept so its id stays its own; its nodes in ast.walk's order)
_WALKED: dict[int, tuple[ast.AST, tuple[ast.AST, ...]]] = {}
_SIZE = 16_384  # walks kept (a timeline worker traces release after release: bounded)


def walked(node: ast.AST) -> tuple[ast.AST, ...]:
    """`node` and every node under it, in ast.walk's order."""
    known = _WALKED.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    nodes = tuple(ast.walk(node))
    if len(_WALKED) >= _SIZE:
        _WALKED.clear()
    _WALKED[id(node)] = (node, nodes)
    return nodes
