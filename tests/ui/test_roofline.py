"""The roofline's arithmetic (gemmpad.bench.roofline) and the committed figures the Lab tab plots:
exact values for shapes whose answer is known by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemmpad.bench import roofline

ROOT = Path(__file__).resolve().parents[2]


def test_work_bytes_and_intensity_of_known_shapes() -> None:
    assert roofline.flops(4096, 4096, 4096) == 2 * 4096**3 == 137_438_953_472
    # fp32: A, B and C of 4096^2 floats each; fp16 halves A and B, C stays float32
    assert roofline.min_bytes(4096, 4096, 4096, "fp32") == 3 * 4096**2 * 4
    assert roofline.min_bytes(4096, 4096, 4096, "fp16") == 4096**2 * (2 + 2 + 4)
    assert roofline.intensity(4096, 4096, 4096, "fp16") == 1024.0
    assert roofline.intensity(4096, 4096, 4096, "fp32") == 2 * 4096 / 12
    assert roofline.intensity(4096, 4096, 4096, "fp8") == 2 * 4096**3 / (4096**2 * 6)
    assert roofline.min_bytes(1, 100, 784, "tf32") == (784 + 78_400) * 4 + 100 * 4
    assert roofline.achieved(4096, 4096, 4096, 2.0) == 4096**3


def test_the_mlp_layers_at_a_batch() -> None:
    assert roofline.layer_shapes(32) == [(32, 100, 784), (32, 100, 100), (32, 10, 100)]
    assert roofline.mlp_flops(1) == 2 * (784 * 100 + 100 * 100 + 100 * 10) == 178_800
    # the input, weights and biases, the ten probabilities, four bytes each
    assert roofline.mlp_min_bytes(1) == 4 * (784 + 78_500 + 10_100 + 1_010 + 10) == 361_616


def test_roofs_and_ridge() -> None:
    h200 = roofline.card_for("NVIDIA H200")
    assert h200 is not None and h200.bandwidth_gbs == 4800.0 and h200.peak_tflops["fp32"] == 67.0
    assert roofline.ridge(4800.0, 67.0) == 67e12 / 4.8e12
    assert roofline.roof(1.0, 4800.0, 67.0) == 4.8e12  # under the ridge: bytes limit
    assert roofline.roof(1000.0, 4800.0, 67.0) == 67e12  # over it: the arithmetic units


@pytest.mark.parametrize("device, card", [
    ("NVIDIA H200", "H200"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB"), ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"), ("NVIDIA L4", "L4"), ("NVIDIA L40S", "L40S"), ("Tesla T4", "T4"),
    ("NVIDIA A10", "A10"), ("NVIDIA A10G", None), ("NVIDIA GeForce GTX 1080", None), ("", None),
])
def test_cards_are_matched_by_whole_words(device: str, card: str | None) -> None:
    """"L4" is not the L40S, "A10" not the A100: a card not in the table gets no datasheet roof."""
    found = roofline.card_for(device)
    assert (found.name if found else None) == card


def test_the_best_bandwidth_is_the_fastest_bytes_moved() -> None:
    slow = roofline.gemm_point("a", "fp32", 4096, 4096, 4096, 1.0)
    fast = roofline.gemm_point("b", "fp32", 1, 100, 784, 1e-6)
    want = roofline.min_bytes(1, 100, 784, "fp32") / 1e-6 / 1e9
    assert roofline.best_bandwidth_gbs([slow, fast]) == pytest.approx(want, rel=1e-12)
    assert roofline.best_bandwidth_gbs([]) is None


def test_the_shipped_figures_are_the_committed_bench_runs() -> None:
    """app/gemmpad/bench/lab_figures.json (shipped: the wheel has no assets/) is what the newest committed
    bench-gemm.json and bench-mlp.json hold: a new bench run needs `gemmpad bench report`."""
    folder = ROOT / "assets" / "benchmarks" / "h200"
    gemm = json.loads((folder / "bench-gemm.json").read_text(encoding="utf-8"))
    mlp = json.loads((folder / "bench-mlp.json").read_text(encoding="utf-8"))
    assert json.loads(roofline.FIGURES.read_text(encoding="utf-8")) == roofline.figures_from(gemm, mlp), (
        "app/gemmpad/bench/lab_figures.json is out of date: run gemmpad bench report")
    shipped = roofline.committed()
    assert shipped["device"] == "NVIDIA H200" and shipped["date"] == gemm["machine"]["date_utc"][:10]
    ref = next(r for r in shipped["gemm"] if r["kernel"] == "cuda.07_warptile" and r["m"] == 4096 == r["k"])
    (row,) = [r for r in gemm["results"] if (r["kernel"], r["M"], r["N"], r["K"]) == ("cuda.07_warptile", 4096, 4096, 4096)]
    assert roofline.achieved(4096, 4096, 4096, ref["ms"] / 1e3) == pytest.approx(row["gflops"] * 1e9, rel=1e-4)
