"""Real routing traces -> per-layer logits [L, T, N] or expert ids [L, T, k].

Formats, read from the frameworks' own source (sglang 0.5.23, vllm 0.33.0 wheels):
- SGLang expert-distribution recorder, mode `per_token` (sglang/srt/eplb/expert_distribution.py,
  _DetailAccumulator.dump): torch.save of {"records": [{"forward_mode": int, "rank": int,
  "topk_ids_of_layer": int32 [layers, tokens, 8] of *physical* ids, -1 = unused, ...}],
  "last_physical_to_logical_map": [layers, physical]} in expert_distribution_recorder_*.pt.
  Each record is one forward pass; decode records (ForwardMode.DECODE == 2) are kept when any.
- SGLang recorder modes `stat`/`stat_approx` (_StatAccumulator.dump) keep only per-step
  "logical_count" [steps, layers, N]: no per-token routing, so it cannot be re-batched; refused.
- SGLang routed-experts capture (sglang/srt/state_capturer/routed_experts.py, base.py; the
  detokenizer's _b64_encode_per_request): per request, meta_info["routed_experts"] is base64
  of raw int32 [seq_len-1, num_hidden_layers, top_k] (fused shared columns dropped).
- vLLM routed-experts capture (vllm/model_executor/layers/fused_moe/routed_experts_capturer.py,
  vllm/outputs.py: CompletionOutput.routed_experts [seq_len, layer_num, topk], uint8 when
  N <= 256 else uint16; the OpenAI server sends it as base64 of .npy, utils/serial_utils.py).
- Plain files: .pt/.npy float [T, N] or [L, T, N] router logits; integer [T, L, k] ids as the
  captures above store them (save CompletionOutput.routed_experts with np.save).
Captures cover every hidden layer; a layer whose ids are all 0 was never written (dense) and is
dropped. Requests are interleaved step by step, like a decode batch of concurrent requests.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routescope.errors import RoutescopeError

Tensor = Any
DECODE_MODE = 2  # sglang ForwardMode.DECODE (IntEnum with auto(): EXTEND=1, DECODE=2)


@dataclass(frozen=True, slots=True)
class Trace:
    """logits f32 [L, T, N] or ids int64 [L, T, k] (-1 = no expert); exactly one is set."""

    logits: Tensor | None
    ids: Tensor | None
    note: str


def load_trace(path: str, *, num_layers: int | None, top_k: int) -> Trace:
    """A trace file -> Trace. num_layers/top_k shape SGLang's raw int32 base64 payloads."""
    import numpy as np
    import torch

    p = Path(path)
    if not p.is_file():
        raise RoutescopeError(path, "no such trace file")
    try:
        if p.suffix == ".npy":
            return _from_array(torch.from_numpy(np.load(p, allow_pickle=False)), path)
        if p.suffix == ".json":
            return _from_json(json.loads(p.read_text()), path, num_layers, top_k)
        obj = torch.load(p, map_location="cpu", weights_only=True)
    except (OSError, ValueError, RuntimeError, json.JSONDecodeError) as exc:
        raise RoutescopeError(path, f"cannot read: {exc}") from None
    if isinstance(obj, torch.Tensor):
        return _from_array(obj, path)
    if isinstance(obj, dict) and "records" in obj:
        return _from_sglang_records(obj, path)
    if isinstance(obj, dict) and "logical_count" in obj:
        raise RoutescopeError(
            path,
            "SGLang stat-mode dump has per-step counts only; record "
            "with --expert-distribution-recorder-mode per_token",
        )
    raise RoutescopeError(path, "not a known trace format (see routescope.oea.traces)")


def _from_array(arr: Tensor, path: str) -> Trace:
    if arr.is_floating_point():
        if arr.dim() == 2:
            arr = arr.unsqueeze(0)
        if arr.dim() != 3:
            raise RoutescopeError(
                path, f"logits must be [T, N] or [L, T, N], got {list(arr.shape)}"
            )
        return Trace(arr.float(), None, f"router logits {list(arr.shape)}")
    if arr.dim() == 2:
        arr = arr.unsqueeze(1)
    if arr.dim() != 3:
        raise RoutescopeError(path, f"expert ids must be [T, L, k], got {list(arr.shape)}")
    return _ids_trace([arr.long()], f"routed-experts capture {list(arr.shape)}")


def _ids_trace(per_request: list[Tensor], note: str) -> Trace:
    """Per-request ids [T_r, L, k] -> step-major interleaved [L, T, k], dense layers dropped."""
    import torch

    steps = max(r.shape[0] for r in per_request)
    rows = [r[t] for t in range(steps) for r in per_request if t < r.shape[0]]
    ids = torch.stack(rows).permute(1, 0, 2)  # [L, T, k]
    written = (ids != 0).flatten(1).any(dim=1)
    return Trace(None, ids[written].contiguous(), note)


def _from_sglang_records(obj: dict[str, Any], path: str) -> Trace:
    import torch

    records = obj["records"]
    decode = [r for r in records if r.get("forward_mode") == DECODE_MODE]
    use = decode or records
    if not use:
        raise RoutescopeError(path, "SGLang dump holds no records")
    ids = torch.cat([r["topk_ids_of_layer"].long() for r in use], dim=1)  # [L, T, 8]
    p2l = obj.get("last_physical_to_logical_map")
    if p2l is not None:  # physical -> logical per layer; keep -1 as "no expert"
        p2l = torch.as_tensor(p2l).long()
        mapped = p2l.gather(1, ids.clamp(min=0).flatten(1)).view_as(ids)
        ids = torch.where(ids >= 0, mapped, ids)
    kind = "decode" if decode else "all"
    ids = ids[(ids >= 0).flatten(1).any(dim=1)]  # dense layers are never written (all -1)
    return Trace(None, ids.contiguous(), f"SGLang per_token dump, {len(use)} {kind} passes")


def _from_json(data: Any, path: str, num_layers: int | None, top_k: int) -> Trace:
    import numpy as np
    import torch

    found: list[str] = []
    _collect(data, found)
    if not found:
        raise RoutescopeError(path, "no 'routed_experts' strings in this JSON")
    arrays = []
    for text in found:
        raw = base64.b64decode(text)
        if raw.startswith(b"\x93NUMPY"):  # vLLM: base64 of an .npy file
            arr = np.load(io.BytesIO(raw), allow_pickle=False)
        elif num_layers is None:
            raise RoutescopeError(path, "SGLang routed_experts needs the model's layer count")
        else:  # SGLang: raw int32, [seq_len-1, num_hidden_layers, top_k]
            arr = np.frombuffer(raw, dtype=np.int32).reshape(-1, num_layers, top_k)
        arrays.append(torch.from_numpy(arr.astype(np.int64)))
    return _ids_trace(arrays, f"routed_experts of {len(arrays)} requests")


def _collect(node: Any, out: list[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "routed_experts" and isinstance(value, str):
                out.append(value)
            else:
                _collect(value, out)
    elif isinstance(node, list):
        for item in node:
            _collect(item, out)
