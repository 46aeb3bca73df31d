"""`routescope simulate` in-process: text, JSON, SVG, traces and one-line errors."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from routescope.cli import main  # noqa: E402

BASE = ["simulate", "--gpu", "sm120", "--experts", "64", "--top-k", "4", "--steps", "20"]


def test_text_table(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert main([*BASE, "--batch", "1,8", "--k0", "2", "--hidden", "1024",
                 "--moe-intermediate", "512"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "T OEA" in out and "\x1b[" not in out
    assert "3.00 MiB per expert" in out  # 3 * 1024 * 512 * 2 bytes


def test_json_and_svg(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    svg = tmp_path / "t.svg"
    args = [*BASE, "--batch", "1,4,16", "--k0", "1,3", "--format", "json", "--source", "zipf:1.0"]
    assert main([*args, "--plot", str(svg)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema_version"] == 2
    assert [(r["batch"], r["k0"]) for r in data["rows"]] == [
        (b, k) for b in (1, 4, 16) for k in (1, 3)
    ]
    assert all(r["t_oea_mean"] <= r["t_baseline_mean"] for r in data["rows"])
    assert all(0 < r["topk_mass_kept"] <= r["weight_mass_kept"] + 1e-6 for r in data["rows"])
    assert [q["batch"] for q in data["at_quality"]] == [1, 4, 16]
    assert data["rows"][0]["time_baseline_us"] is None  # no sizes given
    text = svg.read_text()
    assert (
        text.startswith("<svg") and text.count("<polyline") == 5
    )  # T: baseline + two k0; quality: two k0


@pytest.mark.parametrize(
    ("args", "subject"),
    [
        pytest.param(["--k0", "5"], "--k0 5", id="k0 above top_k"),
        pytest.param(["--batch", "x"], "--batch x", id="batch not a number"),
        pytest.param(["--quant", "int3"], "--quant int3", id="unknown quantisation"),
        pytest.param(
            ["--k0", "2", "--source", "zipf:abc"], "--source zipf:abc", id="bad zipf exponent"
        ),
        pytest.param(
            ["--k0", "2", "--source", "/nonexistent.pt"], "/nonexistent.pt", id="missing trace"
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(
    args: list[str], subject: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BASE, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"routescope: error: {subject}:") and "\n" not in err


def test_logits_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "logits.pt"
    torch.save(torch.randn(2, 32, 64, generator=torch.Generator().manual_seed(3)), path)
    assert (
        main([*BASE, "--source", str(path), "--batch", "8", "--k0", "2", "--format", "json"]) == 0
    )
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["samples"] == 8 and row["t_oea_mean"] < row["t_baseline_mean"]


def test_vllm_and_sglang_captures_give_the_same_baseline_t(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two requests, 6 decode steps, 3 layers (the first dense: never written), top-4 of 64.
    gen = torch.Generator().manual_seed(0)
    reqs = [torch.stack([torch.stack([torch.randperm(64, generator=gen)[:4] for _ in range(3)])
                         for _ in range(6)]) for _ in range(2)]  # fmt: skip
    for r in reqs:
        r[:, 0, :] = 0
    buf = io.BytesIO()
    np.save(buf, reqs[0].numpy().astype(np.uint8))
    vllm_json = [{"routed_experts": base64.b64encode(buf.getvalue()).decode()}]
    buf = io.BytesIO()
    np.save(buf, reqs[1].numpy().astype(np.uint8))
    vllm_json.append({"routed_experts": base64.b64encode(buf.getvalue()).decode()})
    sglang_json = [{"meta_info": {"routed_experts": base64.b64encode(
        r.numpy().astype(np.int32).tobytes()).decode()}} for r in reqs]  # fmt: skip
    (tmp_path / "v.json").write_text(json.dumps(vllm_json))
    (tmp_path / "s.json").write_text(json.dumps(sglang_json))
    from routescope.oea.traces import load_trace

    v = load_trace(str(tmp_path / "v.json"), num_layers=None, top_k=4)
    s = load_trace(str(tmp_path / "s.json"), num_layers=3, top_k=4)
    assert v.ids is not None and s.ids is not None and torch.equal(v.ids, s.ids)
    assert v.ids.shape == (2, 12, 4)  # dense layer dropped; requests interleaved step by step
    assert v.ids[0, 1].tolist() == reqs[1][0, 1].tolist()
    args = ["--source", str(tmp_path / "v.json"), "--batch", "2", "--k0", "2", "--format", "json"]
    assert main([*BASE, *args]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["t_oea_mean"] is None and 4 < row["t_baseline_mean"] <= 8


def test_sglang_per_token_dump(tmp_path: Path) -> None:
    from routescope.oea.traces import load_trace

    ids = torch.full((2, 4, 8), -1, dtype=torch.int32)
    ids[1, :, :2] = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 0]])
    p2l = torch.tensor([[0, 1, 2, 3, 0]] * 2)  # physical 4 is a replica of logical 0
    ids[1, 0, 2] = 4
    dump = {"records": [{"forward_mode": 2, "rank": 0, "topk_ids_of_layer": ids}],
            "last_physical_to_logical_map": p2l}  # fmt: skip
    torch.save(dump, tmp_path / "expert_distribution_recorder_1.0_0.pt")
    t = load_trace(str(tmp_path / "expert_distribution_recorder_1.0_0.pt"), num_layers=2, top_k=8)
    assert t.ids is not None and t.ids.shape == (1, 4, 8)  # the dense layer (all -1) dropped
    assert t.ids[0, 0, :3].tolist() == [0, 1, 0]


def test_text_table_fits_80_columns_with_no_number_cut(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns the p95s, mass used and experts/tok leave the table (named in the
    caption) rather than every number being cut to "111…"; at 160 every column is there."""
    monkeypatch.setenv("NO_COLOR", "1")
    args = [*BASE, "--batch", "1,64", "--k0", "2", "--hidden", "1024", "--moe-intermediate", "512"]
    monkeypatch.setenv("COLUMNS", "80")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out and "T OEA" in out and "µs OEA" in out and "p95" not in out.split(
        "left out")[0]  # fmt: skip
    assert "left out at this width: T base p95, T OEA p95, mass used," in out
    monkeypatch.setenv("COLUMNS", "160")
    assert main(args) == 0
    wide = capsys.readouterr().out
    assert "T OEA p95" in wide and "experts/tok" in wide and "left out" not in wide


def test_plot_axis_stops_at_n_and_shows_quality(tmp_path: Path) -> None:
    """At a batch where every expert is loaded T reaches N: the axis ends there (a nice ceiling
    past it showed values no layer can take), and the cost is in the plot too: each k0's top-k
    mass kept against the quality target."""
    import re
    import xml.dom.minidom

    svg = tmp_path / "t.svg"
    args = [*BASE, "--batch", "1,64,256", "--k0", "1,3", "--format", "json", "--plot", str(svg)]
    assert main(args) == 0
    text = svg.read_text()
    n = int(re.search(r"N=(\d+)", text).group(1))  # type: ignore[union-attr]
    ticks = [float(v) for v in re.findall(r'text-anchor="end">([\d.]+)</text>', text)]
    t_ticks, q_ticks = ticks[:5], ticks[5:]  # the T panel is drawn first
    assert max(t_ticks) == n and f"N = {n}: every expert" in text  # T saturates at batch 256
    assert "top-k mass kept (%)" in text and "target 95%" in text
    assert len(q_ticks) == 5 and q_ticks[-1] == 100 and q_ticks[0] >= 0
    xml.dom.minidom.parseString(text)  # well-formed
