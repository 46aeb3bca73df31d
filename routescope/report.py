"""The versioned report: what every renderer reads."""

from __future__ import annotations

# Bump the major part on any change that removes or renames a field.
SCHEMA_VERSION = "1.0"
