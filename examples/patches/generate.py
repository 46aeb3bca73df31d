"""Regenerate the example OEA patches: `python examples/patches/generate.py` from the repo root.

tests/patch/test_examples.py fails when a committed patch differs from what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

# (output name, model config, framework==version); all on sm120, tp 8, k0 5, group policy free
CASES = (
    ("glm-5-sglang-0.5.9-sm120.patch", "zai-org--GLM-5.json", "sglang==0.5.9"),
    ("glm-5-sglang-0.5.23-sm120.patch", "zai-org--GLM-5.json", "sglang==0.5.23"),
    ("deepseek-v3-sglang-0.5.23-sm120.patch", "deepseek-ai--DeepSeek-V3.json", "sglang==0.5.23"),
    ("qwen3-30b-a3b-sglang-0.5.23-sm120.patch", "Qwen--Qwen3-30B-A3B.json", "sglang==0.5.23"),
    ("glm-5-vllm-0.33.0-sm120.patch", "zai-org--GLM-5.json", "vllm==0.33.0"),
    ("qwen3-30b-a3b-vllm-0.15.1-sm120.patch", "Qwen--Qwen3-30B-A3B.json", "vllm==0.15.1"),
)


def render(config: str, framework: str) -> str:
    """The patch text for one case (model path relative to the repo root, as committed)."""
    from routescope import api
    from routescope.patch.build import PatchRequest, make_patch

    req = api.InspectRequest(
        model=f"examples/configs/{config}", framework=framework, gpu="sm120", tp=8
    )
    return make_patch(PatchRequest(req, 5, "free")).text


def main() -> int:
    sys.path.insert(0, str(ROOT))
    import os

    os.chdir(ROOT)
    for name, config, version in CASES:
        (HERE / name).write_text(render(config, version))
        print(f"wrote examples/patches/{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
