"""`routescope report MODEL... --framework F --gpu G[,G...] -o report.md`: one Markdown file."""

from __future__ import annotations

from pathlib import Path

import typer

from routescope import api
from routescope.fsutil import atomic_write_text
from routescope.render.report_md import render_matrix


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
        help=(
            "the framework's own quantization method (SGLang: a --quantization choice such as "
            "fp8, modelopt_fp4), nvfp4 for modelopt_fp4, or bf16; default: the checkpoint's."
        ),
    ),
    set_: list[str] = typer.Option([], "--set", help="Server argument KEY=VALUE (repeatable)."),
    env: list[str] = typer.Option([], "--env", help="Environment variable KEY=VALUE (repeatable)."),
    package: list[str] = typer.Option(
        [],
        "--package",
        help="Optional package NAME=true|false: whether it imports on the server (repeatable).",
    ),
    offline: bool = typer.Option(False, "--offline", help="Use only local caches."),
    output: Path = typer.Option(..., "-o", "--output", help="The Markdown file to write."),
) -> None:
    """Write one Markdown report for several models and GPUs, with a matrix table on top.
    Every deployment option `inspect` takes applies to each model x GPU."""
    gpus = [g.strip() for g in gpu.split(",") if g.strip()]
    server_args = api.parse_assignments(set_, "--set", literal=True)
    env_vars = api.parse_assignments(env, "--env", literal=False)
    packages = api.parse_packages(package)
    docs = [
        api.inspect(
            api.InspectRequest(
                model=m,
                framework=framework,
                gpu=g,
                tp=tp,
                ep=ep,
                quant=quant,
                server_args=server_args,
                env=env_vars,
                packages=packages,
                offline=offline,
            )
        )
        for m in models
        for g in gpus
    ]
    atomic_write_text(output, render_matrix(docs))
    typer.echo(f"wrote {output} ({len(docs)} deployment(s))")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
