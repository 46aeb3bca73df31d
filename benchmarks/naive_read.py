"""The script a user would write instead of routescope: download the framework's wheel, unzip
its Python files and parse the routing slice (layers/moe/ of SGLang) with `ast`. What it
costs is the floor a cold `routescope inspect` is compared with (issue 20: cold no slower than
this). It answers nothing: it reads.

Usage: python benchmarks/naive_read.py sglang==0.5.23   (prints seconds; pip's cache is off)
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from pathlib import Path

SLICE = "sglang/srt/layers/moe/"


def naive(requirement: str) -> tuple[float, int]:
    """Seconds from nothing to every routing module parsed, and how many were parsed."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir",
             "--only-binary", ":all:", "-q", "-d", tmp, requirement],
            check=True, capture_output=True,
        )  # fmt: skip
        (wheel,) = Path(tmp).glob("*.whl")
        parsed = 0
        with zipfile.ZipFile(wheel) as zf, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in zf.namelist():
                if name.startswith(SLICE) and name.endswith(".py"):
                    ast.parse(zf.read(name), filename=name)
                    parsed += 1
    return time.perf_counter() - start, parsed


def main() -> int:
    took, parsed = naive(sys.argv[1] if len(sys.argv) > 1 else "sglang==0.5.23")
    print(f"{took:.2f} s ({parsed} modules parsed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
