"""gemmpad.bench.report: the tables, and the README blocks rewritten between their markers."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

import pytest

from gemmpad.bench import headers, report, roofline
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


def test_a_shape_the_reference_cannot_run_shows_no_ratio():
    """cuBLAS fp8 takes only K and N that are multiples of 16: the kernel's GFLOP/s stand alone and
    no reference row or ratio is made up for that shape."""
    row = {"kernel": "cuda.18_wgmma_fp8", "device": "cuda", "precision": "fp8", "M": 256, "N": 100, "K": 784,
           "ms": 0.01, "gflops": 4014.1, "reference": "cuBLAS fp8", "reference_ms": None, "reference_gflops": None,
           "percent_of_reference": None, "rel_error": 0.03}
    timed = dict(row, M=4096, N=4096, K=4096, gflops=900000.0, reference_ms=0.1, reference_gflops=1200000.0,
                 percent_of_reference=75.0)
    summary = report.gemm_summary([row, timed])
    assert "| `cuda.18_wgmma_fp8` | fp8 | 4,014 | 900,000 (75.0%) |" in summary
    assert "| cuBLAS fp8 (reference) | fp8 | — | 1,200,000 |" in summary
    assert "none at this shape | — | 0.03 | — |" in report.gemm_table([row])
    assert report.gemm_table([dict(timed, error_vs_bound=0.012)]).endswith("| 75.0% | 0.03 | 0.012 |")


COMMITTED = Path(__file__).resolve().parents[2] / "assets" / "benchmarks" / "h200"


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
    """The README's tables (the GEMM and training tables beside their kernels) are `gemmpad bench
    report` byte for byte: a figure edited by hand, or a result file committed without regenerating
    the READMEs, fails here."""
    root = COMMITTED.parent.parent.parent
    dirs = []
    for d in report.DEFAULT_DIRS:  # the same layout: the captions link relative to each README
        shutil.copytree(root / d, tmp_path / d)
        dirs.append(str(tmp_path / d))
    readmes = [Path("README.md"), Path("native/cuda/gemm/README.md"), Path("native/cuda/train/README.md")]
    for r in readmes:
        (tmp_path / r).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / r, tmp_path / r)
    assert report.run(argparse.Namespace(dir=dirs, readme=[str(tmp_path / r) for r in readmes])) == 0
    for r in readmes:
        assert (tmp_path / r).read_bytes() == (root / r).read_bytes(), r
    top = (root / "README.md").read_text()
    assert "bench:train" not in top and "bench:gemm" not in top  # one home per table, beside its kernels


def test_each_table_comes_from_the_first_folder_that_holds_its_file(monkeypatch, capsys, tmp_path):
    """--dir repeats: a newer card's GEMM run stands beside an older card's MLP run, each table
    captioned with its own run."""
    newer, older = tmp_path / "h100", tmp_path / "h200"
    newer.mkdir()
    older.mkdir()
    gemm = json.loads((COMMITTED / "bench-gemm.json").read_text())
    gemm["machine"]["date_utc"] = "2030-01-02T03:04:05+00:00"
    (newer / "bench-gemm.json").write_text(json.dumps(gemm))
    for name in ("bench-gemm.json", "bench-mlp.json"):
        shutil.copy(COMMITTED / name, older / name)
    readme = tmp_path / "README.md"
    readme.write_text("<!-- bench:gemm begin -->\n<!-- bench:gemm end -->\n<!-- bench:mlp begin -->\n<!-- bench:mlp end -->\n")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(newer), "--dir", str(older),
                           "--readme", str(readme))
    assert rc == 0, err
    gemm_block, mlp_block = readme.read_text().split("<!-- bench:mlp begin -->")
    assert "2030-01-02" in gemm_block and "h100/bench-gemm.json" in gemm_block
    mlp_date = json.loads((COMMITTED / "bench-mlp.json").read_text())["machine"]["date_utc"][:10]
    assert mlp_date in mlp_block and "h200/bench-mlp.json" in mlp_block


def test_each_readme_gets_the_blocks_it_holds_and_a_file_with_none_is_refused(monkeypatch, capsys, tmp_path):
    for name in ("bench-gemm.json", "train.json"):
        shutil.copy(COMMITTED / name, tmp_path / name)
    top, notes = tmp_path / "README.md", tmp_path / "sub" / "NOTES.md"
    notes.parent.mkdir()
    top.write_text("<!-- bench:gemm begin -->\n<!-- bench:gemm end -->\n")
    notes.write_text("<!-- bench:train begin -->\n<!-- bench:train end -->\n")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path),
                           "--readme", str(top), "--readme", str(notes))
    assert rc == 0, err
    assert "cuda.07_warptile" in top.read_text() and "epoch" not in top.read_text()
    assert "(../train.json)" in notes.read_text() and "cuda.07_warptile" not in notes.read_text()
    stray = tmp_path / "stray.md"
    stray.write_text("no markers here\n")
    before = top.read_text()
    top.write_text(before.replace("| `cuda.07", "| `stale.07"))
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path),
                           "--readme", str(top), "--readme", str(stray))
    assert rc == 2 and "stray.md: holds no bench block" in err
    assert "stale.07" in top.read_text()  # nothing written when one file is wrong


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


def test_a_kernels_8bit_rows_are_their_own_rows_and_never_its_figure():
    """The 8-bit path's rows keep the kernel's name with "input": "uint8": the tables show them as
    "<kernel> · uint8", and the header figures and the Lab's whole-pass figures quote the float rows."""
    rows = [{"backend": "cuda", "kernel": "cuda.mlp_fused", "precision": "fp32", "batch": 1, "kernel_us": 6.0,
             "e2e_us": 11.0},
            {"backend": "cuda", "kernel": "cuda.mlp_fused", "precision": "fp32", "batch": 1, "kernel_us": 8.0,
             "e2e_us": 13.0, "input": "uint8"},
            {"backend": "torch", "kernel": "torch CUDA graph", "precision": "fp32", "batch": 1, "kernel_us": 15.0,
             "e2e_us": 50.0}]
    summary = report.mlp_summary(rows)
    assert "| `cuda.mlp_fused` | cuda | 6.0 / 11.0 |" in summary and "| `cuda.mlp_fused · uint8` | cuda | 8.0 / 13.0 |" in summary
    assert "| cuda | cuda.mlp_fused · uint8 | 8.0 / 13.0 |" in report.mlp_table(rows)
    data = {"machine": {"date_utc": "2026-11-29T17:00:00", "cuda": {"device": "NVIDIA H200"}}, "results": rows}
    line = headers._mlp_line(headers.Mlp("cuda.mlp_fused", "torch CUDA graph", 1), iter([("h200", data)]))
    assert "cuda.mlp_fused 6.0 / 11.0 us" in line
    assert [r["kernel_us"] for r in roofline.figures_from(None, data)["mlp"]] == [6.0]
    report.validate("mlp", data)
    data["results"][1]["input"] = "int4"
    with pytest.raises(ValueError, match=r"results\[1\]\.input"):
        report.validate("mlp", data)


def test_mlp_tables_show_each_kernels_agreement_with_fp32():
    rows = [{"backend": "cuda", "kernel": "cuda.18_wgmma_fp8", "precision": "fp8", "batch": b, "kernel_us": 1.0,
             "e2e_us": 2.0, "agrees_with_fp32": 0.9871} for b in (1, 16)]
    rows.append({"backend": "numpy", "kernel": "numpy", "precision": "fp32", "batch": 1, "kernel_us": 1.0,
                 "e2e_us": 2.0, "agrees_with_fp32": True})  # not a share: shown as unmeasured
    summary = report.mlp_summary(rows)
    assert "agrees with fp32" in summary.splitlines()[0] and "| 98.71 % |" in summary
    full = report.mlp_table(rows)
    assert "agrees with fp32" in full.splitlines()[0] and full.splitlines()[-1].endswith("| — |")


def test_the_newest_run_wins_whatever_the_folder_order(monkeypatch, capsys, tmp_path):
    old, new = tmp_path / "a", tmp_path / "b"
    for d, date in ((old, "2026-01-01T00:00:00+00:00"), (new, "2026-12-01T00:00:00+00:00")):
        d.mkdir()
        gemm = json.loads((COMMITTED / "bench-gemm.json").read_text())
        gemm["machine"]["date_utc"] = date
        (d / "bench-gemm.json").write_text(json.dumps(gemm))
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(old), "--dir", str(new))
    assert rc == 0, err
    assert "2026-12-01" in out and "2026-01-01" not in out


def test_readme_that_is_a_fifo_or_a_device_is_refused_not_read(monkeypatch, capsys, tmp_path):
    """Issue 40 #4: `--readme FIFO` hung, `--readme /dev/zero` read until memory ran out."""
    from tests.hostile_files import fifo

    shutil.copy(COMMITTED / "train.json", tmp_path / "train.json")
    pipe = tmp_path / "README.md"
    done = fifo(pipe)
    try:
        for readme in (str(pipe), "/dev/zero"):
            rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path), "--readme", readme)
            assert rc == 2 and "not a regular file" in err and len(err.splitlines()) == 1, err
    finally:
        done.set()


def _gemm_row(**changes: object) -> dict:
    row = {"kernel": "cuda.07_warptile", "precision": "fp32", "M": 256, "N": 100, "K": 784, "ms": 0.01, "gflops": 500.0,
           "reference": "cuBLAS fp32", "reference_gflops": 600.0, "percent_of_reference": 83.3, "rel_error": 1e-7}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not ...}  # ... drops the field


# Issue 40 #12: 7 of 11 such files were internal errors (KeyError 'M', TypeError, AttributeError).
MALFORMED_GEMM = {
    "no M": {"results": [_gemm_row(M=...)]},
    "M a string": {"results": [_gemm_row(M="256")]},
    "M a bool": {"results": [_gemm_row(M=True)]},
    "M negative": {"results": [_gemm_row(M=-1)]},
    "row a list": {"results": [[1, 2, 3]]},
    "machine a list": {"machine": ["x"], "results": [_gemm_row()]},
    "cuda a string": {"machine": {"cuda": "yes"}, "results": [_gemm_row()]},
    "runtime a string": {"machine": {"cuda": {"available": True, "runtime_version": "abc"}}, "results": [_gemm_row()]},
    "gflops NaN": {"results": [_gemm_row(gflops=float("nan"))]},
    "gflops huge": {"results": [_gemm_row(gflops=1e308)]},
    "percent a string": {"results": [_gemm_row(percent_of_reference="83")]},
    "no gflops": {"results": [_gemm_row(gflops=...)]},
    "kernel with a pipe": {"results": [_gemm_row(kernel="a|b")]},
    "kernel with a backtick": {"results": [_gemm_row(kernel="a`b")]},
    "kernel with a marker": {"results": [_gemm_row(kernel="<!-- bench:gemm end -->")]},
    "kernel with a newline": {"results": [_gemm_row(kernel="a\n| x |")]},
    "too many sizes": {"results": [_gemm_row(M=m) for m in range(1, 100)]},
    "60 levels": {"machine": {"cuda": json.loads("[" * 58 + "]" * 58)}, "results": [_gemm_row()]},
}


def test_malformed_result_files_are_one_line_errors_and_write_nothing(monkeypatch, capsys, tmp_path):
    readme = tmp_path / "README.md"
    before = "top\n<!-- bench:gemm begin -->\nkept\n<!-- bench:gemm end -->\nbottom\n"
    readme.write_text(before)
    for case, data in MALFORMED_GEMM.items():
        (tmp_path / "bench-gemm.json").write_text(json.dumps(data))
        rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path), "--readme", str(readme))
        assert rc == 2 and ("not a gemmpad bench result" in err or "not a valid result file" in err), (case, err)
        assert len(err.splitlines()) == 1 and "internal error" not in err, (case, err)
        assert readme.read_text() == before, case
    mlp = {"results": [{"backend": "cuda", "kernel": "cuda.mlp_fused", "batch": 1, "kernel_us": 5.0}]}  # e2e_us missing
    (tmp_path / "bench-mlp.json").write_text(json.dumps(mlp))
    (tmp_path / "bench-gemm.json").unlink()
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path))
    assert rc == 2 and "kernel_us and e2e_us go together" in err


def test_hostile_text_in_result_files_cannot_break_the_readme(monkeypatch, capsys, tmp_path):
    """Free text (the machine's names, the reference's) is escaped: no HTML, no broken table, no extra
    marker; and the file stays usable for the next run (before, every later run refused it)."""
    hostile = "<script>alert(1)</script> | `x` [a](b) <!-- bench:gemm end -->\n| row |\x1b[2J"
    data = {"machine": {"cpu": hostile, "date_utc": "2026-11-29", "versions": {"numpy": hostile},
                        "cuda": {"available": True, "device": hostile, "multiprocessors": 132}},
            "results": [_gemm_row(reference=hostile), _gemm_row(M=512)]}
    (tmp_path / "bench-gemm.json").write_text(json.dumps(data))
    odd = tmp_path / "run ) [x] <!-- bench:gemm begin -->"  # the link to the JSON, from --dir
    odd.mkdir()
    (odd / "bench-gemm.json").write_text(json.dumps(data))
    readme = tmp_path / "README.md"
    readme.write_text("top\n<!-- bench:gemm begin -->\n<!-- bench:gemm end -->\nbottom\n")
    for d in (tmp_path, odd, odd):
        rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(d), "--readme", str(readme))
        assert rc == 0, err
        text = readme.read_text()
        assert text.count("<!-- bench:gemm begin -->") == 1 and text.count("<!-- bench:gemm end -->") == 1
        assert "<script" not in text and "\x1b" not in text and "| row |" not in text
        block = text.split("<!-- bench:gemm begin -->")[1].split("<!-- bench:gemm end -->")[0]
        rows = [line for line in block.splitlines() if line.startswith("|")]
        assert len({len(re.findall(r"(?<!\\)\|", line)) for line in rows}) == 1, rows  # every row: same columns
        assert text.startswith("top\n") and text.endswith("bottom\n")


def test_every_kernels_agreement_is_named_under_the_mlp_table():
    """Issue 40: the share of MNIST test digits each rung reads as fp32 does, per rung, in the README:
    the summary table holds a few rows, the sentence under it every kernel."""
    rows = [{"backend": "cuda", "kernel": k, "precision": "x", "batch": b, "kernel_us": 1.0, "e2e_us": 2.0,
             "agrees_with_fp32": a} for k, a in (("cuda.18_wgmma_fp8", 0.9985), ("cuda.11_wgmma_bf16", 0.9999),
                                                 ("cuda.07_warptile", 1.0), ("cuda.mlp_fused", 1.0)) for b in (1, 16)]
    rows.append({"backend": "torch", "kernel": "torch eager", "batch": 1, "kernel_us": 1.0, "e2e_us": 2.0})
    line = report.agreement_line(rows)
    assert "99.85 % `cuda.18_wgmma_fp8`; 99.99 % `cuda.11_wgmma_bf16`; 100.00 % the other 2." in line
    assert report.agreement_line([{"backend": "numpy", "kernel": "numpy", "batch": 1}]) == ""


def test_a_lone_kernel_in_full_agreement_is_named_not_counted():
    """One kernel at 100 % read "100.00 % all 1." (alone) or "100.00 % the other 1." (after others): named as
    the others are."""
    def row(kernel: str, agrees: float) -> dict:
        return {"backend": "cuda", "kernel": kernel, "batch": 1, "kernel_us": 1.0, "e2e_us": 2.0,
                "agrees_with_fp32": agrees}

    assert report.agreement_line([row("cuda.mlp_fused", 1.0)]).endswith(": 100.00 % `cuda.mlp_fused`.")
    line = report.agreement_line([row("cuda.18_wgmma_fp8", 0.9985), row("cuda.mlp_fused", 1.0)])
    assert line.endswith(": 99.85 % `cuda.18_wgmma_fp8`; 100.00 % `cuda.mlp_fused`.")
    line = report.agreement_line([row("cuda.07_warptile", 1.0), row("cuda.mlp_fused", 1.0)])
    assert line.endswith(": 100.00 % all 2.")


def test_the_readme_gets_a_roofline_drawn_from_the_gemm_results(monkeypatch, capsys, tmp_path):
    """Under the GEMM table, a roofline PNG drawn (with Pillow: matplotlib is optional) beside the JSON
    it comes from, and linked relative to the README; printed tables (no README) draw nothing."""
    from PIL import Image

    shutil.copy(COMMITTED / "bench-gemm.json", tmp_path / "bench-gemm.json")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path))
    assert rc == 0, err
    assert not (tmp_path / report.ROOFLINE).exists() and "roofline" not in out
    docs = tmp_path / "docs"
    docs.mkdir()
    readme = docs / "README.md"
    readme.write_text("<!-- bench:gemm begin -->\n<!-- bench:gemm end -->\n")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "report", "--dir", str(tmp_path), "--readme", str(readme))
    assert rc == 0, err
    png = tmp_path / report.ROOFLINE
    with Image.open(png) as img:
        assert img.format == "PNG" and img.size == (1400, 860)
        # the H200's ceilings in their precisions' colours, and the rungs' dots
        colours = {c for _, c in img.convert("RGB").getcolors(1 << 20)}
    assert set(report.PRECISION_COLOURS.values()) <= colours
    block = readme.read_text().split("<!-- bench:gemm end -->")[0]
    table_end = block.rindex("|")
    assert block.index("![Roofline of every rung") > table_end and "](../roofline.png)" in block
