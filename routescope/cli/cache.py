"""`routescope cache info|clear`: the fetched framework sources and parsed files."""

from __future__ import annotations

import typer

cache_app = typer.Typer(
    help="Inspect or clear routescope's cache.", no_args_is_help=True, rich_markup_mode=None
)


@cache_app.command("info")
def info_cmd() -> None:
    """Where the cache is, its size, and the framework versions usable offline."""
    from routescope.source.cache import cache_info

    info = cache_info()
    typer.echo(f"cache: {info.root}")
    typer.echo(f"size: {info.total_bytes / 1e6:.1f} MB in {info.blob_count} cached files")
    from routescope.tracecache import traces_root

    reports = list(traces_root().glob("*/*.json")) if traces_root().is_dir() else []
    typer.echo(f"reports cached: {len(reports)} (ROUTESCOPE_TRACE_CACHE=0 turns this off)")
    if not info.releases:
        typer.echo("versions cached: none")
    for name, version in info.releases:
        typer.echo(f"  {name}=={version}")


@cache_app.command("clear")
def clear_cmd() -> None:
    """Delete everything in the cache (it is rebuilt on demand)."""
    from routescope.source.cache import clear_cache

    freed = clear_cache()
    typer.echo(f"cleared {freed / 1e6:.1f} MB")


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")
