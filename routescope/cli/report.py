"""`routescope report MODEL... --framework F --gpu G[,G...] -o report.md`: one Markdown file."""

from __future__ import annotations

from pathlib import Path

import typer

from routescope.cli.options import ENV_HELP, PACKAGE_HELP, QUANT_HELP, SET_HELP, deployment
from routescope.fsutil import atomic_write_text


def report(
    models: list[str] = typer.Argument(..., help="Hub ids, directories or config.json files."),
    framework: str = typer.Option(
        ..., "--framework", help="Published framework, e.g. sglang==0.5.9."
    ),
    gpu: str = typer.Option("sm120", "--gpu", help="GPU profile ids or aliases, comma-separated."),
    tp: int = typer.Option(1, "--tp", min=1, help="Tensor-parallel size."),
    ep: int | None = typer.Option(None, "--ep", min=1, help="Expert-parallel size."),
    quant: str | None = typer.Option(
        None,
        "--quant",
        help=QUANT_HELP,
    ),
    set_: list[str] = typer.Option([], "--set", help=SET_HELP),
    env: list[str] = typer.Option([], "--env", help=ENV_HELP),
    package: list[str] = typer.Option(
        [],
        "--package",
        help=PACKAGE_HELP,
    ),
    offline: bool = typer.Option(False, "--offline", help="Use only local caches."),
    output: Path = typer.Option(..., "-o", "--output", help="The Markdown file to write."),
) -> None:
    """Write one Markdown report for several models and GPUs, with a matrix table on top.
    Every deployment option `inspect` takes applies to each model x GPU."""
    from routescope import api
    from routescope.render.report_md import render_matrix

    gpus = [g.strip() for g in gpu.split(",") if g.strip()]
    flags = deployment(set_, env, package)
    docs = [
        api.inspect(
            api.InspectRequest(
                model=m,
                framework=framework,
                gpu=g,
                tp=tp,
                ep=ep,
                quant=quant,
                offline=offline,
                **flags,
            )
        )
        for m in models
        for g in gpus
    ]
    atomic_write_text(output, render_matrix(docs))
    typer.echo(f"wrote {output} ({len(docs)} deployment(s))")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
