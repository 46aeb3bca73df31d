"""Generated bad input through the real CLI: every config.json and every flag combination ends
with exit 0 or exit 2 and one line on stderr, never a traceback, each within 10 s.

The configs start from the real routing fields of the shared data file and are broken the ways
real files are: keys dropped or retyped (None, booleans, huge, negative, NaN/Infinity, unicode,
nested), wrappers (`text_config`), model types and architectures of the wrong shape, duplicate
keys, a top level that is not an object, truncated or non-UTF-8 text, a BOM, deep nesting.
One in ten goes through the whole CLI, the rest through intake and the report it calls.
Seeded: 10 chunks of 1,000 configs (`FUZZ_CONFIGS` changes the count; a longer campaign is
`FUZZ_CONFIGS=100000 pytest tests/test_fuzz_inputs.py`)."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import math
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from routescope.cli import main
from routescope.errors import RoutescopeError
from routescope.intake import load_spec
from routescope.report import build_report
from tests.conftest import shared_models

TOTAL = int(os.environ.get("FUZZ_CONFIGS", "10000"))
CHUNKS = 10
LIMIT_S = 10.0  # CPU seconds a single run may spend: a loop that never ends spends them all
WALL_LIMIT_S = 120.0  # a run blocked without spending CPU (a network wait) is cut here
ROUTING_KEYS = [
    "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts",
    "num_experts_per_tok", "moe_topk", "experts_per_token", "n_group", "topk_group",
    "topk_method", "scoring_func", "score_function", "norm_topk_prob", "routed_scaling_factor",
    "n_shared_experts", "num_shared_experts", "first_k_dense_replace", "moe_layer_freq",
    "decoder_sparse_step", "num_hidden_layers", "hidden_size", "moe_intermediate_size",
    "shared_expert_intermediate_size", "quantization_config", "text_config", "ffn_config",
    "model_type", "architectures", "use_routing_bias", "mlp_only_layers",
    # other families' spellings and layouts (ERNIE 4.5, Hunyuan, Step 3, AFMoE)
    "moe_k", "moe_num_shared_experts", "num_shared_expert", "moe_layer_start_index",
    "moe_layer_end_index", "moe_layer_interval", "mlp_layer_types", "moe_layers_enum",
    "num_dense_layers",
]  # fmt: skip
ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 7, 2**70, -(2**63), 1.5, 0.0, -0.0, math.nan, math.inf,
    -math.inf, "", "8", "sigmoid", "softmax", "noaux_tc", "\u0968", "\ud7ff\u00e9", "a" * 5000,
    [], [1, 2], ["x"], {}, {"a": 1}, {"quant_method": None}, {"quant_method": "modelopt"},
    {"quant_method": "fp8", "weight_block_size": [128, "x"]}, [[[[]]]],
]  # fmt: skip


def _mutate(rng: random.Random, cfg: dict[str, Any], types: list[str]) -> Any:
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        keys = list(cfg)
        if op == 0 and keys:
            cfg.pop(rng.choice(keys))
        elif op in (1, 2):
            key = rng.choice(ROUTING_KEYS if op == 1 or not keys else keys)
            cfg[key] = rng.choice(ODD_VALUES)
        elif op == 3:
            cfg = {"architectures": cfg.get("architectures", ["X"]),
                   "model_type": rng.choice(types), "text_config": cfg}  # fmt: skip
        elif op == 4:
            cfg["model_type"] = rng.choice([*types, "", "no_such_type", 5, None])
        elif op == 5:
            cfg["architectures"] = rng.choice([[], "DeepseekV3ForCausalLM", [1], None, [""]])
        else:
            cfg[rng.choice(["\u00fcber", "k" * 300, "", " "])] = rng.choice(ODD_VALUES)
    return cfg


def _text(rng: random.Random, cfg: Any) -> bytes:
    form = rng.randrange(12)
    text = json.dumps(cfg)  # NaN / Infinity as Python writes them
    if form == 0:
        return text[: rng.randrange(len(text) + 1)].encode()  # truncated
    if form == 1 and text.startswith("{") and len(text) > 2:
        return ('{"num_experts_per_tok": 3, ' + text[1:]).encode()  # a duplicate key
    if form == 2:
        return json.dumps(rng.choice([[], "config", 1, None, [cfg]])).encode()
    if form == 3:
        return b"\xef\xbb\xbf" + text.encode()  # a BOM
    if form == 4:
        return text.encode()[:-1] + b"\xff\xfe}"  # not UTF-8
    if form == 5:
        return ("[" * 100_000 + "]" * 100_000).encode()  # nesting deeper than json recurses
    return text.encode()


@pytest.fixture(autouse=True)
def _earlier_heap_frozen() -> Iterator[None]:
    """What earlier tests left on this worker's heap (parsed trees, traces kept in caches) is
    frozen for the campaign: a full collection walking it once ran past a run's limit inside
    a timed run, in CI, twice (11.3 s of wall time; 10 s of CPU), while the run itself takes a
    hundredth of that. A collection now walks only what the campaign allocates."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _overran(signum: int, frame: object) -> None:
    raise TimeoutError(f"over {LIMIT_S} s of CPU or {WALL_LIMIT_S} s of wall time")


@contextlib.contextmanager
def _bounded() -> Iterator[Callable[[], float]]:
    """Cut a run off once it has spent LIMIT_S of CPU (or WALL_LIMIT_S of wall time) instead
    of letting it hang the test (a config with num_hidden_layers = 2**70 once counted its
    layers one by one). CPU, not wall time, is the measure: on a loaded CI machine an argument
    check once stood 11 s in a garbage collection while the other worker traced."""
    handlers = {sig: signal.signal(sig, _overran) for sig in (signal.SIGPROF, signal.SIGALRM)}
    start = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, LIMIT_S)
    signal.setitimer(signal.ITIMER_REAL, WALL_LIMIT_S)
    try:
        yield lambda: time.process_time() - start
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _run(argv: list[str]) -> tuple[int, str, str, float]:
    """One CLI run in this process: its exit code, stdout, stderr and the CPU seconds it took."""
    out, err = io.StringIO(), io.StringIO()
    with _bounded() as spent, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
        took = spent()
    return int(code), out.getvalue(), err.getvalue(), took


def _check(what: str, argv: list[str]) -> int:
    code, out, err, took = _run(argv)
    assert code in (0, 2), (what, code, err[-2000:])
    assert took < LIMIT_S, (what, took)
    assert "Traceback" not in err and "Traceback" not in out, (what, err[-2000:])
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("routescope: error: "), (what, err)
    return code


def _check_api(what: str, path: Path) -> int:
    """intake + report: a RoutescopeError (the CLI's exit 2) with a one-line message, or a
    report; any other exception fails the test (it would be a traceback at the terminal)."""
    code, took = 0, 0.0
    try:
        with _bounded() as spent:
            try:
                build_report(load_spec(str(path), offline=True))
            finally:
                took = spent()
    except RoutescopeError as exc:
        assert "\n" not in f"{exc.subject}: {exc.message}", (what, exc.message)
        code = 2
    # (the timer's exception is lost where it fires inside a collector's callback)
    assert took < LIMIT_S, (what, took)
    return code


@pytest.mark.campaign
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_generated_configs_exit_0_or_2_in_one_line(
    chunk: int, tmp_path: Path, isolated_cache: Path
) -> None:
    base = [dict(m["config"]) for m in shared_models()]
    types = sorted({str(c.get("model_type")) for c in base})
    seen = {0: 0, 2: 0}
    per = TOTAL // CHUNKS
    # the first intake in a process imports transformers' model registry (its lazy structure
    # scans every model folder: seconds on a loaded 2-core box); the limit is for routescope
    warm = tmp_path / "warm.json"
    warm.write_text(json.dumps(base[0]))
    with contextlib.suppress(RoutescopeError):
        build_report(load_spec(str(warm), offline=True))
    for i in range(chunk * per, (chunk + 1) * per):
        rng = random.Random(i)
        cfg = _mutate(rng, json.loads(json.dumps(rng.choice(base))), types)
        path = tmp_path / f"{i}.json"
        path.write_bytes(_text(rng, cfg))
        if i % 10 == 0:  # one in ten through the whole CLI (typer, the renderers, exit codes)
            fmt = rng.choice(["json", "text"])
            seen[_check(f"config #{i}", ["inspect", str(path), "--format", fmt, "--offline"])] += 1
        else:  # the rest through what the CLI calls: intake and the report (a tenth the cost)
            seen[_check_api(f"config #{i}", path)] += 1
        path.unlink()
    assert seen[0] and seen[2], seen  # both kinds of answer were exercised


FLAG_VALUES = {
    "--gpu": ["sm120", "b200", "rtx-5090", "h100", "sm999", "", "SM120", "mi300x"],
    "--tp": ["8", "0", "-1", "x", "1.5", "99999999999999999999"],
    "--ep": ["1", "0", "two"],
    "--quant": ["nvfp4", "fp8", "int3", "", "bf16"],
    "--set": ["disable_cuda_graph=true", "x", "=1", "a=b=c", "moe_runner_backend=triton"],
    "--env": ["SGLANG_X=1", "novalue", "=x"],
    "--package": ["triton_kernels=false", "x=maybe", "y"],
    "--format": ["json", "text", "markdown", "yaml"],
    "--framework": ["sglang==0.5.9", "tgi==1.0", "sglang==notaversion", "sglang=0.5.9", "vllm"],
}


@pytest.mark.campaign
def test_generated_flag_combinations_exit_0_or_2_in_one_line(isolated_cache: Path) -> None:
    """1,000 combinations of inspect's flags, offline with an empty cache (a framework that
    would need fetching exits 2 saying it is not cached): argument checks, never a trace."""
    model = str(Path(__file__).parent.parent / "examples" / "configs" / "zai-org--GLM-5.json")
    seen = {0: 0, 2: 0}
    for i in range(1000):
        rng = random.Random(10_000_000 + i)
        argv = ["inspect", model, "--offline"]
        for flag in rng.sample(sorted(FLAG_VALUES), rng.randint(0, 5)):
            argv += [flag, rng.choice(FLAG_VALUES[flag])]
        if rng.random() < 0.1:
            argv.append(rng.choice(["--brief", "--explain", "--nonsense"]))
        seen[_check(" ".join(argv), argv)] += 1
    assert seen[0] and seen[2], seen
