"""`routescope check` over a 5 model x 3 GPU matrix with a warm cache (wheel members cached).

Each measurement runs in a fresh interpreter (no in-memory AST memo carried over), three runs,
median reported. Compared: the check's matrix (one Index per framework version, each config read
once) against 15 separate api.inspect calls (an Index per call) in one process.
Run: PYTHONPATH=. python benchmarks/bench_check.py [--version 0.5.12] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["zai-org--GLM-5", "deepseek-ai--DeepSeek-V3", "Qwen--Qwen3-30B-A3B",
          "moonshotai--Kimi-K2-Instruct", "mistralai--Mixtral-8x7B-v0.1"]  # fmt: skip
GPUS = ["sm120", "sm100", "sm90"]

MATRIX = """
import sys, time
from pathlib import Path
from routescope.check import load_policy
from routescope.check.matrix import run_matrix
t = time.perf_counter()
cells = run_matrix(load_policy(Path(sys.argv[1])))
print(time.perf_counter() - t, sum(c.report is not None for c in cells))
"""

INSPECT = """
import sys, time
from routescope import api
models, gpus, version = sys.argv[1].split(","), sys.argv[2].split(","), sys.argv[3]
t = time.perf_counter()
n = 0
for m in models:
    for g in gpus:
        api.inspect(api.InspectRequest(model=m, framework="sglang==" + version, gpu=g, tp=8))
        n += 1
print(time.perf_counter() - t, n)
"""


def _time(code: str, *args: str) -> float:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=True, env=None, cwd=ROOT).stdout.split()  # fmt: skip
    return float(out[0])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="0.5.12")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    paths = [str(ROOT / "examples" / "configs" / f"{m}.json") for m in MODELS]
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "routescope.toml"
        policy.write_text(f"models = {json.dumps(paths)}\nframework = \"sglang=={a.version}\"\n"
                          f"gpus = {json.dumps(GPUS)}\ntp = 8\n")  # fmt: skip
        _time(MATRIX, str(policy))  # warm the wheel-member cache
        matrix = [_time(MATRIX, str(policy)) for _ in range(a.runs)]
        inspect = [
            _time(INSPECT, ",".join(paths), ",".join(GPUS), a.version) for _ in range(a.runs)
        ]
    cells = len(MODELS) * len(GPUS)
    print(
        f"sglang=={a.version}, {len(MODELS)} models x {len(GPUS)} GPUs = {cells} cells, warm cache"
    )
    print(
        f"check matrix (shared Index): median {statistics.median(matrix):.2f} s "
        f"({statistics.median(matrix) / cells:.2f} s/cell), runs {[round(x, 2) for x in matrix]}"
    )
    print(
        f"15 x api.inspect:            median {statistics.median(inspect):.2f} s "
        f"({statistics.median(inspect) / cells:.2f} s/cell), runs {[round(x, 2) for x in inspect]}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
