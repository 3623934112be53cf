"""The one figure line in each kernel file's header, generated from the committed benchmark JSON.

A kernel's header says what it does and what limits it; the number that backs the claim is the
line that starts with `// Figure (`. That line is never typed: `gemmpad bench report` rewrites
it from the newest committed result file that holds the kernel's row (the report's own rule,
passed in as `run_date`), at a fixed shape per kind of file, so a new bench run refreshes every
header and tests/native/test_native_headers.py fails on a header nobody refreshed.

Kinds: a GEMM rung quotes each kernel its file registers at one shape (4096^3 on the GPU, the
MLP's 256x100x784 on the CPU, 4096x100x784 for the rungs made for the MLP's layers); a fused-MLP
design its kernel and the reference at the batch it serves; a training kernel its per-launch time
at batches 64 and 256. The report's own loader and date rule are passed in (`load`, `run_date`)
rather than imported: report.py calls this module, and an import back would be a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemmpad.errors import GemmpadError
from gemmpad.inputs.files import write_text
from gemmpad.terminal import counted

ROOT = Path(__file__).resolve().parents[3]  # a source checkout: the package beside native/ and assets/
MARK = "// Figure ("
GEMM_FILE, MLP_FILE, TRAIN_FILE = "bench-gemm.json", "bench-mlp.json", "train.json"
CPU_SHAPE = (256, 100, 784)  # the MLP's first layer at batch 256: where a CPU kernel is used
GPU_SHAPE = (4096, 4096, 4096)  # big enough that every rung fills the GPU
# Rungs built for the MLP's layer shapes, which hand big problems to an earlier rung: their figure is
# at the shape they exist for (at 4096^3 the bench row would be the earlier rung's kernel).
SMALL_SHAPE, SMALL_RUNGS = (4096, 100, 784), {"17_small_tiles.cu", "19_simt_ring.cu"}
TRAIN_BATCHES = (64, 256)

Load = Callable[[Path], dict[str, Any]]


@dataclass(frozen=True)
class Mlp:
    """A fused-MLP design: its kernel and the reference it is read against, at the batch it serves."""
    kernel: str
    reference: str
    batch: int


@dataclass(frozen=True)
class Train:
    """A training kernel: the native engine's `key` (per-launch microseconds, or the epoch) at `precision`,
    from the bench rows of `engine` (native: the graph of three launches a step)."""
    precision: str
    key: str
    engine: str = "native"


MLP_FILES = {
    "native/cpu/mlp/mlp_sparse.cpp": Mlp("cpu.mlp_sparse", "numpy", 1),
    "native/cpu/mlp/mlp_amx.cpp": Mlp("cpu.mlp_amx", "ONNX Runtime CPU", 4096),
    "native/cuda/mlp/fused_mlp.cu": Mlp("cuda.mlp_fused", "torch CUDA graph", 1),
    "native/cuda/mlp/fused_mlp_ksplit.cu": Mlp("cuda.mlp_fused", "torch CUDA graph", 256),
    "native/cuda/mlp/fused_mlp_tc.cu": Mlp("cuda.mlp_fused", "torch CUDA graph", 4096),
}
TRAIN_FILES = {
    "native/cuda/train/forward_l1_fp32.cu": Train("fp32", "forward_l1_us"),
    "native/cuda/train/forward_l1_bf16.cu": Train("mixed", "forward_l1_us"),
    "native/cuda/train/rows.cu": Train("fp32", "rows_us"),
    "native/cuda/train/grad_update_fp32.cu": Train("fp32", "grad_update_us"),
    "native/cuda/train/grad_update_bf16.cu": Train("mixed", "grad_update_us"),
    "native/cuda/train/train.cuh": Train("fp32", "epoch_ms_median"),
    "native/cuda/train/epoch_persistent.cu": Train("fp32", "epoch_ms_median", "native_persistent"),
}


def gemm_files(root: Path = ROOT) -> list[str]:
    """The numbered GEMM rungs, relative to `root`."""
    found = [*root.glob("native/cpu/gemm/[0-9]*.cpp"), *root.glob("native/cuda/gemm/[0-9]*.cu")]
    return sorted(str(p.relative_to(root)) for p in found)


def figure_files(root: Path = ROOT) -> list[str]:
    """Every file whose header carries a generated figure line (those of MLP_FILES and TRAIN_FILES
    that exist: tests/native/test_native_headers.py checks that none is missing from a checkout)."""
    return [*gemm_files(root), *(f for f in [*MLP_FILES, *TRAIN_FILES] if (root / f).is_file())]


def figure_lines(dirs: list[str], load: Load, run_date: Callable[[Path], str],
                 root: Path = ROOT) -> dict[str, str]:
    """file (relative to `root`) -> its figure line, from the result files in `dirs` (relative to `root`)."""
    sources = {name: newest_first([root / d / name for d in dirs], run_date)
               for name in (GEMM_FILE, MLP_FILE, TRAIN_FILE)}
    loaded = {path: load(path) for paths in sources.values() for path in paths}

    def held(name: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for path in sources[name]:
            yield str(path.relative_to(root)), loaded[path]

    out = {}
    for f in figure_files(root):
        if f in MLP_FILES:
            out[f] = _mlp_line(MLP_FILES[f], held(MLP_FILE))
        elif f in TRAIN_FILES:
            out[f] = _train_line(TRAIN_FILES[f], held(TRAIN_FILE))
        else:
            out[f] = _gemm_line(f, held(GEMM_FILE))
    return out


def rewrite_headers(dirs: list[str], load: Load, run_date: Callable[[Path], str], root: Path = ROOT) -> None:
    """Rewrite the figure line of every kernel file from the committed results (called by
    `gemmpad bench report`); nothing to do outside a source checkout, where native/ is absent."""
    if not (root / "native").is_dir():
        return
    changed = []
    for rel, line in figure_lines(dirs, load, run_date, root).items():
        path = root / rel
        text = path.read_text(encoding="utf-8")
        old = figure_line(text, rel)
        if old != line:
            write_text(path, text.replace(old + "\n", line + "\n", 1))
            changed.append(rel)
    if changed:
        print(f"rewrote the figure line of {counted(len(changed), 'kernel file')}: {', '.join(changed)}")


def figure_line(text: str, where: str) -> str:
    """The header's figure line (the one line of the leading `//` block that starts with MARK)."""
    header = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        header.append(line)
    marked = [line for line in header if line.startswith(MARK)]
    if len(marked) != 1:
        raise GemmpadError(f"{where}: its header needs exactly one line starting with {MARK!r}, has {len(marked)}")
    return marked[0]


def newest_first(paths: list[Path], run_date: Callable[[Path], str]) -> list[Path]:
    """The files of `paths` that exist, newest run (`run_date`) first: the one rule for which
    committed run a figure comes from (report.newest, the README tables, the kernel headers, the
    Lab figures; native/tools/kernel_manifest.py applies it without importing gemmpad); `run_date` is
    passed in as report reads it."""
    held = [p for p in paths if p.is_file()]
    return sorted(held, key=run_date, reverse=True)  # stable: the first folder on a tie, as the report's tables


def _label(rel: str, data: dict[str, Any], host: bool = False) -> str:
    card = Path(rel).parent.name.upper() + (" host" if host else "")
    date = str(data.get("machine", {}).get("date_utc", ""))[:10]
    return f"{MARK}{card} {date}, {rel}): "


def _gflops(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _gemm_line(rel: str, held: Iterator[tuple[str, dict[str, Any]]]) -> str:
    cpu = rel.startswith("native/cpu/")
    prefix = ("cpu." if cpu else "cuda.") + Path(rel).name[:3]
    m, n, k = CPU_SHAPE if cpu else SMALL_SHAPE if Path(rel).name in SMALL_RUNGS else GPU_SHAPE
    shape = f"{m}^3" if m == n == k else f"{m}x{n}x{k}"
    for source, data in held:
        rows = sorted((r for r in data["results"] if str(r.get("kernel", "")).startswith(prefix)
                       and (r.get("M"), r.get("N"), r.get("K")) == (m, n, k)), key=lambda r: r["kernel"])
        if rows:
            return _label(source, data, host=cpu) + f"{shape} " + _gemm_items(rows)
    return f"{MARK}none): no committed {GEMM_FILE} holds {prefix}* at {shape}"


def _gemm_items(rows: list[dict[str, Any]]) -> str:
    """One kernel: "46,681 GFLOP/s = 89.7 % of cuBLAS fp32"; several (one per precision), each as
    "fp16 106,131 (14.5 %)" after a legend, so that the line stays one line."""
    if len(rows) == 1:
        r = rows[0]
        if "gflops" not in r:
            return "wrong result"
        if r.get("percent_of_reference") is None:  # the reference cannot run this shape (cuBLAS fp8)
            return f"{_gflops(r['gflops'])} GFLOP/s"
        return f"{_gflops(r['gflops'])} GFLOP/s = {r['percent_of_reference']:.1f} % of {r['reference']}"
    items = []
    for r in rows:
        if "gflops" not in r:
            items.append(f"{r['precision']} wrong result")
        elif r.get("percent_of_reference") is None:
            items.append(f"{r['precision']} {_gflops(r['gflops'])}")
        else:
            items.append(f"{r['precision']} {_gflops(r['gflops'])} ({r['percent_of_reference']:.1f} %)")
    references = {str(r.get("reference", "")).split(" ")[0] for r in rows}
    return f"GFLOP/s (% of {'/'.join(sorted(references))} at each precision): " + ", ".join(items)


def float_input(row: dict[str, Any]) -> bool:
    """Whether a bench-mlp row timed float32 input: the 8-bit path's rows (`"input": "uint8"`) share
    their kernel's name, and a figure of the kernel itself must not quote them."""
    return row.get("input", "float32") == "float32"


def _mlp_line(spec: Mlp, held: Iterator[tuple[str, dict[str, Any]]]) -> str:
    for source, data in held:
        rows = {r.get("kernel"): r for r in data["results"]
                if r.get("batch") == spec.batch and "e2e_us" in r and float_input(r)}
        if spec.kernel in rows and spec.reference in rows:
            items = [f"{name} {rows[name]['kernel_us']:.1f} / {rows[name]['e2e_us']:.1f} us"
                     for name in (spec.kernel, spec.reference)]
            return _label(source, data) + f"batch {spec.batch}, kernel / end to end: " + ", ".join(items)
    return f"{MARK}none): no committed {MLP_FILE} holds {spec.kernel} and {spec.reference} at batch {spec.batch}"


def _train_line(spec: Train, held: Iterator[tuple[str, dict[str, Any]]]) -> str:
    for source, data in held:
        values = {}
        for r in data["results"]:
            if r.get("engine") == spec.engine and r.get("precision") == spec.precision and r.get("batch") in TRAIN_BATCHES:
                row = {**r, **r.get("profile_us_per_launch", {})}
                if spec.key in row:
                    values[r["batch"]] = row[spec.key]
        if len(values) == len(TRAIN_BATCHES):
            first, *rest = TRAIN_BATCHES
            what = "an epoch of 60,000 images {} ms" if spec.key == "epoch_ms_median" else "{} us per launch"
            times = ", ".join([f"{what.format(f'{values[first]:.1f}')} at batch {first}",
                               *(f"{values[b]:.1f} at batch {b}" for b in rest)])
            return _label(source, data) + f"{spec.engine} {spec.precision}: {times} ({spec.key})"
    return (f"{MARK}none): no committed {TRAIN_FILE} holds {spec.engine} {spec.precision} {spec.key} "
            f"at batches {TRAIN_BATCHES}")
