"""`routescope source fetch|show|versions|graph`: framework source for a version."""

from __future__ import annotations

from enum import Enum

import typer

source_app = typer.Typer(
    help="Fetch, browse and graph a framework's source (published, checkout or installed).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
OFFLINE = typer.Option(False, "--offline", help="Use the cache only; make no network request.")


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n:,} B"


@source_app.command("fetch")
def fetch_cmd(
    spec: str = typer.Argument(..., help="NAME==VERSION (e.g. sglang==0.5.23) or a directory."),
    everything: bool = typer.Option(False, "--all", help="Every .py file, not just routing."),
    offline: bool = OFFLINE,
) -> None:
    """Make the modules the MoE routing code imports available (cached for offline use)."""
    from routescope.source.fetch import fetch

    report = fetch(spec, everything=everything, offline=offline)
    what = "all modules" if everything else "modules in the routing import closure"
    typer.echo(f"{report.origin}: {report.modules} {what}")
    if report.missing_seeds:
        typer.echo(f"  seeds absent in this version: {', '.join(report.missing_seeds)}")
    share = (
        f" ({report.bytes_transferred / report.wheel_size:.1%} of the wheel)"
        if (report.wheel_size)
        else ""
    )
    typer.echo(
        f"  transferred {_size(report.bytes_transferred)} in {report.requests} requests{share},"
        f" {report.seconds:.1f} s"
    )


@source_app.command("show")
def show_cmd(
    spec: str = typer.Argument(..., help="NAME==VERSION or a directory."),
    qualname: str = typer.Argument(..., help="pkg.module:function or pkg.module:Class.method"),
    offline: bool = OFFLINE,
) -> None:
    """Print a function's source with its file path and real line numbers."""
    from routescope.analysis.index import Index
    from routescope.source import open_source

    index = Index(open_source(spec, offline=offline))
    module, _, name = qualname.partition(":")
    found = index.bindings(module).get(name, []) if name and "." not in name else []
    defs = [b for b in found if b.kind == "def"]
    sym = index.find_function(qualname)
    if sym is not None or not defs:
        sym = sym or index.require_function(qualname)  # exits 2 naming what is missing
        spans = [(index.source(sym), sym.qualname)]
    else:  # `def f` and a rebinding of f under a platform check: each def, the others named
        spans = [(index.source(index.symbol_of(module, b)), f"{module}:{name}") for b in defs]
    typer.echo(f"# {index.tree.origin}")
    for span, what in spans:
        typer.echo(f"# {span.relpath}:{span.first}-{span.last}  ({what})")
        typer.echo(span.numbered())
    relpath = index.relpath(module)
    for b in found:
        if b.kind != "def":
            when = " (conditional)" if b.conditional else ""
            typer.echo(f"# {name} is also bound at {relpath}:{b.line}{when}: "
                       f"{index.line_text(module, b.line)}")  # fmt: skip


@source_app.command("versions")
def versions_cmd(
    name: str = typer.Argument(..., help="Distribution name: sglang, vllm."),
    offline: bool = OFFLINE,
) -> None:
    """List published versions (newest last); `*` marks versions cached for offline use."""
    from routescope.source.versions import list_versions

    for version, cached in list_versions(name, offline=offline):
        typer.echo(f"{'*' if cached else ' '} {version}")


class GraphFormat(str, Enum):
    dot = "dot"
    graphml = "graphml"
    json = "json"


@source_app.command("graph")
def graph_cmd(
    spec: str = typer.Argument(..., help="NAME==VERSION or a directory."),
    root: str = typer.Argument(..., help="pkg.module:function to start from."),
    depth: int = typer.Option(3, "--depth", min=1, max=20, help="Calls deep to follow."),
    fmt: GraphFormat = typer.Option(GraphFormat.dot, "--format", help="Output format."),
    offline: bool = OFFLINE,
) -> None:
    """A best-effort static call graph from ROOT (every call site, no condition evaluated)."""
    from routescope.analysis.calls import build_call_graph
    from routescope.analysis.index import Index
    from routescope.source import open_source

    graph = build_call_graph(Index(open_source(spec, offline=offline)), root, depth)
    out = {"dot": graph.to_dot, "graphml": graph.to_graphml, "json": graph.to_json}[fmt.value]()
    typer.echo(out, nl=False)


def register(app: typer.Typer) -> None:
    app.add_typer(source_app, name="source")
