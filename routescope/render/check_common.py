"""Shared helpers for the check renderers: display paths and one-line labels."""

from __future__ import annotations

import os
from pathlib import Path

from routescope.check.findings import Finding
from routescope.check.policy import Policy
from routescope.render.markdown import set_env_packages


def shown_path(path: Path) -> str:
    """`path` relative to the working directory (as CI tools expect), else absolute; '/' always."""
    rel = os.path.relpath(path.resolve(), Path.cwd().resolve())
    return (str(path.resolve()) if rel.startswith("..") else rel).replace(os.sep, "/")


def deployment_label(p: Policy) -> str:
    """`sglang==0.5.23, tp=8` plus the EP size, quantization, --set, --env and --package the
    policy gives."""
    parts = [p.framework, f"tp={p.tp}"] + ([f"ep={p.ep}"] if p.ep is not None else [])
    parts += [f"quant={p.quant}"] if p.quant else []
    parts += set_env_packages(dict(p.server_args), dict(p.env), dict(p.packages))
    return ", ".join(parts)


def model_label(model: str) -> str:
    """A short model name: the config file's stem or the hub name, without the revision."""
    name = model.split("@", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return name.removesuffix(".json").removesuffix("config").rstrip("-_.") or model


def title(f: Finding) -> str:
    return f"routescope {f.rule}: {model_label(f.model)} on {f.gpu}"
