"""Which package index to use: pip's own settings, so a company mirror just works."""

from __future__ import annotations

import configparser
import os
from pathlib import Path

DEFAULT_INDEX = "https://pypi.org/simple"


def _config_files() -> list[Path]:
    # pip's order (lowest priority first): global, user, then $PIP_CONFIG_FILE
    xdg_dirs = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(os.pathsep)
    files = [Path(d) / "pip" / "pip.conf" for d in xdg_dirs] + [Path("/etc/pip.conf")]
    home = Path.home()
    xdg_home = Path(os.environ.get("XDG_CONFIG_HOME", home / ".config"))
    files += [home / ".pip" / "pip.conf", xdg_home / "pip" / "pip.conf"]
    env_file = os.environ.get("PIP_CONFIG_FILE")
    if env_file and env_file != os.devnull:
        files.append(Path(env_file))
    return files


def index_url() -> str:
    """The primary index URL: $PIP_INDEX_URL, else pip.conf's index-url, else PyPI."""
    env = os.environ.get("PIP_INDEX_URL")
    if env:
        return env.strip().rstrip("/")
    found: str | None = None
    for path in _config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue  # pip ignores unreadable config files too
        for section in ("global", "download", "install"):
            if parser.has_option(section, "index-url"):
                found = parser.get(section, "index-url")
    return (found or DEFAULT_INDEX).strip().rstrip("/")
