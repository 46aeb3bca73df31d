"""`routescope timeline MODEL --framework sglang --gpu sm120 [--from V] [--to V]`: a model's
decode path across releases, and the decisions that changed it."""

from __future__ import annotations

import json

import typer

from routescope.cli.options import ENV_HELP, PACKAGE_HELP, QUANT_HELP, SET_HELP, deployment
from routescope.errors import ExitCode, RoutescopeError
from routescope.render import ReportFormat


def timeline(
    model: str = typer.Argument(
        ..., help="Hub id org/name[@revision], a directory, or config.json."
    ),
    framework: str = typer.Option(..., "--framework", help="Framework name, e.g. sglang."),
    gpu: str = typer.Option("sm120", "--gpu", help="GPU profile id or alias."),
    tp: int = typer.Option(1, "--tp", min=1, help="Tensor-parallel size."),
    ep: int | None = typer.Option(None, "--ep", min=1, help="Expert-parallel size."),
    quant: str | None = typer.Option(None, "--quant", help=QUANT_HELP),
    set_: list[str] = typer.Option([], "--set", help=SET_HELP),
    env: list[str] = typer.Option([], "--env", help=ENV_HELP),
    package: list[str] = typer.Option([], "--package", help=PACKAGE_HELP),
    start: str | None = typer.Option(
        None, "--from", help="First release (default: the oldest the rule file has a case for)."
    ),
    end: str | None = typer.Option(None, "--to", help="Last release (default: the newest)."),
    jobs: int | None = typer.Option(
        None, "--jobs", min=1, help="Releases traced at once (default: one per core)."
    ),
    offline: bool = typer.Option(False, "--offline", help="Use only local caches."),
    fmt: ReportFormat = typer.Option(ReportFormat.text, "--format", help="text, json or markdown."),
) -> None:
    """Trace every published final release from --from to --to, print them grouped by decode
    path, and for each change between neighbouring releases the decisions that changed: the
    guard, its value before and after, file:line in both releases.

    Exit 0: every release traced; 2: bad input, or a release could not be traced."""
    from routescope import api, status
    from routescope.analysis.phases.frameworks import load_framework
    from routescope.intake import load_spec
    from routescope.render import timeline as render
    from routescope.source.cache import sort_versions
    from routescope.source.versions import list_versions
    from routescope.timeline import build_timeline, releases_between

    if "==" in framework:
        raise RoutescopeError(f"--framework {framework}", "give the name only; --from/--to pick")
    rules = load_framework(framework.lower())
    if start is None:
        cased = [str(c["version"]) for c in rules.cases if "version" in c]
        start = sort_versions(cased)[0] if cased else None
    published = [v for v, _ in list_versions(rules.data["distribution"], offline=offline)]
    versions = releases_between(rules.id, published, start, end)
    if not versions:
        raise RoutescopeError(f"--from {start} --to {end}", "no final release in that range")
    req = api.InspectRequest(
        model=model, framework=rules.id, gpu=gpu, tp=tp, ep=ep, quant=quant, offline=offline,
        **deployment(set_, env, package),
    )  # fmt: skip
    load_spec(model, offline=offline)  # a bad model fails once, before any trace
    status.enable()  # which releases are traced, on one line of a terminal, cleared after
    try:
        t = build_timeline(req, versions, jobs)
    finally:
        status.clear()
        status.disable()
    if fmt is ReportFormat.json:
        typer.echo(json.dumps(t, indent=2))
    elif fmt is ReportFormat.markdown:
        typer.echo(render.markdown(t), nl=False)
    else:
        typer.echo(render.text(t), nl=False)
    if any(r["status"] == "error" for r in t["releases"]):
        raise typer.Exit(ExitCode.ERROR)


def register(app: typer.Typer) -> None:
    app.command("timeline")(timeline)
