"""Regenerate examples/simulate/: the terminal tables, JSON and SVG plots of `routescope simulate`.

Run from the repository root with the `sim` extra installed: python examples/simulate/generate.py
Every file is the CLI's own output (seed 0, RTX PRO 6000 profile), written atomically.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "examples" / "simulate"
MODELS = {
    "qwen3-30b-a3b": "examples/configs/Qwen--Qwen3-30B-A3B.json",
    "deepseek-v3": "examples/configs/deepseek-ai--DeepSeek-V3.json",
    "glm-5": "examples/configs/zai-org--GLM-5.json",
}
# a model-free Qwen3-30B-A3B-like router, swept over every k0 for the equal-quality comparison
LIKE = ["--experts", "128", "--top-k", "8", "--k0", "2,3,4,5,6,7,8"]
SOURCES = {"uniform": "uniform", "zipf": "zipf:1.2"}


def simulate(args: list[str]) -> str:
    env = dict(os.environ, COLUMNS="140", NO_COLOR="1", TERM="dumb")
    cmd = [sys.executable, "-m", "routescope", "simulate", *args, "--gpu", "rtx-pro-6000"]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
    return done.stdout


def write(name: str, text: str) -> None:
    tmp = HERE / f".{name}.tmp"
    tmp.write_text(text)
    tmp.replace(HERE / name)
    print(f"wrote examples/simulate/{name}")


def main() -> int:
    for label, source in SOURCES.items():
        for name, config in MODELS.items():
            write(f"{name}-{label}.txt", simulate([config, "--source", source]))
        write(f"qwen3-30b-like-{label}.txt", simulate([*LIKE, "--source", source]))
    plots = [("qwen3-30b-like", LIKE, "uniform"), ("qwen3-30b-like", LIKE, "zipf"),
             ("deepseek-v3", [MODELS["deepseek-v3"]], "zipf")]  # fmt: skip
    for name, args, label in plots:
        svg = HERE / f"{name}-{label}.svg"  # the CLI writes its plot atomically
        out = simulate([*args, "--source", SOURCES[label], "--format", "json", "--plot", str(svg)])
        print(f"wrote examples/simulate/{name}-{label}.svg")
        write(f"{name}-{label}.json", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
