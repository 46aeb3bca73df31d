"""Way-out trials traced beside each other, answered in the order they are asked.

A deployment that is blocked is traced again with each candidate change, in turn, until one is
selected with no blocker (wayout.try_changes, wayout.switch_by_tracing). Each trial is a whole
trace, and they made a blocked answer 10-11 s where a selected one takes 2.5 (SGLang 0.5.23 on
this 2-core machine: four trials). The trials do not depend on one another, so while one is
traced, forked copies of this process (which inherit the opened and parsed source) trace the
next ones. Their reports come back in the order they are asked for, so the answer is the one
tracing them in turn gives; a trial the search does not reach (an earlier one was the way out)
is stopped.

One process per core this process may use. None are forked where fork is not available, inside
a worker of the timeline or a check matrix (those already share the cores out), in a process
running other threads (a library caller's: a forked copy would hold their locks), or with
ROUTESCOPE_JOBS=1: there the trials run one after another, as before. A copy that fails in a
way the search does not expect (anything but a refused value) is traced again here, so the
error surfaces as it would have without the copies.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from routescope import status, timing
from routescope.errors import RoutescopeError

Retrace = Callable[[Any], dict[str, Any]]
MAX_BESIDE = 4  # copies at most: each holds a whole trace's memory


def cores() -> int:
    """Processes a way-out search may run at once: the cores this process may use, or 1."""
    if (
        not hasattr(os, "fork")
        or multiprocessing.parent_process() is not None  # a pool's worker: the pool has them
        or threading.active_count() > 1  # a fork copies one thread: another's lock stays held
    ):
        return 1
    setting = os.environ.get("ROUTESCOPE_JOBS", "").strip()
    if setting.isdigit() and int(setting) >= 1:
        return int(setting)
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # (not on every platform)
        usable = os.cpu_count() or 1
    return max(1, min(usable, _cgroup_cpus() or usable))


def _cgroup_cpus() -> int | None:
    """The CPUs a container's quota allows (cgroup v2 cpu.max: "quota period"), if it sets one:
    the affinity mask still lists every core of the host."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        return -(-int(quota) // int(period)) if quota != "max" else None
    except (OSError, ValueError):
        return None


class _Copy:
    """One trial traced in a forked copy of this process: its report comes back by a pipe."""

    def __init__(self, retrace: Retrace, dep: Any, siblings: list[int]) -> None:
        read, write = os.pipe()
        for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
            stream.flush()
        try:
            pid = os.fork()
        except OSError:  # (no process to be had: the caller traces it here)
            os.close(read)
            os.close(write)
            raise
        if pid == 0:  # the copy: trace, send the outcome, and leave without running exit hooks
            try:
                for fd in (read, *siblings):  # (a sibling's pipe ends when the parent does)
                    os.close(fd)
                _quiet()
                _trace_and_send(retrace, dep, write)
            finally:
                os._exit(0)
        os.close(write)
        self.pid, self._read = pid, read

    def outcome(self) -> tuple[Any, ...] | None:
        """('report', doc, took, rows) or ('refused', subject, message, took, rows); None when
        the copy ended without a readable outcome."""
        chunks = []
        try:
            with open(self._read, "rb", closefd=True) as pipe:
                while chunk := pipe.read(1 << 20):
                    chunks.append(chunk)
        finally:
            self._read = -1  # (closed: its number may be another file's from now on)
        self._reap()
        try:
            got = pickle.loads(b"".join(chunks))  # (written by our own fork, above)
        except Exception:  # it died before writing all of it (killed, out of memory)
            return None
        return got if isinstance(got, tuple) and got and got[0] != "crashed" else None

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        if self._read >= 0:
            with contextlib.suppress(OSError):
                os.close(self._read)
            self._read = -1
        self._reap()

    def _reap(self) -> None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _quiet() -> None:
    """A copy writes nothing to the terminal: the parent's status line says what is traced,
    and a progress bar a copy drew (fetching what its trial reads) would be left behind,
    cursor hidden, when the copy is stopped. What a crash prints travels in its outcome."""
    status.disable()
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)
    os.close(devnull)


def _trace_and_send(retrace: Retrace, dep: Any, write: int) -> None:
    start, at = time.perf_counter(), timing.mark()
    payload: tuple[Any, ...]
    try:
        doc = retrace(dep)
        payload = ("report", doc)
    except RoutescopeError as exc:
        payload = ("refused", exc.subject, exc.message)
    except BaseException:  # traced again in the parent, which then fails as it would have
        payload = ("crashed", traceback.format_exc())
    payload += (time.perf_counter() - start, timing.rows_since(at))
    try:
        data = pickle.dumps(payload)
    except Exception:
        data = pickle.dumps(("crashed", "the report did not pickle"))
    with open(write, "wb", closefd=True) as pipe:
        pipe.write(data)
    sys.stderr.flush()


class TracedAhead:
    """A retrace function for a way-out search that knows the trials it will ask for, in
    order (None: a trial that will not be traced, a value refused before its trace). Asked for
    one, it starts copies for the ones after it (one per spare core), then answers this one
    from its copy, or traces it here. close() stops the copies nobody asked for."""

    def __init__(self, retrace: Retrace, planned: list[Any], label: str) -> None:
        self._retrace = retrace
        self._planned = planned
        self._label = label
        self._asked: set[int] = set()
        self._copies: dict[int, _Copy] = {}
        self._beside = min(cores(), MAX_BESIDE) - 1

    def __call__(self, dep: Any) -> dict[str, Any]:
        i = next((j for j, p in enumerate(self._planned)
                  if j not in self._asked and p is not None and p == dep), None)  # fmt: skip
        if i is None:  # (not planned: traced here)
            return self._retrace(dep)
        self._asked.add(i)
        copy = self._copies.pop(i, None)
        self._start_after(i)
        if copy is None:
            return self._retrace(dep)
        try:
            got = copy.outcome()
        except BaseException:  # (an interrupt while waiting: the copy is stopped with the rest)
            copy.stop()
            raise
        if got is None:  # it failed unexpectedly: the same trial here fails as it would have
            return self._retrace(dep)
        took, rows = got[-2], got[-1]
        timing.adopt(f"{self._label}, in a copy of this process beside it", took, rows)
        if got[0] == "refused":
            raise RoutescopeError(got[1], got[2])
        return got[1]  # type: ignore[no-any-return]

    def _start_after(self, i: int) -> None:
        for j in range(i + 1, len(self._planned)):
            if len(self._copies) >= self._beside:
                return
            if j in self._asked or j in self._copies or self._planned[j] is None:
                continue
            try:
                siblings = [c._read for c in self._copies.values()]
                self._copies[j] = _Copy(self._retrace, self._planned[j], siblings)
            except OSError:  # no more processes to be had: the rest are traced here
                self._beside = 0
                return

    def close(self) -> None:
        for copy in self._copies.values():
            copy.stop()
        self._copies.clear()

    def __enter__(self) -> TracedAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
