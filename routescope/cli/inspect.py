"""`routescope inspect MODEL`: the model's routing facts and, with a framework, its decode path."""

from __future__ import annotations

import json

import typer

from routescope import status
from routescope.cli.options import ENV_HELP, PACKAGE_HELP, QUANT_HELP, SET_HELP, deployment
from routescope.errors import ExitCode, RoutescopeError
from routescope.render import ReportFormat


def inspect(
    model: str = typer.Argument(
        ..., help="Hub id org/name[@revision], a directory, or config.json."
    ),
    framework: str | None = typer.Option(
        None, "--framework", help="Published framework, e.g. sglang==0.5.23."
    ),
    framework_src: str | None = typer.Option(
        None, "--framework-src", help="A framework checkout or unpacked tree."
    ),
    gpu: str | None = typer.Option(
        None, "--gpu", help="GPU profile id or alias (see `routescope gpus`); default sm120."
    ),
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
    revision: str | None = typer.Option(
        None, "--revision", help="Hub revision (branch, tag, commit)."
    ),
    offline: bool = typer.Option(
        False, "--offline", help="Use only local caches (hub and framework source)."
    ),
    fmt: ReportFormat = typer.Option(
        ReportFormat.text, "--format", help="text (the answer first), json, or markdown."
    ),
    explain: bool = typer.Option(
        False, "--explain", help="After the answer: the model table, every decision and constraint."
    ),
    brief: bool = typer.Option(False, "--brief", help="One line per answer."),
) -> None:
    """Show a model's routing facts and, with --framework, which top-k path runs during decode.

    Exit 0: one path selected (or no --framework); 2: bad input, or the answer is not one path
    (forked, unknown, or set-up that did not finish: the output says which)."""
    from routescope import api
    from routescope.render import text_summary
    from routescope.render.spec_text import spec_table
    from routescope.render.style import console
    from routescope.render.text_report import render_dispatch

    flags = deployment(set_, env, package)  # a malformed flag is named before anything else
    if framework is None and framework_src is None:
        given = [flag for flag, on in (("--gpu", gpu is not None), ("--tp", tp != 1),
                                       ("--ep", ep is not None), ("--quant", quant is not None),
                                       ("--set", bool(set_)), ("--env", bool(env)),
                                       ("--package", bool(package))) if on]  # fmt: skip
        if given:  # a deployment without a framework to deploy on would be silently ignored
            raise RoutescopeError(
                " ".join(given),
                "describes a deployment: give --framework NAME==VERSION (e.g. sglang==0.5.23); "
                "without it inspect shows the model's routing facts only",
            )
    req = api.InspectRequest(
        model=model, framework=framework, framework_src=framework_src, gpu=gpu or "sm120",
        tp=tp, ep=ep,
        quant=quant, offline=offline, revision=revision, **flags,
    )  # fmt: skip
    status.enable()  # what it is tracing, on one line of a terminal, cleared before the answer
    try:
        spec, doc = api.inspect_with_spec(req)
    finally:
        status.clear()
        status.disable()  # (a library caller's traces in this process after it: no line)
    # blocked is decided too: the deployment certainly stops, where the answer says
    decided = doc.get("dispatch", {}).get("status", "selected") in ("selected", "blocked")
    if fmt is not ReportFormat.text:
        if fmt is ReportFormat.json:
            typer.echo(json.dumps(doc, indent=2))
        else:  # the report's own renderer, for one model (its routing facts without a framework)
            from routescope.render.markdown import render

            typer.echo(render(doc), nl=False)
        if not decided:
            raise typer.Exit(ExitCode.ERROR)
        return
    out = console()
    if "dispatch" not in doc:  # no framework: the model's routing facts are the answer
        out.print(spec_table(spec))
        return
    if brief:
        typer.echo(text_summary.brief(doc))
    else:
        for line in text_summary.summary(doc, out.width):
            out.print(line)
    if explain and not brief:
        out.print()
        out.print(spec_table(spec))
        out.print()
        out.print(render_dispatch(doc))
    if not decided:  # forked, unknown or provisional: the answer is shown, and it is not one
        raise typer.Exit(ExitCode.ERROR)


def register(app: typer.Typer) -> None:
    app.command("inspect")(inspect)
