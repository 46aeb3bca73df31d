"""Shared test setup: network tests cache real wheels under <repo>/.cache between runs."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# set before any test runs so that network tests reuse fetched wheels between runs
os.environ.setdefault("ROUTESCOPE_CACHE", str(REPO / ".cache" / "routescope-test"))
