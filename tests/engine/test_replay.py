"""engine/replay.py: a decode traced on one way through a build is replayed on another way only
when that way holds the same for everything the trace read; each test below builds two ways
that differ in one thing and checks the replay against tracing the second way for real."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.replay import Replay
from routescope.analysis.engine.state import RECORDING, PathState, Reads
from routescope.analysis.engine.values import Const, Value
from routescope.analysis.phases.trace import TracedPath, resolve_entry, trace_call
from tests.engine.test_engine_synthetic import make_tree

# two ways through the build: the unknown env var forks it (no decision tells them apart)
BUILD = """
import functools
import os

@functools.cache
def mode():
    if os.environ.get("MODE"):
        return 1
    return 2

def adder(k):
    return lambda y: y + k

class Layer:
    def __init__(self):
        k, ten = 4, 10
        self.spare = ten
        if os.environ.get("WAY"):
            self.unused = 1
            self.read = ten
        else:
            self.unused = 2
            self.read = ten if os.environ.get("SAME") else 20
        self.k = k
        self.ways_mode = mode() if os.environ.get("CALLS") else 0
        self.add = adder(k)  # a closure made after the forks: its frame is each way's own

def build():
    return Layer()
"""


def _ways(tmp_path: Path, decode: str) -> tuple[Engine, list[tuple[PathState, Value]]]:
    engine = Engine(make_tree(tmp_path, {"main.py": BUILD + decode}), Facts())
    built = trace_call(engine, resolve_entry(engine, "fw.main:build"), [], {})
    ways = [(p.end, p.value) for p in built if p.end is not None and p.value is not None]
    assert len(ways) > 1
    return engine, ways


def _decode(engine: Engine, st: PathState, layer: Value) -> tuple[list[TracedPath], Reads]:
    fn = resolve_entry(engine, "fw.main:decode")
    reads = Reads()
    RECORDING.append(reads)
    try:
        return trace_call(engine, fn, [layer, Const(1)], {}, start=st), reads
    finally:
        RECORDING.pop()


def _results(paths: list[TracedPath]) -> list[object]:
    return sorted((repr(p.value.value) if isinstance(p.value, Const) else p.result) for p in paths)


def _check(tmp_path: Path, decode: str) -> list[tuple[bool, bool]]:
    """For each ordered pair of ways (A, B): (the trace on A replays on B, B's own trace
    gives what A's gave)."""
    engine, ways = _ways(tmp_path, decode)
    traced = [_decode(engine, st, layer) for st, layer in ways]
    out = []
    for i, (sa, la) in enumerate(ways):
        for j, (sb, lb) in enumerate(ways):
            if i == j:
                continue
            holds = Replay(sa, sb, traced[i][1]).holds((la,), (lb,))
            same = _results(traced[j][0]) == _results(traced[i][0])
            assert same or not holds, f"way {i}'s trace replayed on way {j}, which differs"
            out.append((holds, same))
    return out


def test_ways_that_differ_in_what_the_decode_never_reads_replay(tmp_path: Path) -> None:
    decode = """
def decode(layer, x):
    return layer.add(x) + layer.k
"""
    got = _check(tmp_path, decode)
    assert any(holds for holds, _ in got)  # the closure's frames pair up, `unused` is unread


def test_a_field_the_decode_reads_tells_the_ways_apart(tmp_path: Path) -> None:
    decode = """
def decode(layer, x):
    return layer.read + x
"""
    got = _check(tmp_path, decode)
    assert (False, False) in got  # read = 20 on one way: traced again
    assert (True, True) in got  # read = 10 on both: replayed


def test_a_field_one_path_writes_before_reading_is_read_as_it_was(tmp_path: Path) -> None:
    # one path of the decode overwrites `read` (with the very value another way built) and
    # reads it back, another path reads it as built: what the replay compares is the field as
    # built, never the value a path wrote
    decode = """
import os
def decode(layer, x):
    if os.environ.get("OVERWRITE"):
        layer.read = layer.spare
        return layer.read
    return layer.read
"""
    got = _check(tmp_path, decode)
    assert (False, False) in got


def test_a_memo_filled_differently_on_the_ways_is_not_replayed(tmp_path: Path) -> None:
    decode = """
def decode(layer, x):
    return mode() + x
"""
    got = _check(tmp_path, decode)
    assert (False, False) in got  # mode() cached as 1 on one way, 2 on another
    assert all(same for holds, same in got if holds)
