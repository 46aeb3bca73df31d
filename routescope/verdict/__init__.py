"""The OEA verdict: from a report (and the framework source), where OEA fits and under what."""

from routescope.verdict.build import build_verdict

__all__ = ["build_verdict"]
