"""The kernel files' headers (one template, figures that are the committed benchmark JSON's) and
the README's ladder table that links them.

A header's "Measured:" figure is typed by hand next to the code; the README's tables are
generated. This keeps the two from drifting apart: every figure a header states in one of the
forms below must round to the committed result it names.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "assets" / "benchmarks"
# The card whose committed GEMM results a header quotes: the folder it names (h200 unless it names another).
GEMM_FILE = re.compile(r"assets/benchmarks/(h100|h200)/bench-gemm\.json")
NATIVE = ROOT / "native"

# Files that hold one kernel (or one ladder step) each, in the folders the template covers.
KERNELS = sorted([*NATIVE.glob("cpu/gemm/[0-9]*.cpp"), *NATIVE.glob("cuda/gemm/[0-9]*.cu"),
                  NATIVE / "cpu/mlp/mlp_sparse.cpp", *NATIVE.glob("cuda/mlp/fused_mlp*.cu"),
                  *NATIVE.glob("cuda/train/forward_l1_*.cu"), *NATIVE.glob("cuda/train/grad_update_*.cu"),
                  NATIVE / "cuda/train/rows.cu"])
WITH_FIGURES = [*KERNELS, NATIVE / "cuda/train/train.cuh"]

GEMM = re.compile(r"(\d+\^3|\d+x\d+x\d+) ([\d,.]+) GFLOP/s = ([\d.]+) % of (NumPy|cuBLAS (?:fp32|fp16|tf32|bf16|fp8))")
MLP = re.compile(r"Measured at batch (\d+), kernel / end to end: (.+?) \((?:the H200's host; )?"
                 r"assets/benchmarks/h200/bench-mlp\.json\)")
MLP_ITEM = re.compile(r"(?:^|, )([^,]+?) ([\d.]+) / ([\d.]+) us")
TRAIN = re.compile(r"Measured: (?:an epoch of 60,000 images )?([\d.]+) (?:us per launch|ms) at batch (\d+), "
                   r"([\d.]+)(?: ms)? at batch (\d+) \(native (fp32|mixed), (\w+) in assets/benchmarks/h200/train\.json\)")


def header_lines(path: Path) -> list[str]:
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    return lines


def header_text(path: Path) -> str:
    return re.sub(r"\s+", " ", " ".join(header_lines(path)))


@cache
def committed(name: str, card: str = "h200") -> dict[str, Any]:
    return json.loads((BENCHMARKS / card / name).read_text())


def rounds_to(stated: str, value: float) -> bool:
    """Whether `stated` (as printed, thousands commas allowed) is `value` rounded to its digits."""
    stated = stated.replace(",", "")
    decimals = len(stated.split(".")[1]) if "." in stated else 0
    return abs(float(stated) - value) <= 0.5 * 10 ** -decimals + 1e-9


def the_row(file: str, results: list[dict[str, Any]], where: str, **match: Any) -> dict[str, Any]:
    """The one committed result whose fields equal `match` (a header must name exactly one)."""
    rows = [r for r in results if all(r.get(k) == v for k, v in match.items())]
    assert len(rows) == 1, f"{where}: {len(rows)} rows of {file} match {match}"
    return rows[0]


def gemm_figures(path: Path, text: str) -> list[tuple[str, str, float]]:
    """(what, stated, committed) for every GFLOP/s figure: the file's kernel at that shape and precision."""
    prefix = ("cpu." if path.suffix == ".cpp" else "cuda.") + path.name[:3]
    cards = set(GEMM_FILE.findall(text)) or {"h200"}
    assert len(cards) == 1, f"{path.name}: figures from several cards' files: {sorted(cards)}"
    results = committed("bench-gemm.json", cards.pop())["results"]
    out = []
    for shape, gflops, percent, reference in GEMM.findall(text):
        dims = [int(shape[:-2])] * 3 if shape.endswith("^3") else [int(d) for d in shape.split("x")]
        precision = "fp32" if reference == "NumPy" else reference.split()[1]
        timed = [r for r in results if r["kernel"].startswith(prefix) and "gflops" in r]
        row = the_row("bench-gemm.json", timed, path.name, precision=precision, M=dims[0], N=dims[1], K=dims[2])
        out += [(f"{shape} GFLOP/s", gflops, row["gflops"]),
                (f"{shape} % of {reference}", percent, row["percent_of_reference"])]
    return out


def mlp_figures(path: Path, text: str) -> list[tuple[str, str, float]]:
    out = []
    for batch, items in MLP.findall(text):
        for name, kernel_us, e2e_us in MLP_ITEM.findall(items):
            row = the_row("bench-mlp.json", committed("bench-mlp.json")["results"], path.name,
                          kernel=name, batch=int(batch))
            out += [(f"{name} batch {batch} kernel", kernel_us, row["kernel_us"]),
                    (f"{name} batch {batch} end to end", e2e_us, row["e2e_us"])]
    return out


def train_figures(path: Path, text: str) -> list[tuple[str, str, float]]:
    out = []
    for first, batch1, second, batch2, precision, key in TRAIN.findall(text):
        for stated, batch in ((first, batch1), (second, batch2)):
            row = the_row("train.json", committed("train.json")["results"], path.name,
                          engine="native", precision=precision, batch=int(batch))
            row = {**row, **row.get("profile_us_per_launch", {})}
            assert key in row, f"{path.name}: train.json's native rows have no {key!r}"
            out.append((f"{key} {precision} batch {batch}", stated, row[key]))
    return out


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: str(p.relative_to(NATIVE)))
def test_kernel_header_follows_the_template(path):
    """What changed (or what it is), why faster, what holds it back, one figure; at most 30 lines."""
    lines = header_lines(path)
    text = header_text(path)
    assert 0 < len(lines) <= 30, f"{path.name}: header of {len(lines)} lines"
    assert "What changed" in text or "What it is" in text, path.name
    assert "Why" in text and "holds it back" in text, path.name
    assert "Measured" in text and re.search(r"assets/benchmarks/h(100|200)/", text), path.name


@pytest.mark.parametrize("path", WITH_FIGURES, ids=lambda p: str(p.relative_to(NATIVE)))
def test_header_figures_are_the_committed_benchmarks(path):
    text = header_text(path)
    figures = gemm_figures(path, text) + mlp_figures(path, text) + train_figures(path, text)
    assert figures, f"{path.name}: no figure in a form this test reads (see its patterns)"
    wrong = [f"{what}: header {stated}, committed {value:.4g}" for what, stated, value in figures
             if not rounds_to(stated, value)]
    assert not wrong, f"{path.name}: " + "; ".join(wrong)


def test_rounding_reads_commas_and_digits():
    assert rounds_to("8,551", 8551.4) and not rounds_to("8,484", 8551.4)
    assert rounds_to("92.6", 92.64) and not rounds_to("92.3", 92.64)
    assert rounds_to("15.5", 15.469) and not rounds_to("15.8", 15.469)


def test_the_readme_ladder_table_links_every_rung():
    """The README's ladder table is typed by hand: each numbered file has its row and each row's file exists."""
    readme = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"^\| (?:cpu|cuda)\.\d\d \| \[[^]]+\]\((native/[^)]+)\)", readme, re.M))
    rungs = {str(p.relative_to(ROOT)) for p in [*NATIVE.glob("cpu/gemm/[0-9]*.cpp"), *NATIVE.glob("cuda/gemm/[0-9]*.cu")]}
    assert linked == rungs, f"missing from the README: {sorted(rungs - linked)}; not in the tree: {sorted(linked - rungs)}"
