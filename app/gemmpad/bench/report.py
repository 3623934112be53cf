"""Tables from benchmark results, and the README blocks made of them.

Every run prints its full tables; `--out DIR --readme README.md` also rewrites
the block between `<!-- bench:gemm begin -->` and `<!-- bench:gemm end -->`
(or `bench:mlp`, `bench:train`) with the summary table and its caption line,
so a README shows what the committed JSON holds and nothing typed by hand.
`--readme` repeats: each file gets the blocks it holds (the GEMM and training
tables live beside their kernels, not in the top README). `gemmpad bench
report` does the same from committed JSON, without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad.bench import roofline
from gemmpad.bench.headers import ROOT, float_input, newest_first, rewrite_headers
from gemmpad.bench.machine import caption
from gemmpad.errors import GemmpadError
from gemmpad.inputs.files import atomic_path, write_text
from gemmpad.inputs.reads import load_json, read_text
from gemmpad.terminal import printable

# Each table comes from the newest run (its machine's date) among the folders holding its result file,
# the first folder on a tie: the H200's, once its run is newer than the H100's GEMM ladder.
DEFAULT_DIRS = ["assets/benchmarks/h200", "assets/benchmarks/h100"]
AGREES = "agrees with fp32"  # column: share of the MNIST test digits a kernel reads as the fp32 network does
RESULTS = {"gemm": "bench-gemm.json", "mlp": "bench-mlp.json", "train": "train.json"}  # block name -> result file
MAX_RESULT_BYTES = 64 << 20
MAX_README_BYTES = 4 << 20  # the project's README is ~60 KB


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", action="append", default=None,
                        help="where the result JSON is; repeat: each table from the newest run among the folders "
                             f"that hold its file, the first on a tie (default {' and '.join(DEFAULT_DIRS)})")
    add_readme_argument(parser)


def add_readme_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--readme", action="append", default=None, metavar="FILE",
                        help="rewrite the block between <!-- bench:NAME begin/end --> in this file; repeat for "
                             "several files (each gets the blocks it holds)")


def run(args: argparse.Namespace) -> int:
    """`gemmpad bench report`: the summary tables of the result files in --dir (no GPU needed)."""
    dirs = [Path(d) for d in (args.dir or DEFAULT_DIRS)]
    found = {}
    for name, f in RESULTS.items():
        path = newest([d / f for d in dirs])
        if path is not None:
            found[name] = path
    where = " or ".join(str(d) for d in dirs)
    if not found:
        raise GemmpadError(f"--dir {where}: no {' or '.join(RESULTS.values())} there (name a folder that a bench "
                           "command's --out wrote, or run from a gemmpad checkout for the committed ones)")
    readmes = args.readme or []
    plan = {r: [name for name in found if holds_block(r, name)] for r in readmes}  # every file read before any write
    idle = [r for r, names in plan.items() if not names]
    if idle:
        raise GemmpadError(f"--readme {idle[0]}: holds no bench block for the results in {where} "
                           f"({', '.join(markers(n)[0] for n in found)})")
    for name, path in found.items():
        data = _load(path, name)
        print(summary_block(name, data, path, None) + "\n")
        if name == "gemm" and any(name in plan[r] for r in readmes):  # the committed figure, regenerated
            render_roofline(data, path.with_name(ROOFLINE), refuse_as=None)
        for r in readmes:
            if name in plan[r]:
                rewrite_block(r, name, summary_block(name, data, path, r))
    rewrite_headers(DEFAULT_DIRS, _load, _run_date)  # each kernel file's `// Figure (` line, from the committed JSON
    rewrite_lab_figures()
    return 0


def rewrite_lab_figures(root: Path = ROOT) -> None:
    """The figures the window's Lab tab plots without a GPU (gemmpad/lab_figures.json), from the
    newest committed GEMM and MLP results (DEFAULT_DIRS, whatever --dir says, as the kernel
    headers): the wheel ships the package, not assets/. Only in a source checkout: an installed
    package is never written to."""
    gemm_path, mlp_path = (newest([root / d / RESULTS[name] for d in DEFAULT_DIRS]) for name in ("gemm", "mlp"))
    if not (root / "native").is_dir() or gemm_path is None:
        return
    gemm = _load(gemm_path, "gemm")
    mlp = _load(mlp_path, "mlp") if mlp_path is not None else None
    text = json.dumps(roofline.figures_from(gemm, mlp), indent=1) + "\n"
    if not roofline.FIGURES.is_file() or roofline.FIGURES.read_text(encoding="utf-8") != text:
        write_text(roofline.FIGURES, text)
        print(f"rewrote {roofline.FIGURES.name} (the Lab tab's committed figures)")


def newest(paths: list[Path]) -> Path | None:
    """The result file of the newest run (its machine's date) among `paths` that exist, the first
    of `paths` on a tie (None when none exists): headers.newest_first with this module's reading."""
    held = newest_first(paths, _run_date)
    return held[0] if held else None


def _run_date_of(data: dict[str, Any]) -> str:
    m = data.get("machine")
    return str(m.get("date_utc", "")) if isinstance(m, dict) else ""


def _run_date(path: Path) -> str:
    """The ISO date of a result file's run ("" when it does not say)."""
    return _run_date_of(_load(path))


def _load(path: Path, name: str | None = None) -> dict[str, Any]:
    """The result file `path` of block `name` (by default the block its file name is: RESULTS),
    checked against what the tables read (SCHEMAS): a field of the wrong type or out of range is
    one line naming it, not a KeyError or a TypeError half-way through a table."""
    name = name or next((k for k, v in RESULTS.items() if v == path.name), None)
    if name is None:
        raise GemmpadError(f"{path}: not a gemmpad bench result file ({', '.join(RESULTS.values())})")
    data = load_json(path, MAX_RESULT_BYTES, GemmpadError, "result file (JSON)",  # FIFOs, /dev/zero: clear errors
                     max_depth=MAX_RESULT_DEPTH)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise GemmpadError(f"{path}: not a gemmpad bench result (no 'results' list)")
    try:
        validate(name, data)
    except ValueError as exc:
        raise GemmpadError(f"{path}: not a gemmpad bench result ({exc})") from None
    return data


# ---------------------------------------------------------------- result schemas
# What the tables read from a result file, per field: (type, low, high); a field not listed
# is not read and not checked. Ranges are generous: they exclude only what no machine measures.
_INT = (int, 1, 1 << 31)
_TIME = (float, 0.0, 1e12)  # microseconds or milliseconds
_RATE = (float, 0.0, 1e12)  # GFLOP/s; percent
_NAME = (str, 1, 64)  # a kernel, backend, precision or engine name (NAME_PATTERN)
_TEXT = (str, 0, 200)  # free text from the machine (a CPU model, a driver version, a date)
ROW_SCHEMAS: dict[str, dict[str, tuple[type, float, float]]] = {
    "gemm": {"kernel": _NAME, "precision": _NAME, "M": _INT, "N": _INT, "K": _INT},
    "mlp": {"backend": _NAME, "kernel": _NAME, "batch": _INT},
    "train": {"engine": _NAME, "precision": _NAME, "batch": _INT, "epoch_ms_median": _TIME},
}
# Fields present only in some rows (a kernel that gave wrong results has no timing).
OPTIONAL_FIELDS: dict[str, dict[str, tuple[type, float, float]]] = {
    "gemm": {"ms": _TIME},  # with it, gflops and reference (validate)
    "mlp": {"kernel_us": _TIME, "e2e_us": _TIME, "input": _NAME},
    "train": {},
}
MACHINE_SCHEMA: dict[str, Any] = {
    "cpu": _TEXT, "host_cores": _INT, "date_utc": _TEXT,
    "cuda": {"available": (bool, 0, 1), "device": _TEXT, "multiprocessors": _INT, "runtime_version": _INT},
    "nvidia_smi": {"driver_version": _TEXT},
    "versions": {"gemmpad": _TEXT, "python": _TEXT, "numpy": _TEXT, "torch": _TEXT},
}
MLP_INPUTS = ("float32", "uint8")  # what a bench-mlp row's x was (no field: float32)
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.+\-]+( [A-Za-z0-9_.+\-()/,]+)*")  # what a name in a code span may hold
MAX_RESULT_DEPTH = 8  # the committed files nest 4 deep
MAX_RESULTS = 100_000  # rows; the committed files hold ~140
MAX_COLUMNS = 64  # sizes or batches: one table column each


def validate(name: str, data: dict[str, Any]) -> None:
    """ValueError naming the first field of `data` (a result file of block `name`) that the
    tables cannot use: a missing or mistyped field, a number out of range or not finite, a
    name that is not a name, too many rows or columns."""
    rows = data["results"]
    if len(rows) > MAX_RESULTS:
        raise ValueError(f"{len(rows):,} results, more than {MAX_RESULTS:,}")
    _check_fields("machine", data.get("machine", {}), MACHINE_SCHEMA, required=False)
    if name == "mlp":
        _check_fields("file", data, {"timed_on": _TEXT}, required=False)  # under the table
    for i, r in enumerate(rows):
        where = f"results[{i}]"
        _check_fields(where, r, ROW_SCHEMAS[name], required=True)
        _check_fields(where, r, OPTIONAL_FIELDS[name], required=False)
        if name == "gemm" and "ms" in r:
            _check_fields(where, r, {"gflops": _RATE, "reference": _TEXT}, required=True)
            pct = r.get("percent_of_reference", "missing")
            if pct is not None:
                _check_fields(where, r, {"percent_of_reference": _RATE, "reference_gflops": _RATE}, required=True)
        if name == "mlp" and ("kernel_us" in r) != ("e2e_us" in r):
            raise ValueError(f"{where}: kernel_us and e2e_us go together (or neither, for a wrong kernel)")
        if name == "mlp" and r.get("input", "float32") not in MLP_INPUTS:
            raise ValueError(f"{where}.input: expected one of {', '.join(MLP_INPUTS)}, got that string")
    columns = {(r["M"], r["N"], r["K"]) if name == "gemm" else r["batch"] for r in rows}
    if len(columns) > MAX_COLUMNS:
        raise ValueError(f"{len(columns):,} {'sizes' if name == 'gemm' else 'batches'}, more than a table "
                         f"shows ({MAX_COLUMNS})")


def _check_fields(where: str, value: object, schema: dict[str, Any], required: bool) -> None:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
    for key, spec in schema.items():
        if key not in value:
            if required:
                raise ValueError(f"{where}.{key}: missing")
            continue
        v, at = value[key], f"{where}.{key}"
        if isinstance(spec, dict):
            _check_fields(at, v, spec, required=False)
            continue
        kind, low, high = spec
        if kind is bool:
            ok = isinstance(v, bool)
        elif kind is int:
            ok = type(v) is int and low <= v <= high
        elif kind is float:  # a JSON number, finite (NaN fails every comparison)
            ok = type(v) in (int, float) and low <= v <= high
        else:
            ok = isinstance(v, str) and low <= len(v) <= high and (spec is not _NAME or NAME_PATTERN.fullmatch(v))
        if not ok:
            shown = repr(v) if isinstance(v, (int, float, bool)) or v is None else type(v).__name__
            if isinstance(v, str):
                shown = f"a string of {len(v)} characters" if len(v) > 40 else "that string"
            raise ValueError(f"{at}: expected {_describe(spec)}, got {shown}")


def _describe(spec: tuple[type, float, float]) -> str:
    kind, low, high = spec
    if spec is _NAME:
        return f"a name of 1-{high} letters, digits, _.+- and single spaces"
    if kind is str:
        return f"text of at most {high:g} characters"
    if kind is bool:
        return "true or false"
    if kind is int:
        return f"an integer {low:g}-{high:g}"
    return f"a number {low:g}-{high:g}"


# ---------------------------------------------------------------- README blocks
def markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name} begin -->", f"<!-- bench:{name} end -->"


def holds_block(readme: str, name: str) -> bool:
    """Whether `readme` holds the block `name`; a file it cannot read, or a broken pair of markers, is an error."""
    text = _read_readme(readme)
    begin, end = markers(name)
    if text.count(begin) == 0 and text.count(end) == 0:
        return False
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise GemmpadError(f"--readme {readme}: needs exactly one {begin} ... {end} block")
    return True


def _read_readme(readme: str) -> str:
    """The README's text through the guarded reader: `--readme FIFO` hung and /dev/zero
    was read until memory ran out."""
    try:
        return read_text(readme, MAX_README_BYTES, GemmpadError, "README (markdown)")
    except GemmpadError as exc:
        raise GemmpadError(f"--readme {exc}") from None


def check_readmes(readmes: list[str], name: str) -> None:
    """Raise GemmpadError unless one of `readmes` holds the block `name` (checked before a run, not after it)."""
    if not any([holds_block(r, name) for r in readmes]):  # a list: every file checked, not only up to the first
        begin, end = markers(name)
        raise GemmpadError(f"--readme {', '.join(readmes)}: needs exactly one {begin} ... {end} block")


def rewrite_block(readme: str, name: str, block: str) -> None:
    """Replace what lies between the block's markers (atomically; nothing else in the file changes)."""
    text = _read_readme(readme)
    begin, end = markers(name)
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{begin}\n{block}\n\n{end}{tail}"
    if new.count("<!-- bench:") != text.count("<!-- bench:"):  # md() makes this impossible; never write it
        raise GemmpadError(f"--readme {readme}: the {name} block would add or remove a bench marker; not written")
    write_text(readme, new)
    print(f"rewrote the {name} block of {printable(readme)}")


def rewrite_blocks(readmes: list[str], name: str, data: dict[str, Any], path: Path, *, refuse_as: str | None) -> None:
    """The block `name`, made from the result `data` saved at `path`, in each of `readmes` that holds it
    (the roofline drawn beside `path` is put there as atomic_path's `refuse_as` says)."""
    holding = [r for r in readmes if holds_block(r, name)]
    if name == "gemm" and holding:
        render_roofline(data, path.with_name(ROOFLINE), refuse_as=refuse_as)
    for r in holding:
        rewrite_block(r, name, summary_block(name, data, path, r))


def summary_block(name: str, data: dict[str, Any], path: Path, readme: str | None) -> str:
    """Caption line (machine, date, link to the JSON) and the summary table; under the GEMM
    table, the roofline drawn from the same file (when it was, ROOFLINE beside the JSON). Text
    from the file goes through `md` and links are percent-encoded: a cell cannot break the
    table, add HTML or a marker, or end the link early."""
    def link(target: Path) -> str:
        return urllib.parse.quote(os.path.relpath(target.resolve(), Path(readme).resolve().parent) if readme
                                  else str(target))

    table = {"gemm": gemm_summary, "mlp": mlp_summary, "train": train_summary}[name](data["results"])
    block = f"{md(caption(data.get('machine', {})))}; [{md(path.name)}]({link(path)}).\n\n{table}"
    if name == "mlp" and "timed_on" in data:
        block += f"\n\nTimed on {md(data['timed_on'])}."
    png = path.with_name(ROOFLINE)
    if name == "gemm" and readme and png.is_file():
        block += (f"\n\n![Roofline of every rung: achieved FLOP/s against FLOPs per byte moved, under the "
                  f"{md(_device(data))}'s ceilings]({link(png)})")
    return block


# ------------------------------------------------------------------ the roofline
ROOFLINE = "roofline.png"  # beside the bench-gemm.json it is drawn from
PRECISION_COLOURS = {"fp32": (31, 119, 180), "tf32": (44, 160, 44), "fp16": (214, 39, 40),
                     "bf16": (148, 103, 189), "fp8": (255, 127, 14)}


def _device(data: dict[str, Any]) -> str:
    cuda = data.get("machine", {}).get("cuda")
    return str(cuda.get("device", "")) if isinstance(cuda, dict) else ""


def render_roofline(data: dict[str, Any], out: Path, *, refuse_as: str | None) -> None:
    """The GPU rungs of a bench-gemm result on a log-log roofline under their card's datasheet
    ceilings (gemmpad.bench.roofline), drawn with Pillow (a dependency: matplotlib is optional, and a
    README figure must not depend on what happens to be installed), written atomically (replacing
    a file at `out` unless `refuse_as`: see atomic_path)."""
    from PIL import Image, ImageDraw, ImageFont

    import gemmpad.ui

    rows = [r for r in data["results"] if r.get("ms", 0) > 0 and r["kernel"].startswith("cuda.")
            and r["precision"] in roofline.OPERAND_BYTES]  # (a time of 0 or an unknown precision: no point)
    if not rows:
        return
    card = roofline.card_for(_device(data))
    pts = [(roofline.intensity(r["M"], r["N"], r["K"], r["precision"]),
            roofline.achieved(r["M"], r["N"], r["K"], r["ms"] / 1e3), r) for r in rows]
    fonts = Path(gemmpad.ui.__file__).with_name("fonts")
    font, small = (ImageFont.truetype(str(fonts / "DejaVuSans.ttf"), size) for size in (22, 18))
    bold = ImageFont.truetype(str(fonts / "DejaVuSans-Bold.ttf"), 24)
    w, h, left, right, top, bottom = 1400, 860, 150, 40, 70, 110
    peak = max(card.peak_tflops.values()) * 1e12 if card else max(y for _, y, _ in pts)
    x0, x1 = 10 ** np.floor(np.log10(min(x for x, _, _ in pts))), 10 ** np.ceil(np.log10(max(x for x, _, _ in pts)))
    y0, y1 = 10 ** np.floor(np.log10(min(y for _, y, _ in pts))), 10 ** np.ceil(np.log10(peak * 1.5))

    def at(x: float, y: float) -> tuple[float, float]:
        fx, fy = np.log10(x / x0) / np.log10(x1 / x0), np.log10(y / y0) / np.log10(y1 / y0)
        return left + fx * (w - left - right), h - bottom - fy * (h - top - bottom)

    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    for e in range(int(np.log10(x0)), int(np.log10(x1)) + 1):
        x, _ = at(10.0**e, y0)
        d.line([(x, top), (x, h - bottom)], fill=(225, 225, 225))
        d.text((x, h - bottom + 8), f"{10.0**e:g}", font=small, fill="black", anchor="mt")
    for e in range(int(np.log10(y0)), int(np.log10(y1)) + 1):
        _, y = at(x0, 10.0**e)
        d.line([(left, y), (w - right, y)], fill=(225, 225, 225))
        d.text((left - 8, y), _flops(10.0**e), font=small, fill="black", anchor="rm")
    d.rectangle([left, top, w - right, h - bottom], outline="black")
    d.text((left + (w - left - right) / 2, h - 40), "arithmetic intensity: FLOPs per byte moved at least (A, B read "
           "once, C written once)", font=font, fill="black", anchor="mm")
    title = f"Roofline: every CUDA rung at every benched shape, {_device(data) or 'the GPU'}, " \
            f"{_run_date_of(data)[:10]}"
    d.text((left, 30), title, font=bold, fill="black", anchor="lm")
    if card is not None:
        bw = card.bandwidth_gbs
        d.line([at(x0, x0 * bw * 1e9), at(peak / (bw * 1e9), peak)], fill=(90, 90, 90), width=3)
        d.text(at(x0 * 1.3, x0 * 1.3 * bw * 1e9 * 1.6), f"memory {bw / 1000:g} TB/s", font=small,
               fill=(90, 90, 90), anchor="ls")
        alike: dict[float, list[str]] = {}
        for p, tflops in card.peak_tflops.items():
            alike.setdefault(tflops, []).append(p)
        for tflops, ps in alike.items():
            knee = roofline.ridge(bw, tflops)
            colour = PRECISION_COLOURS[ps[0]]
            d.line([at(knee, tflops * 1e12), at(x1, tflops * 1e12)], fill=colour, width=3)
            d.text(at(x1, tflops * 1e12), f"{'/'.join(ps)} {tflops:g} TFLOP/s ", font=small, fill=colour,
                   anchor="rd")
        d.text((w - right - 8, h - bottom - 8), f"ceilings: {card.name} datasheet, dense", font=small,
               fill=(90, 90, 90), anchor="rd")
    for x, y, r in sorted(pts, key=lambda p: p[2]["M"] * p[2]["N"] * p[2]["K"]):
        cx, cy = at(x, y)
        big = r["M"] * r["N"] * r["K"] >= 4096**3
        rad = 7 if big else 4
        d.ellipse([cx - rad, cy - rad, cx + rad, cy + rad], fill=PRECISION_COLOURS.get(r["precision"], (0, 0, 0)),
                  outline="black" if big else None)
    ly = top + 14
    for p, colour in PRECISION_COLOURS.items():
        d.ellipse([left + 16, ly - 6, left + 28, ly + 6], fill=colour)
        d.text((left + 36, ly), p, font=small, fill="black", anchor="lm")
        ly += 26
    d.text((left + 16, ly + 4), "large dots: 4096³, 8192³; small: the MLP's layers", font=small, fill="black",
           anchor="lm")
    with atomic_path(out, refuse_as) as tmp:
        img.save(tmp, format="PNG", optimize=True)
    print(f"wrote {printable(str(out))}")


def _flops(v: float) -> str:
    for scale, unit in ((1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s")):
        if v >= scale:
            return f"{v / scale:g} {unit}"
    return f"{v:g} FLOP/s"


_MD_ESCAPES = {"\\": "\\\\", "|": "\\|", "`": "\\`", "[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;", "&": "&amp;"}
_MD_SPECIAL = re.compile(r"[\\|`\[\]<>&]|[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def md(text: str) -> str:
    """`text` as literal markdown inline text (a table cell, a caption): control characters and
    line breaks become spaces; |, `, [, ] and \\ are escaped; <, > and & become entities,
    so no HTML (<script>) and no <!-- bench:... --> marker can come from data."""
    return _MD_SPECIAL.sub(lambda m: _MD_ESCAPES.get(m.group(), " "), text)


def _size(r: dict[str, Any]) -> str:
    m, n, k = r["M"], r["N"], r["K"]
    return f"{m}³" if m == n == k else f"{m}×{n}×{k}"


def gemm_summary(results: list[dict[str, Any]]) -> str:
    """GFLOP/s (percent of the same-precision reference) per kernel and size, then the references' rows:
    the reference is timed beside each kernel, and its row shows the median of those timings."""
    sizes = list(dict.fromkeys(_size(r) for r in results))
    cells: dict[tuple[str, str], dict[str, str]] = {}
    ref_gflops: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in results:
        row = cells.setdefault((r["kernel"], r["precision"]), {})
        if "ms" not in r:
            row[_size(r)] = "wrong"
            continue
        gflops = f"{r['gflops']:,.0f}" if r["gflops"] >= 10 else f"{r['gflops']:.1f}"
        if r["percent_of_reference"] is None:  # the reference cannot run this shape (cuBLAS fp8: K, N % 16)
            row[_size(r)] = gflops
            continue
        row[_size(r)] = f"{gflops} ({r['percent_of_reference']:.1f}%)"
        ref_gflops.setdefault((r["reference"], r["precision"]), {}).setdefault(_size(r), []).append(r["reference_gflops"])
    refs = {key: {size: f"{statistics.median(v):,.0f}" for size, v in row.items()} for key, row in ref_gflops.items()}
    return _table(["kernel", "precision"], sizes, cells, refs)


def mlp_summary(results: list[dict[str, Any]]) -> str:
    """Kernel / end-to-end microseconds per call at each batch: NumPy, torch, the whole-network
    kernels, and each backend's fastest GEMM rung run layer by layer (the rest: the full table)."""
    batches = [f"batch {b}" for b in sorted({r["batch"] for r in results})]
    timed = [r for r in results if "e2e_us" in r]
    layered = {r["backend"] for r in timed if _layer_by_layer(r)}
    score: dict[tuple[str, str], float] = {}  # summed end-to-end time over the batches
    for r in timed:
        if _layer_by_layer(r):
            score[(r["backend"], r["kernel"])] = score.get((r["backend"], r["kernel"]), 0.0) + r["e2e_us"]
    best = {b: min((k for k in score if k[0] == b), key=score.__getitem__)[1] for b in layered}
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for r in results:
        if _layer_by_layer(r) and best.get(r["backend"]) != r["kernel"]:
            continue
        runs = f"{r['backend']}, layer by layer" if _layer_by_layer(r) else r["backend"]
        row = cells.setdefault((mlp_label(r), runs), {})
        row[f"batch {r['batch']}"] = f"{r['kernel_us']:.1f} / {r['e2e_us']:.1f}" if "e2e_us" in r else "wrong"
        if _agreement(r):
            row[AGREES] = _agreement(r)
    agrees = [AGREES] if any(AGREES in row for row in cells.values()) else []
    return _table(["kernel", "backend"], batches + agrees, cells, {}) + agreement_line(results)


def agreement_line(results: list[dict[str, Any]]) -> str:
    """Every rung's agreement with fp32, the table's rows or not, as one sentence under it: the
    rungs that read some digit otherwise by name, the rest counted ("all 3", "the other 2"), or named
    where there is one (it read "all 1"); "" when none was measured."""
    share: dict[str, float] = {}
    for r in results:
        a = r.get("agrees_with_fp32")
        if _agreement(r) and r.get("backend") != "torch":
            share[r["kernel"]] = min(share.get(r["kernel"], 1.0), float(a))
    if not share:
        return ""
    by_value: dict[float, list[str]] = {}
    for kernel, a in share.items():
        by_value.setdefault(round(a, 4), []).append(kernel)
    parts = [f"{100 * a:.2f} % {', '.join(f'`{md(k)}`' for k in sorted(ks))}" for a, ks in sorted(by_value.items()) if a < 1]
    rest = by_value.get(1.0, [])
    if len(rest) == 1:
        parts.append(f"100.00 % `{md(rest[0])}`")
    elif rest:
        parts.append(f"100.00 % the other {len(rest)}" if parts else f"100.00 % all {len(rest)}")
    return (f"\n\nEvery kernel's agreement with fp32 (the share of the 10,000 MNIST test digits it reads as the fp32 "
            f"network does): {'; '.join(parts)}.")


def _agreement(r: dict[str, Any]) -> str:
    """A result's share of MNIST test digits read as fp32 reads them, as a cell ("" when not measured)."""
    a = r.get("agrees_with_fp32")
    return f"{100 * a:.2f} %" if isinstance(a, (int, float)) and not isinstance(a, bool) and 0 <= a <= 1 else ""


TRAIN_ENGINES = {("native", "fp32"): "native fp32", ("native_persistent", "fp32"): "native fp32, one persistent launch",
                 ("native", "mixed"): "native mixed (bf16 tensor cores)",
                 ("torch_eager", "fp32"): "torch eager", ("torch_cuda_graph", "fp32"): "torch, one step in a CUDA graph"}


def train_summary(results: list[dict[str, Any]]) -> str:
    """Epoch time (60,000 images) per engine and batch size."""
    batches = [f"batch {b}" for b in sorted({r["batch"] for r in results})]
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for r in results:
        label = TRAIN_ENGINES.get((r["engine"], r["precision"]), f"{r['engine']} {r['precision']}")
        cells.setdefault((label, r["precision"]), {})[f"batch {r['batch']}"] = f"{r['epoch_ms_median']:,.1f} ms"
    return _table(["engine", "precision"], batches, cells, {}, code=False)


def mlp_label(r: dict[str, Any]) -> str:
    """A bench-mlp row's name in tables, plots and printouts: its kernel, and " · uint8" for a row
    timed on 8-bit pixels (its `kernel` field stays the registry's name)."""
    return r["kernel"] + ("" if float_input(r) else f" · {r['input']}")


def _layer_by_layer(r: dict[str, Any]) -> bool:
    """A GEMM rung running the network one layer per call (not NumPy, torch or a whole-network kernel)."""
    return r["backend"] in ("cpu", "cuda") and ".mlp_" not in r["kernel"]


def _table(keys: list[str], columns: list[str], cells: dict[tuple[str, str], dict[str, str]],
           refs: dict[tuple[str, str], dict[str, str]], code: bool = True) -> str:
    """Rows keyed by two labels (the first a name in code format when `code`), one cell per column."""
    lines = ["| " + " | ".join(keys + columns) + " |", "|---|---|" + "---:|" * len(columns)]
    for (a, b), row in cells.items():
        name = f"`{a}`" if code else md(a)  # names in code spans: NAME_PATTERN, nothing to escape
        lines.append(f"| {name} | {md(b)} | " + " | ".join(row.get(c, "—") for c in columns) + " |")
    for (a, b), row in refs.items():
        lines.append(f"| {md(a)} (reference) | {md(b)} | " + " | ".join(row.get(c, "—") for c in columns) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------ full run tables
def gemm_table(results: list[dict[str, Any]]) -> str:
    """Every row of a GEMM run; "error / bound" is the largest error as a share of the precision's
    bound (gemmpad.runtime.precision: a row is wrong above 1)."""
    lines = ["| kernel | precision | M x N x K | GFLOP/s | reference | % of reference | rel. error | error / bound |",
             "|---|---|---|---:|---|---:|---:|---:|"]
    for r in results:
        size = f"{r['M']}x{r['N']}x{r['K']}"
        errors = f"{r['rel_error']:.2g} | " + (f"{r['error_vs_bound']:.2g}" if "error_vs_bound" in r else "—")
        if "ms" not in r:
            lines.append(f"| {r['kernel']} | {r['precision']} | {size} | wrong | | | {errors} |")
            continue
        if r["percent_of_reference"] is None:
            lines.append(f"| {r['kernel']} | {r['precision']} | {size} | {r['gflops']:.1f} | {r['reference']}: none "
                         f"at this shape | — | {errors} |")
            continue
        lines.append(f"| {r['kernel']} | {r['precision']} | {size} | {r['gflops']:.1f} | {r['reference']} "
                     f"{r['reference_gflops']:.0f} | {r['percent_of_reference']:.1f}% | {errors} |")
    return "\n".join(lines)


def mlp_table(rows: list[dict[str, Any]]) -> str:
    batches = sorted({r["batch"] for r in rows})
    head = "| backend | kernel | " + " | ".join(f"B={b} kernel / e2e (us)" for b in batches) + f" | {AGREES} |"
    lines = [head, "|---|---|" + "---:|" * (len(batches) + 1)]
    keys = list(dict.fromkeys((r["backend"], mlp_label(r)) for r in rows))
    for backend, kernel in keys:
        cells = []
        for b in batches:
            r = next((r for r in rows if (r["backend"], mlp_label(r), r["batch"]) == (backend, kernel, b)), None)
            cells.append("" if r is None else "wrong" if "kernel_us" not in r else
                         f"{r['kernel_us']:.1f} / {r['e2e_us']:.1f}")
        agrees = next((_agreement(r) for r in rows if (r["backend"], mlp_label(r)) == (backend, kernel)), "")
        lines.append(f"| {backend} | {kernel} | " + " | ".join(cells) + f" | {agrees or '—'} |")
    return "\n".join(lines)


def sweep_table(sweep: list[dict[str, Any]]) -> str:
    backends = list(dict.fromkeys(r["backend"] for r in sweep))
    batches = sorted({r["batch"] for r in sweep})
    e2e = {(r["backend"], r["batch"]): r["e2e_us"] for r in sweep}
    lines = ["| batch | " + " | ".join(f"{b} e2e (us)" for b in backends) + " |", "|---:|" + "---:|" * len(backends)]
    for batch in batches:
        lines.append(f"| {batch} | " + " | ".join(f"{e2e[(b, batch)]:.1f}" for b in backends) + " |")
    if "cuda" in backends and "cpu" in backends:
        faster = [b for b in batches if e2e[("cuda", b)] < e2e[("cpu", b)]]
        lines.append("")
        lines.append(
            f"GPU faster than CPU (end to end) at batch {', '.join(map(str, faster))}." if faster
            else "The CPU is faster end to end at every batch measured."
        )
    return "\n".join(lines)


# ------------------------------------------------------------------ output
def out_refusal(force: bool) -> str | None:
    """How a bench command puts a result file into --out at the end of its run (atomic_path's
    refuse_as): a file that appeared there during the run is refused, as gemmpad.bench.run refused
    one there before it, and the result kept, unless --force."""
    return None if force else "--out"


def can_plot(charts: list[str]) -> bool:
    """Whether matplotlib can draw the PNG `charts` (set to draw into files). It is optional (gemmpad[bench]):
    the JSON is the result and a chart only shows it, so without it the run goes on, and one line says
    which charts it will not have."""
    try:
        import matplotlib

        matplotlib.use("Agg")
    except ImportError:
        print(f"(matplotlib not installed: no {' or '.join(charts)}; pip install matplotlib for charts)", flush=True)
        return False
    return True


def write(out_dir: str, stem: str, payload: dict[str, Any], plot: Callable[[Path], None] | None,
          readmes: list[str] | None = None, block: str | None = None, *, force: bool) -> None:
    """The JSON, the PNG drawn by `plot` (None: nothing was timed, so no chart), and
    with `readmes` the README block `block` rewritten from the JSON just written. A file that
    appeared in `out_dir` during the run is replaced only with `force` (out_refusal)."""
    refuse_as = out_refusal(force)
    d = Path(out_dir)
    write_text(d / f"{stem}.json", json.dumps(payload, indent=2) + "\n", refuse_as)
    if plot is None:
        print(f"wrote {printable(str(d / stem))}.json (nothing timed: no {stem}.png)")
    elif can_plot([f"{stem}.png"]):
        with atomic_path(d / f"{stem}.png", refuse_as) as tmp:
            plot(tmp)
        print(f"wrote {printable(str(d / stem))}.json and {printable(str(d / stem))}.png")
    else:
        print(f"wrote {printable(str(d / stem))}.json")
    if readmes and block:
        rewrite_blocks(readmes, block, payload, d / f"{stem}.json", refuse_as=refuse_as)
