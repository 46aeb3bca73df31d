"""What `inspect` and `report` share: the deployment options' help, and their parsing."""

from __future__ import annotations

from typing import Any

QUANT_HELP = (
    "the framework's own quantization method (SGLang: a --quantization choice such as "
    "fp8, modelopt_fp4), nvfp4 for modelopt_fp4, or bf16; default: the checkpoint's."
)
SET_HELP = "Server argument KEY=VALUE (repeatable)."
ENV_HELP = "Environment variable KEY=VALUE (repeatable)."
PACKAGE_HELP = "Optional package NAME=true|false: whether it imports on the server (repeatable)."


def deployment(set_: list[str], env: list[str], package: list[str]) -> dict[str, Any]:
    """--set, --env and --package as InspectRequest's server_args, env and packages."""
    from routescope import api

    return {
        "server_args": api.parse_assignments(set_, "--set", literal=True),
        "env": api.parse_assignments(env, "--env", literal=False),
        "packages": api.parse_packages(package),
    }
