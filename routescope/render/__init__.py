"""Renderers: each output format is a pure `render(report) -> str` in its own module."""

from __future__ import annotations

from enum import Enum


class TextOrJson(str, Enum):
    text = "text"
    json = "json"


class ReportFormat(str, Enum):
    """inspect's formats: the terminal's, JSON, or the Markdown report of one model."""

    text = "text"
    json = "json"
    markdown = "markdown"
