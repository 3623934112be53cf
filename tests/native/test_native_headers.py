"""The kernel files' headers: short, one template, and a figure line that is the committed JSON's.

A header is the file's leading comment block: the lines from the first line of the file up to,
not including, the first line that does not start with `//` (a blank line ends it too). It holds,
in at most 12 lines: the kernel's name and idea (its first line), what changed from the rung
before (`Change`), what limits it (`Limit:`), the command that runs it (`Run:`) and the one that
profiles it (`Profile:`), and one `// Figure (` line that gemmpad.bench.headers writes from the
committed bench JSON (`gemmpad bench report`), so a header nobody regenerated fails here.
History and long explanations live in the folder's NOTES.md and README.md, not in headers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gemmpad.bench import headers, report
from gemmpad.errors import GemmpadError

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"
MAX_LINES = 12

# Files that hold one kernel (or one ladder step) each: the numbered rungs, the fused-MLP designs
# and the training kernels. train.cuh (the engine's overview) carries a generated figure, no template.
KERNELS = sorted([*NATIVE.glob("cpu/gemm/[0-9]*.cpp"), *NATIVE.glob("cuda/gemm/[0-9]*.cu"),
                  *NATIVE.glob("cpu/mlp/mlp_*.cpp"), *NATIVE.glob("cuda/mlp/fused_mlp*.cu"),
                  *NATIVE.glob("cuda/train/forward_l1_*.cu"), *NATIVE.glob("cuda/train/grad_update_*.cu"),
                  NATIVE / "cuda/train/rows.cu", NATIVE / "cuda/train/epoch_persistent.cu"])
PARTS = {"Change": re.compile(r"^// Change\b[^:]*: \S"), "Limit": re.compile(r"^// Limit: \S"),
         "Run": re.compile(r"^// Run: gemmpad bench (gemm|mlp|train) "), "Profile": re.compile(r"^// Profile: \S"),
         "Figure": re.compile(r"^// Figure \([^)]+\): \S")}


def header(path: Path) -> list[str]:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("//"):
            break
        lines.append(line)
    return lines


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return headers.figure_lines(report.DEFAULT_DIRS, report._load, report._run_date, root=ROOT)


def test_the_generator_covers_every_kernel_file():
    covered = set(headers.figure_files(root=ROOT))
    assert {rel(p) for p in KERNELS} <= covered
    assert all((ROOT / f).is_file() for f in covered), sorted(f for f in covered if not (ROOT / f).is_file())


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: str(p.relative_to(NATIVE)))
def test_kernel_header_is_short_and_follows_the_template(path):
    lines = header(path)
    assert 0 < len(lines) <= MAX_LINES, f"{path.name}: header of {len(lines)} lines (at most {MAX_LINES})"
    assert re.match(r"^// \S.*: \S", lines[0]), f"{path.name}: the first line names the kernel and its idea"
    for part, pattern in PARTS.items():
        found = [line for line in lines if pattern.match(line)]
        assert len(found) == 1, f"{path.name}: needs one {part} line, has {len(found)}"
    assert not any("Measured" in line for line in lines), f"{path.name}: a hand-typed figure; the Figure line is generated"


# Rungs whose kernel changed after the committed runs (their old rows were another kernel's and were
# removed): their figure line says "none" until `gemmpad bench gemm` on the H200 is committed.
AWAITING_MEASUREMENT: set[str] = set()


@pytest.mark.parametrize("file", headers.figure_files(root=ROOT), ids=lambda f: f.removeprefix("native/"))
def test_the_figure_line_is_what_the_committed_json_generates(file, generated):
    """A stale figure (a new bench JSON committed, `gemmpad bench report` not run) fails here."""
    line = headers.figure_line((ROOT / file).read_text(encoding="utf-8"), file)
    assert line == generated[file], f"{file}: run `gemmpad bench report` to regenerate it"
    if file in AWAITING_MEASUREMENT:
        assert "none):" in line, f"{file}: measured now: take it off AWAITING_MEASUREMENT"
    else:
        assert "none):" not in line, f"{file}: no committed result holds its kernel"


def test_a_gemm_figure_names_the_row_it_quotes(generated):
    """What the line says is the committed row at the fixed shape: the 07 rung at 4096^3 on the newest card."""
    held = [ROOT / d / headers.GEMM_FILE for d in report.DEFAULT_DIRS if (ROOT / d / headers.GEMM_FILE).is_file()]
    newest = max(held, key=report._run_date)
    row = next(r for r in report._load(newest)["results"]
               if r["kernel"] == "cuda.07_warptile" and (r["M"], r["N"], r["K"]) == (4096, 4096, 4096))
    line = generated["native/cuda/gemm/07_warptile.cu"]
    assert line.endswith(f"4096^3 {row['gflops']:,.0f} GFLOP/s = {row['percent_of_reference']:.1f} % of cuBLAS fp32")
    assert f"{newest.relative_to(ROOT)})" in line


def _fake_checkout(tmp_path: Path, figure: str, h200_date: str = "2026-12-01") -> tuple[Path, list[str]]:
    """A checkout holding one rung whose figure line is `figure`, and an h100 and an h200 result file."""
    rung = tmp_path / "native/cuda/gemm/07_warptile.cu"
    rung.parent.mkdir(parents=True)
    rung.write_text(f"// cuda.07_warptile: warp tiles.\n{figure}\n#include \"x\"\n// Figure (not the header)\n")
    for card, date, gflops in (("h100", "2026-11-27", 46681.2), ("h200", h200_date, 50123.4)):
        d = tmp_path / "assets/benchmarks" / card
        d.mkdir(parents=True)
        row = {"kernel": "cuda.07_warptile", "precision": "fp32", "M": 4096, "N": 4096, "K": 4096,
               "gflops": gflops, "percent_of_reference": 90.04, "reference": "cuBLAS fp32"}
        (d / headers.GEMM_FILE).write_text(
            '{"machine": {"date_utc": "%sT00:00:00+00:00"}, "results": [%s]}' % (date, str(row).replace("'", '"')))
    return rung, ["assets/benchmarks/h200", "assets/benchmarks/h100"]


def test_rewrite_takes_the_newest_run_and_touches_only_the_figure_line(tmp_path, capsys):
    rung, dirs = _fake_checkout(tmp_path, "// Figure (old): 1 GFLOP/s")
    headers.rewrite_headers(dirs, report._load, report._run_date, root=tmp_path)
    assert rung.read_text() == ("// cuda.07_warptile: warp tiles.\n"
                                "// Figure (H200 2026-12-01, assets/benchmarks/h200/bench-gemm.json): "
                                "4096^3 50,123 GFLOP/s = 90.0 % of cuBLAS fp32\n"
                                "#include \"x\"\n// Figure (not the header)\n")
    assert "rewrote the figure line of 1 kernel file: " in capsys.readouterr().out
    headers.rewrite_headers(dirs, report._load, report._run_date, root=tmp_path)  # up to date: nothing to say
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("h200_date, card", [("2026-11-20", "h100"), ("2026-11-27", "h200")])
def test_an_older_run_is_not_quoted_and_a_tie_goes_to_the_first_folder(tmp_path, h200_date, card):
    rung, dirs = _fake_checkout(tmp_path, "// Figure (old): 1 GFLOP/s", h200_date)
    headers.rewrite_headers(dirs, report._load, report._run_date, root=tmp_path)
    assert f"assets/benchmarks/{card}/bench-gemm.json): 4096^3 " in rung.read_text()


def test_a_header_without_its_figure_line_is_a_clear_error(tmp_path):
    rung, dirs = _fake_checkout(tmp_path, "// Measured: typed by hand")
    with pytest.raises(GemmpadError, match=r"07_warptile.cu: its header needs exactly one line starting with"):
        headers.rewrite_headers(dirs, report._load, report._run_date, root=tmp_path)


def test_outside_a_source_checkout_nothing_is_rewritten(tmp_path):
    headers.rewrite_headers(report.DEFAULT_DIRS, report._load, report._run_date, root=tmp_path)  # no native/: no error
    assert not any(tmp_path.iterdir())


def test_the_readme_ladder_table_links_every_rung():
    """The README's ladder table is typed by hand: each numbered file has its row and each row's file exists."""
    readme = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"^\| (?:cpu|cuda)\.\d\d \| \[[^]]+\]\((native/[^)]+)\)", readme, re.M))
    rungs = {str(p.relative_to(ROOT)) for p in [*NATIVE.glob("cpu/gemm/[0-9]*.cpp"), *NATIVE.glob("cuda/gemm/[0-9]*.cu")]}
    assert linked == rungs, f"missing from the README: {sorted(rungs - linked)}; not in the tree: {sorted(linked - rungs)}"
