"""Regenerate the example reports: `python examples/reports/generate.py` from the repo root.

tests/render/test_example_reports.py fails when a committed report differs from what this
writes. Each is what `routescope report MODEL... --framework F --gpu G[,G] --tp 8 -o FILE` writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

# (output name, models, sglang version, GPUs); TP 8, the checkpoints' own precision. A model is
# a file of examples/configs, or a published checkpoint's directory under examples/
CASES = (
    ("glm-5-sglang-0.5.9-sm120.md", ("zai-org--GLM-5.json",), "0.5.9", ("sm120",)),
    ("glm-5-sglang-0.5.23-sm120.md", ("zai-org--GLM-5.json",), "0.5.23", ("sm120",)),
    (
        "deepseek-v3-qwen3-30b-a3b-sglang-0.5.23-sm120-sm100.md",
        ("deepseek-ai--DeepSeek-V3.json", "Qwen--Qwen3-30B-A3B.json"),
        "0.5.23",
        ("sm120", "sm100"),
    ),
    (  # NVIDIA's NVFP4 GLM-5 on a DGX Spark (blocked, with its way out) and on a B300
        "glm-5-nvfp4-sglang-0.5.23-sm121-sm103.md",
        ("checkpoints/nvidia--GLM-5-NVFP4",),
        "0.5.23",
        ("sm121", "sm103"),
    ),
)


def render(configs: tuple[str, ...], version: str, gpus: tuple[str, ...]) -> str:
    """The report text for one case (model paths relative to the repo root, as committed)."""
    from routescope import api
    from routescope.render.report_md import render_matrix

    docs = [
        api.inspect(api.InspectRequest(model=f"examples/{c if '/' in c else 'configs/' + c}",
                                       framework=f"sglang=={version}", gpu=g, tp=8))
        for c in configs
        for g in gpus
    ]  # fmt: skip
    return render_matrix(docs)


def main() -> int:
    import os

    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    for name, configs, version, gpus in CASES:
        (HERE / name).write_text(render(configs, version, gpus))
        print(f"wrote examples/reports/{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
