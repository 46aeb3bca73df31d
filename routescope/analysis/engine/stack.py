"""Run a trace on one reserved stretch of CPython's frame stack.

CPython (3.11 on) keeps the frames of Python calls in chunks of a per-thread data stack: a
call that does not fit in the current chunk maps a new one (16 KiB, mmap), and the return
that pops the first frame of a chunk unmaps it. The engine is an interpreter of deep
recursion (an evaluated call is ~10 Python frames), so a loop that evaluates one framework
call after another, its depth crossing a chunk's end on each pass, maps and unmaps a chunk
on every call: the largest trace measured did so 65,000 times, about a third of its 3 s.

`on_reserved_stack` calls its function from a frame that asks for a stack far larger than
it uses: that frame opens a new chunk sized for it (a few MiB of address space; only the
pages frames touch become memory), and everything the function calls stacks above it in the
same chunk, thousands of frames deep before another chunk is needed."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

# (measured: the largest trace, strace: 64,919 munmaps of 16,384 bytes in one run; a pass of
# its hottest loop 39 us, 6 us with the reserve; Python 3.10 keeps frames as heap objects, so
# it has no chunks to thrash and the reserve is only a larger frame there)

# slots (pointers) the reserving frame asks for: CPython sizes the new chunk to the next
# power-of-two multiple of 16 KiB above 8 * (slots + 1000) bytes, so 2**18 slots open a
# 4 MiB chunk of which half, ~262k slots, is left to the frames above it
RESERVED_SLOTS = 2**18

F = TypeVar("F", bound=Callable[..., Any])


def _reserving(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return fn(*args, **kwargs)


# (a larger co_stacksize than the code needs is only a larger frame: nothing reads past the
# slots the code uses, and the unused ones are never written, so never made resident; where
# the frame becomes an object (a traceback through it, sys._getframe) CPython allocates its
# size for it, 2 MiB, written only under -X dev / PYTHONMALLOC=debug)
_reserving.__code__ = _reserving.__code__.replace(
    co_stacksize=max(_reserving.__code__.co_stacksize, RESERVED_SLOTS)
)


def on_reserved_stack(fn: F) -> F:
    """`fn`, run with the frames it calls in one reserved chunk (see the module docstring)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _reserving(fn, args, kwargs)

    return wrapper  # type: ignore[return-value]
