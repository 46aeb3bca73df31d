"""`routescope inspect MODEL`: the model's routing topology (and, with a framework, its path)."""

from __future__ import annotations

import json

import typer

from routescope import api
from routescope.render import TextOrJson
from routescope.render.spec_json import spec_dict
from routescope.render.spec_text import spec_table
from routescope.render.style import console
from routescope.report import SCHEMA_VERSION


def inspect(
    model: str = typer.Argument(
        ..., help="Hub id org/name[@revision], a directory, or config.json."
    ),
    revision: str | None = typer.Option(
        None, "--revision", help="Hub revision (branch, tag, commit)."
    ),
    offline: bool = typer.Option(False, "--offline", help="Use only the local Hugging Face cache."),
    fmt: TextOrJson = typer.Option(TextOrJson.text, "--format", help="Output format."),
) -> None:
    """Show a model's routing facts, each with where it came from."""
    spec = api.inspect_model(model, offline=offline, revision=revision)
    if fmt is TextOrJson.json:
        doc = {"schema_version": SCHEMA_VERSION, **spec_dict(spec)}
        typer.echo(json.dumps(doc, indent=2))
        return
    out = console()
    out.print(spec_table(spec))
    for note in spec.notes:
        out.print(f"note: {note}", style="dim")


def register(app: typer.Typer) -> None:
    app.command("inspect")(inspect)
