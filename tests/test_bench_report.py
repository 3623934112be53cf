"""gemmpad.bench.report: the tables, and the README blocks rewritten between their markers."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from gemmpad.bench import report
from tests.cli_helpers import run_cli


def test_sweep_table_names_where_the_gpu_wins():
    """The GPU can win at one batch and lose again at a larger one (CPU threads start): list each."""
    sweep = [{"backend": b, "batch": n, "e2e_us": t} for b, n, t in
             [("cpu", 1, 2.0), ("cpu", 32, 42.0), ("cpu", 64, 13.0), ("cpu", 128, 300.0),
              ("cuda", 1, 10.0), ("cuda", 32, 30.0), ("cuda", 64, 44.0), ("cuda", 128, 70.0)]]
    assert "GPU faster than CPU (end to end) at batch 32, 128." in report.sweep_table(sweep)
    cpu_only = [r for r in sweep if r["backend"] == "cpu"] + [{"backend": "cuda", "batch": n, "e2e_us": 1e9}
                                                             for n in (1, 32, 64, 128)]
    assert "The CPU is faster end to end at every batch measured." in report.sweep_table(cpu_only)


COMMITTED = Path(__file__).resolve().parent.parent / "assets" / "benchmarks" / "h200"


def test_report_regenerates_the_readme_tables_from_committed_json(monkeypatch, capsys, tmp_path):
    """Without a GPU: the committed JSON's summary tables between the markers, the rest of the file untouched."""
    for name in ("bench-gemm.json", "bench-mlp.json", "train.json"):
        shutil.copy(COMMITTED / name, tmp_path / name)
    readme = tmp_path / "README.md"
    before = ("# x\n<!-- bench:gemm begin -->\n<!-- bench:gemm end -->\nmiddle\n<!-- bench:mlp begin -->\nstale\n"
              "<!-- bench:mlp end -->\n<!-- bench:train begin -->\n<!-- bench:train end -->\nend\n")
    readme.write_text(before)
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path), "--readme", str(readme))
    assert rc == 0, err
    text = readme.read_text()
    assert text.startswith("# x\n") and "\nmiddle\n" in text and text.endswith("<!-- bench:train end -->\nend\n")
    assert "stale" not in text
    gemm_rows = json.loads((tmp_path / "bench-gemm.json").read_text())["results"]
    timed = next(r for r in gemm_rows if "ms" in r)
    assert f"{timed['percent_of_reference']:.1f}%" in text  # a figure from the JSON, not typed
    machine = json.loads((tmp_path / "bench-gemm.json").read_text())["machine"]
    assert machine["nvidia_smi"]["driver_version"] in text and machine["date_utc"][:10] in text
    assert "| `cuda.mlp_fused` | cuda |" in text and "(bench-mlp.json)" in text
    native = next(r for r in json.loads((tmp_path / "train.json").read_text())["results"] if r["engine"] == "native")
    assert f"{native['epoch_ms_median']:,.1f} ms" in text and "(train.json)" in text
    rc2, _, _ = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path), "--readme", str(readme))
    assert rc2 == 0 and readme.read_text() == text  # regenerating changes nothing


def test_the_readme_holds_what_the_committed_json_generates(tmp_path, capsys):
    """The README's tables are `gemmpad bench report --readme README.md` byte for byte: a figure
    edited by hand, or a result file committed without regenerating the README, fails here."""
    root = COMMITTED.parent.parent.parent
    results = tmp_path / COMMITTED.relative_to(root)  # the same layout: the captions link relative to the README
    shutil.copytree(COMMITTED, results)
    shutil.copy(root / "README.md", tmp_path / "README.md")
    assert report.run(argparse.Namespace(dir=str(results), readme=str(tmp_path / "README.md"))) == 0
    assert (tmp_path / "README.md").read_bytes() == (root / "README.md").read_bytes()


def test_report_without_results_says_so(monkeypatch, capsys, tmp_path):
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path))
    assert rc == 2 and "no bench-gemm.json or bench-mlp.json or train.json" in err
    for text in ("{not json", "[" * 100_000 + "]" * 100_000):  # deep nesting was RecursionError (issue 20, 8)
        (tmp_path / "bench-gemm.json").write_text(text)
        rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path))
        assert rc == 2 and "not a valid result file" in err and "internal error" not in err


def test_mlp_summary_keeps_each_backends_fastest_layer_by_layer_kernel():
    rows = [{"backend": "cuda", "kernel": k, "batch": 1, "kernel_us": t, "e2e_us": t} for k, t in
            (("cuda.01_naive", 90.0), ("cuda.07_warptile", 30.0), ("cuda.mlp_fused", 6.0))]
    rows.append({"backend": "cuda", "kernel": "cuda.02_coalesced", "batch": 1, "correct": False})
    table = report.mlp_summary(rows)
    assert "cuda.07_warptile` | cuda, layer by layer | 30.0 / 30.0" in table and "cuda.01_naive" not in table
    assert "| `cuda.mlp_fused` | cuda | 6.0 / 6.0 |" in table and "cuda.02_coalesced" not in table
