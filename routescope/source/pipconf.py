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


def _config_value(key: str) -> str | None:
    """`key` from pip.conf: the last file that sets it wins, [install] over [global]."""
    found: str | None = None
    for path in _config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue  # pip ignores unreadable config files too
        for section in ("global", "download", "install"):
            if parser.has_option(section, key):
                found = parser.get(section, key)
    return found


def index_url() -> str:
    """The primary index URL: $PIP_INDEX_URL, else pip.conf's index-url, else PyPI."""
    env = os.environ.get("PIP_INDEX_URL")
    if env:
        return env.strip().rstrip("/")
    return (_config_value("index-url") or DEFAULT_INDEX).strip().rstrip("/")


def extra_index_urls() -> list[str]:
    """pip's extra-index-url list: $PIP_EXTRA_INDEX_URL (even empty), else pip.conf.

    Only http(s) URLs: a file: URL or local path serves no JSON Simple API, so it is skipped.
    """
    raw = os.environ.get("PIP_EXTRA_INDEX_URL")
    if raw is None:
        raw = _config_value("extra-index-url") or ""
    urls = [url.rstrip("/") for url in raw.split()]
    return list(dict.fromkeys(u for u in urls if u.startswith(("http://", "https://"))))


def index_urls() -> list[str]:
    """The indexes to ask, in order: the primary one, then each extra one not already listed."""
    return list(dict.fromkeys([index_url(), *extra_index_urls()]))
