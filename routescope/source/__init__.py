"""Framework source for a version: a published wheel (read by range), a checkout, or installed.

Everything here reads files; nothing imports or runs framework code (DESIGN.md, decision 1).
"""

from __future__ import annotations

from routescope.source.open import open_installed, open_source
from routescope.source.tree import Metadata, SourceTree

__all__ = ["Metadata", "SourceTree", "open_installed", "open_source"]
