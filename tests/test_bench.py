"""`gemmpad bench`: correctness gate, timings, JSON and tables. Tiny sizes so CI stays fast."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gemmpad

from gemmpad import bench
from tests.cli_helpers import run_cli


def test_bench_gemm_cpu(monkeypatch, capsys, tmp_path):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "17x13x29", "5x100x784", "--kernels", "cpu.01_naive",
                 "--reps", "5", "--budget-s", "0.05", "--out", str(tmp_path))
    assert rc == 0
    assert "| cpu.01_naive | fp32 | 17x13x29 |" in out
    data = json.loads((tmp_path / "bench-gemm.json").read_text())
    assert data["machine"]["versions"]["gemmpad"]
    rows = data["results"]
    assert [(r["M"], r["N"], r["K"]) for r in rows] == [(17, 13, 29), (5, 100, 784)]
    for r in rows:
        assert r["correct"] and r["rel_error"] <= 1e-5
        assert r["ms"] > 0 and r["gflops"] > 0 and r["reference"] == "NumPy" and r["reference_ms"] > 0
    assert (tmp_path / "bench-gemm.png").stat().st_size > 0


def test_bench_gemm_bad_size(monkeypatch, capsys):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "12x12", "--kernels", "cpu.01_naive")
    assert rc == 2
    assert "MxNxK" in err


def test_bench_gemm_huge_size_is_a_clear_error(monkeypatch, capsys):
    """Issue 20, finding 8: 99999999999999999999x1x1 was an internal error (exit 3)."""
    for size in ("99999999999999999999x1x1", "46341x46341x1"):
        rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", size, "--kernels", "cpu.01_naive")
        assert rc == 2 and f"size '{size}': a matrix of over 2,147,483,647 elements" in err


@pytest.mark.parametrize("what", ["gemm", "mlp", "train"])
def test_bench_unwritable_out_fails_before_the_run(monkeypatch, capsys, tmp_path, what):
    (tmp_path / "plain").write_text("a file")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", what, "--out", str(tmp_path / "plain" / "res"))
    assert rc == 2 and out == ""  # nothing measured, so nothing lost
    assert err.startswith("gemmpad: error: --out ") and "cannot write" in err and "Traceback" not in err


def test_bench_mlp_numpy(monkeypatch, capsys, tmp_path):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "mlp", "--kernels", "numpy", "--batches", "1", "3", "--sweep", "1", "2",
                 "--budget-s", "0.01", "--soak", "50", "--out", str(tmp_path))
    assert rc == 0
    assert "| numpy | numpy |" in out
    data = json.loads((tmp_path / "bench-mlp.json").read_text())
    rows = [r for r in data["results"] if r["backend"] == "numpy"]
    assert [r["batch"] for r in rows] == [1, 3]
    for r in rows:
        assert r["correct"] and r["kernel_us"] > 0 and r["e2e_us"] >= r["kernel_us"] * 0.5 and r["reps"] >= 10
    assert {r["batch"] for r in data["sweep"]} == {1, 2}
    (soak,) = [s for s in data["soak"] if s["backend"] == "numpy"] or [None]
    assert soak["calls"] == 50 and soak["rss_end_mb"] > 0
    assert (tmp_path / "bench-mlp.png").stat().st_size > 0


def test_bench_kernels_that_match_nothing_are_an_error(monkeypatch, capsys):
    for what, pattern, message in (("gemm", "nomatch_xyz", "matches no kernel"), ("mlp", "cpu.((", "regular expression")):
        rc, out, err = run_cli(monkeypatch, capsys, "bench", what, "--kernels", pattern)
        assert rc == 2 and out == "" and message in err and "Traceback" not in err


@pytest.mark.skipif(gemmpad.cuda_status().available, reason="checks kernels that cannot run without a GPU")
def test_bench_kernels_that_cannot_run_here_are_an_error(monkeypatch, capsys):
    for what in ("gemm", "mlp"):
        rc, out, err = run_cli(monkeypatch, capsys, "bench", what, "--kernels", "cuda.0[17]")
        assert rc == 2 and out == "" and "none of them can run here" in err


def test_bench_gemm_wrong_kernel_is_not_timed(monkeypatch, capsys, tmp_path):
    """The correctness gate: a kernel that returns zeros is reported wrong, never timed, exit 1."""
    def zeros(a, b, *, kernel=None, out=None, **kw):
        out = np.empty((a.shape[0], b.shape[1]), np.float32) if out is None else out
        out[:] = 0.0
        return out

    monkeypatch.setattr(gemmpad, "gemm", zeros)
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "17x13x29", "--kernels", "cpu.02_blocked_simd",
                           "--out", str(tmp_path))
    assert rc == 1 and "WRONG" in out and "| wrong |" in out
    (row,) = json.loads((tmp_path / "bench-gemm.json").read_text())["results"]
    assert row["correct"] is False and "ms" not in row
    assert not (tmp_path / "bench-gemm.png").exists() and "nothing timed" in out  # no chart of nothing


def test_bench_mlp_wrong_kernel_is_not_timed(monkeypatch, capsys, tmp_path):
    from gemmpad.engine import Classifier

    monkeypatch.setattr(Classifier, "predict", lambda self, x, warmup=0: np.full((len(x), 10), 0.1, np.float32))
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "mlp", "--kernels", "numpy", "--batches", "3", "--sweep",
                           "--out", str(tmp_path))
    assert rc == 1 and "WRONG" in out
    (row,) = [r for r in json.loads((tmp_path / "bench-mlp.json").read_text())["results"] if r["backend"] == "numpy"]
    assert row["correct"] is False and "kernel_us" not in row


def test_sweep_table_names_where_the_gpu_wins():
    """The GPU can win at one batch and lose again at a larger one (CPU threads start): list each."""
    sweep = [{"backend": b, "batch": n, "e2e_us": t} for b, n, t in
             [("cpu", 1, 2.0), ("cpu", 32, 42.0), ("cpu", 64, 13.0), ("cpu", 128, 300.0),
              ("cuda", 1, 10.0), ("cuda", 32, 30.0), ("cuda", 64, 44.0), ("cuda", 128, 70.0)]]
    assert "GPU faster than CPU (end to end) at batch 32, 128." in bench.sweep_table(sweep)
    cpu_only = [r for r in sweep if r["backend"] == "cpu"] + [{"backend": "cuda", "batch": n, "e2e_us": 1e9}
                                                             for n in (1, 32, 64, 128)]
    assert "The CPU is faster end to end at every batch measured." in bench.sweep_table(cpu_only)


@pytest.mark.skipif(gemmpad.cuda_status().available, reason="checks the no-GPU message")
def test_bench_train_without_gpu_says_why(monkeypatch, capsys):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "train", "--parity-epochs", "0")
    assert rc == 2
    assert err.startswith("gemmpad: error:") and "Traceback" not in err


@pytest.mark.gpu
def test_bench_mlp_gpu(monkeypatch, capsys, tmp_path):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "mlp", "--kernels", "cuda.mlp_fused", "cuda.01_naive", "--batches", "1", "300",
                 "--sweep", "--budget-s", "0.02", "--out", str(tmp_path))
    assert rc == 0
    data = json.loads((tmp_path / "bench-mlp.json").read_text())
    kinds = {(r["kernel"], r["batch"]) for r in data["results"] if r.get("kernel_us", 0) > 0}
    assert {("cuda.mlp_fused", 1), ("cuda.01_naive", 300)} <= kinds
    assert data["machine"]["cuda"]["available"]


@pytest.mark.gpu
def test_bench_gemm_gpu(monkeypatch, capsys, tmp_path):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "gemm", "--sizes", "127x97x131", "--kernels", "cuda.01_naive", "--reps", "5",
                 "--out", str(tmp_path))
    assert rc == 0
    (row,) = json.loads((tmp_path / "bench-gemm.json").read_text())["results"]
    assert row["correct"] and row["gflops"] > 0
