"""Ways through a call that return one value and leave one state are one way: a fork whose
branches only log (`if torch.distributed.is_initialized() and rank == 0: logger.info(...)`)
decides nothing. Kept apart, a config built after the call was a different object on each way,
and the loader's 'one object on every way' test failed for a ModelOpt mixed-precision config
(SGLang 0.5.23 logs through log_info_on_rank0 while building it): the MoE layer forked on it."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_engine_lists import _kinds

LOGS = """
        import logging

        logger = logging.getLogger(__name__)

        class Config:
            def __init__(self, fast):
                self.fast = fast

        def log_on_rank0(msg):
            try:
                if torch.distributed.is_initialized() and torch.distributed.get_rank() == 0:
                    logger.info(msg)
            except Exception as e:
                if torch.distributed.is_initialized():
                    logger.info(f"{msg} ({e})")

        def build(seen):
            log_on_rank0("building")
            return Config(True)
"""


def test_a_fork_that_only_logs_is_one_way(tmp_path: Path) -> None:
    body = (
        LOGS
        + """
        def route(x):
            cfg = build(None)
            again = build(None)
            if cfg.fast and again.fast and cfg is not again:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    )
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_ways_that_leave_different_state_stay_apart(tmp_path: Path) -> None:
    body = (
        LOGS
        + """
        class Seen:
            def __init__(self):
                self.rank0 = False

        def mark(seen):
            if torch.distributed.is_initialized():
                seen.rank0 = True
            return None

        def route(x):
            seen = Seen()
            mark(seen)
            if seen.rank0:
                return topk_fast(x)
            return torch.topk(x, 2)
    """
    )
    assert sorted(_kinds(tmp_path, body)) == ["cuda_kernel", "torch"]
