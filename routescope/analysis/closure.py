"""The modules a framework's MoE routing code can import: the import closure of seed modules."""

from __future__ import annotations

from dataclasses import dataclass

from routescope.analysis.index import Index
from routescope.analysis.namespace import scan_imports
from routescope.errors import RoutescopeError
from routescope.rules import load_rule_file, rules_dir
from routescope.source.stream import open_stream


@dataclass(frozen=True, slots=True)
class Seeds:
    """Seed modules of one framework (rules/frameworks/<name>.seeds.toml)."""

    framework: str
    package: str  # the closure stays inside this top-level package
    modules: tuple[str, ...]
    packages: tuple[str, ...]  # every module below these, when present


@dataclass(frozen=True, slots=True)
class Closure:
    """The result: modules in the closure, seeds this version lacks, fetch rounds taken."""

    modules: tuple[str, ...]
    missing_seeds: tuple[str, ...]
    rounds: int


def load_seeds(framework: str) -> Seeds:
    """Read and validate the seed file for `framework` (rules/frameworks/<name>.seeds.toml)."""
    path = rules_dir() / "frameworks" / f"{framework}.seeds.toml"
    if not path.is_file():
        known = sorted(p.name.split(".")[0] for p in path.parent.glob("*.seeds.toml"))
        raise RoutescopeError(framework, f"no seed modules known; known: {', '.join(known)}")
    data = load_rule_file(path, "seeds")
    return Seeds(
        data["framework"],
        data["package"],
        tuple(data["modules"]),
        tuple(data.get("packages", ())),
    )


def _with_parents(index: Index, name: str) -> list[str]:
    # importing a.b.c runs a/__init__.py and a/b/__init__.py first
    parts = name.split(".")
    return [p for i in range(1, len(parts) + 1) if index.has_module(p := ".".join(parts[:i]))]


def import_closure(index: Index, seeds: Seeds) -> Closure:
    """Every module of `seeds.package` reachable by imports (top level, conditional, or inside
    functions) from the seeds. Each file is scanned as it arrives and the modules it imports
    are requested at once, so fetching and scanning overlap (routescope.source.stream).

    Recall matters more than precision: a module left out is still fetched on demand later.
    """
    start: set[str] = set()
    missing = []
    for mod in seeds.modules:
        if index.has_module(mod):
            start.update(_with_parents(index, mod))
        else:
            missing.append(mod)
    for pkg in seeds.packages:
        below = [m for m in index.module_names() if m == pkg or m.startswith(pkg + ".")]
        if not below:
            missing.append(pkg)
        for m in below:
            start.update(_with_parents(index, m))
    prefix = seeds.package + "."
    module_at = {index.relpath(m) or "": m for m in start}
    asked = set(start)
    imports: dict[str, set[str]] = {}
    with open_stream(index.tree) as stream:
        stream.want(sorted(module_at))
        for relpath, data in stream:  # in arrival order: new requests leave while others fly
            mod = module_at[relpath]
            # a line scan, not ast.parse: parsing all of vllm's closure takes 30 s here
            text = data.decode("utf-8", errors="replace")
            found = imports[mod] = set()
            for imp in scan_imports(text, mod, relpath.endswith("__init__.py")):
                if imp == seeds.package or imp.startswith(prefix):
                    found.update(_with_parents(index, imp))
            new = {index.relpath(m) or "": m for m in found - asked}
            asked |= found
            module_at.update(new)
            stream.want(sorted(new))
    return Closure(tuple(sorted(imports)), tuple(missing), _levels(start, imports))


def _levels(start: set[str], imports: dict[str, set[str]]) -> int:
    """Breadth-first levels from the seeds: the fetch rounds a round-by-round walk needs."""
    levels, seen, frontier = 0, set(start), set(start)
    while frontier:
        levels += 1
        frontier = {m for f in frontier for m in imports.get(f, ()) if m not in seen}
        seen |= frontier
    return levels
