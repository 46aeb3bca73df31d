"""Run a command as a user runs it and say what it cost: wall seconds and peak memory.

Peak memory is the kernel's own account (`wait4`'s ru_maxrss): the largest resident set of the
process and of every process it waited for (a timeline's workers), so "peak" is the largest
single process, which is what the 1 GB per trace budget is about (Linux: kilobytes).

Each benchmark first compiles routescope's own modules to bytecode (`as_installed`), as `pip
install` of the wheel does: an editable install writes it on first import, unless
PYTHONDONTWRITEBYTECODE is set, as it is on the machine the README's figures come from; there,
without this, every process compiled routescope's ~200 modules again (0.25-0.3 s a process).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measured:
    seconds: float
    peak_mb: float  # the largest process, MiB
    returncode: int
    stdout: str
    stderr: str


def as_installed(root: Path, python: str) -> None:
    """The checkout at `root` with its bytecode compiled, as an installed wheel has it."""
    subprocess.run([python, "-m", "compileall", "-q", str(root / "routescope")], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def run_measured(argv: list[str], cwd: Path, env: dict[str, str]) -> Measured:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    got: dict[str, str] = {}

    def drain(name: str) -> None:
        stream = getattr(proc, name)
        got[name] = stream.read()
        stream.close()

    readers = [threading.Thread(target=drain, args=(n,)) for n in ("stdout", "stderr")]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(proc.pid, 0)  # reaps it: its own and its children's peak
    seconds = time.perf_counter() - start
    for r in readers:
        r.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Measured(seconds, usage.ru_maxrss / 1024, proc.returncode, got["stdout"],
                    got["stderr"])  # fmt: skip
