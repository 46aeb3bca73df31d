"""The analysis package's shape: small modules, no import cycle, no framework named in its code,
and nothing outside it calling an engine private (issue 17, "Structure")."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2] / "routescope"
ANALYSIS = ROOT / "analysis"
MAX_LINES = 400
# what the rule files name and the engine must not: frameworks, their kernel libraries, models
FRAMEWORK_WORDS = re.compile(
    r"sglang|vllm|flashinfer|sgl_kernel|triton_kernels|deepseek|kimi|glm|qwen|mixtral|gpt_oss",
    re.IGNORECASE,
)


def _modules() -> list[Path]:
    return sorted(ANALYSIS.rglob("*.py"))


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_no_analysis_module_is_over_the_line_limit() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"over {MAX_LINES} lines: {long}"


def test_analysis_code_names_no_framework() -> None:
    """Identifiers and string literals (docstrings included) of routescope/analysis: what is
    framework-specific lives in rules/; comments may cite where an idea came from."""
    hits = []
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NAME, tokenize.STRING) and FRAMEWORK_WORDS.search(tok.string):
                hits.append(f"{path.relative_to(ROOT)}:{tok.start[0]}: {tok.string[:60]!r}")
    assert not hits, "\n".join(hits)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def test_analysis_has_no_import_cycle() -> None:
    """Imports at any level (module top or inside a function): a cycle through a function-level
    import is still a cycle of ideas."""
    names = {_module_name(p): p for p in _modules()}
    graph = nx.DiGraph()
    graph.add_nodes_from(names)
    for name, path in names.items():
        for target in _imports(path):
            if target in names and target != name:
                graph.add_edge(name, target)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {sorted(cycles, key=len)[:5]}"


def test_nothing_outside_analysis_calls_an_engine_private() -> None:
    """Code outside routescope/analysis reads the engine through its public names only."""
    hits = []
    for path in sorted(ROOT.rglob("*.py")):
        if ANALYSIS in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        engine_names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "routescope.analysis"
            ):
                for a in node.names:
                    if a.name.startswith("_"):
                        hits.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports {a.name}")
                    engine_names.add(a.asname or a.name)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in engine_names
            ):
                hits.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not hits, "\n".join(hits)
