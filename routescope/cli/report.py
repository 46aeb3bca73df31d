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
    from routescope.errors import RoutescopeError
    from routescope.render.report_md import render_matrix

    gpus = [g.strip() for g in gpu.split(",") if g.strip()]
    flags = deployment(set_, env, package)
    docs: list[dict[str, object]] = []
    failed: list[tuple[str, RoutescopeError]] = []  # (the model, why it was not traced)
    for m in models:
        for g in gpus:
            req = api.InspectRequest(model=m, framework=framework, gpu=g, tp=tp, ep=ep,
                                     quant=quant, offline=offline, **flags)  # fmt: skip
            try:
                docs.append(api.inspect(req))
            except RoutescopeError as exc:
                if exc.subject.startswith("-"):
                    raise  # a flag every deployment shares: one line, no report
                # one model this release cannot trace (a registry without its architecture):
                # the others are still reported, this one says why in its row
                failed.append((m, exc))
                docs.append({"model": {"ref": m}, "gpu": g, "tp": tp, "error": str(exc)})
    if len(failed) == len(docs):
        raise failed[0][1]  # nothing was traced: the first reason, on one line
    atomic_write_text(output, render_matrix(docs))
    typer.echo(f"wrote {output} ({len(docs)} deployment(s))")
    if failed:  # the input at fault is the model: said first, with the report written
        model, first = failed[0]
        raise RoutescopeError(
            model,
            f"{first}; {len(failed)} of {len(docs)} deployment(s) could not be traced, and "
            f"{output} says why for each",
        )


def register(app: typer.Typer) -> None:
    app.command("report")(report)
