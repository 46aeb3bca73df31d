"""What a value's origin names: a place in the framework's source (`vllm/envs.py:1214`), or a
fact of the deployment (a key of config.json, the GPU profile, a flag, an environment
variable). The stop analysis and the blockers' evidence both ask; this module imports nothing
of either, so the report path does not pull in the engine."""

from __future__ import annotations

import re

_IN_SOURCE = re.compile(r"[\w./-]+\.py:\d+")


def in_source(origin: str) -> bool:
    """Is the origin a place in the source (a default written there), not a deployment fact?"""
    return _IN_SOURCE.fullmatch(origin) is not None
