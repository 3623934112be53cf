"""Fuzzing the loaders (issue 20): mutated PNG/JPEG/BMP/TIFF/GIF files, model .npz files and
stroke JSON; and by property (issue 40, hypothesis, at the end): bench result files and
stroke files by what they cost to paint. Each case must end in a result or the loader's own error (a GemmpadError:
one line for the user), never another exception type, and within a generous deadline.

A seeded mutator, so a failure names its seed and case and replays exactly:
GEMMPAD_FUZZ_N sets the cases per kind (default 50, 7 kinds: 350 on CI),
GEMMPAD_FUZZ_SEED the seed (default 20). A failing input is kept under the test's
tmp_path as `<kind>-<case>` for a closer look.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import struct
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from gemmpad.inputs import strokes
from gemmpad.errors import GemmpadError
from gemmpad.inputs.images import load_image
from gemmpad.runtime.model import SHAPES, Model, load_model
from gemmpad.inputs.preprocess import preprocess

N = int(os.environ.get("GEMMPAD_FUZZ_N", "50"))
SEED = int(os.environ.get("GEMMPAD_FUZZ_SEED", "20"))
DEADLINE_S = 30.0  # per case: a hang or an unbounded loop, not a speed limit
# Byte values and 32-bit fields that tend to find edges: sizes, counts, signs.
_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF)
_WORDS = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x10000, 0xFFFF)


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to four random edits: bit flips, byte and 32-bit field overwrites, cuts,
    duplicated or deleted runs, truncation. Headers are hit often (the first 64 bytes
    get a third of the edits), since that is where sizes and counts live."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not buf:
            buf = bytearray(b"\x00")
        at = rng.randrange(min(len(buf), 64)) if rng.random() < 0.33 else rng.randrange(len(buf))
        op = rng.randrange(7)
        if op == 0:
            buf[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[at] = rng.choice(_BYTES) if rng.random() < 0.5 else rng.randrange(256)
        elif op == 2:
            word = rng.choice(_WORDS).to_bytes(4, rng.choice(("big", "little")))
            buf[at : at + 4] = word
        elif op == 3:
            del buf[at : at + rng.randint(1, 64)]
        elif op == 4:
            run = buf[at : at + rng.randint(1, 256)]
            buf[at:at] = run * rng.randint(1, 8)
        elif op == 5:
            buf[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        else:
            del buf[max(1, at) :]
    return bytes(buf)


def _mutate_png(data: bytes, rng: random.Random) -> bytes:
    """Byte edits, then (half the time) every chunk's CRC made right again: Pillow checks
    CRCs, so without this most edits end at "broken PNG file" and never reach the decoder."""
    data = mutate(data, rng)
    if rng.random() < 0.5:
        return data
    out, at = bytearray(data[:8]), 8
    while at + 12 <= len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        if at + 12 + length > len(data):
            break
        out += data[at : at + 8 + length] + struct.pack(">I", zlib.crc32(data[at + 4 : at + 8 + length]))
        at += 12 + length
    return bytes(out + data[at:])


def _mutate_npz(data: bytes, rng: random.Random) -> bytes:
    """Byte edits of the archive half the time; otherwise edits of one member (its .npy
    header or data), an extra member, or a member renamed, in a zip with right CRCs: what
    reaches the array checks and the forward pass rather than zipfile's."""
    if rng.random() < 0.5:
        return mutate(data, rng)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = [(info, zf.read(info)) for info in zf.infolist()]
    i = rng.randrange(len(members))
    info, raw = members[i]
    op = rng.randrange(4)
    if op == 0:
        members[i] = (info, mutate(raw, rng))
    elif op == 1:  # the .npy header only: shapes, dtypes, order
        header_end = raw.index(b"\n") + 1
        members[i] = (info, mutate(raw[:header_end], rng) + raw[header_end:])
    elif op == 2:
        members.append((zipfile.ZipInfo(rng.choice(("W1.npy", "extra.npy", "README.txt", "W1"))), mutate(raw, rng)))
    else:
        members[i] = (zipfile.ZipInfo(rng.choice(("w1.npy", "b9.npy", "W1.npy.npy", "/W1.npy"))), raw)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=info.compress_type) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile's "Duplicate name": a duplicate is the point
        for member, body in members:
            zf.writestr(member.filename, body)
    return buf.getvalue()


def _digit(mode: str, size: int = 40) -> Image.Image:
    im = Image.new("L", (size, size), 255)
    ImageDraw.Draw(im).line([(size * 0.55, size * 0.15), (size * 0.45, size * 0.85)], fill=0, width=4)
    if mode == "RGBA":
        rgba = Image.new("RGBA", im.size, (0, 0, 0, 0))
        rgba.putalpha(Image.eval(im, lambda v: 255 - v))
        return rgba
    return im.convert(mode)


def _image_seeds(fmt: str) -> list[bytes]:
    """A few valid files of one format, in the modes and encodings its decoder has paths for."""
    variants: dict[str, list[tuple[str, dict]]] = {
        "PNG": [("RGBA", {}), ("P", {"transparency": 0}), ("I;16", {}), ("1", {}), ("RGB", {"optimize": True})],
        "JPEG": [("RGB", {"quality": 85}), ("L", {"progressive": True}), ("CMYK", {})],
        "BMP": [("L", {}), ("RGB", {}), ("P", {}), ("1", {})],
        "TIFF": [("L", {"compression": "tiff_deflate"}), ("RGB", {"compression": "tiff_lzw"}), ("F", {}),
                 ("I;16", {}), ("1", {"compression": "group4"}), ("RGBA", {"compression": "packbits"})],
        "GIF": [("P", {"transparency": 0}), ("L", {})],
    }
    out = []
    for mode, options in variants[fmt]:
        im = _digit("RGBA") if mode == "RGBA" else _digit("L").convert(mode)
        buf = io.BytesIO()
        if fmt == "JPEG" and mode == "RGB":
            exif = Image.Exif()
            exif[0x0112] = 6  # orientation: the EXIF path is exercised too
            options = {**options, "exif": exif}
        if fmt == "GIF" and mode == "P":
            flipped = im.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
            options = {**options, "save_all": True, "append_images": [flipped]}
        im.save(buf, fmt, **options)
        out.append(buf.getvalue())
    return out


def _model_seed(compressed: bool) -> bytes:
    rng = np.random.default_rng(SEED)
    w = {k: rng.normal(0, 0.1, s).astype(np.float32) for k, s in SHAPES.items()}
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **w)
    return buf.getvalue()


def _strokes_seed() -> bytes:
    rng = np.random.default_rng(SEED)
    drawing = [np.cumsum(rng.normal(0, 6, (n, 2)), axis=0) + 140 for n in (12, 5, 1)]
    return json.dumps([[[round(float(x), 1), round(float(y), 1)] for x, y in s] for s in drawing]).encode()


def _mutate_json(data: bytes, rng: random.Random) -> bytes:
    """Byte edits half the time; otherwise edits that keep the text JSON-like: numbers
    swapped for extremes, brackets added or removed, deep nesting."""
    if rng.random() < 0.5:
        return mutate(data, rng)
    text = data.decode()
    swaps = ["1e308", "-1e309", "NaN", "Infinity", "1" * 400, "null", "true", '"x"', "[]", "{}", "-0", "[[1,2]]"]
    for _ in range(rng.randint(1, 3)):
        op = 4 if rng.random() < 0.5 else rng.randrange(4)
        at = rng.randrange(len(text) + 1)
        numbers = list(re.finditer(r"-?[0-9.]+(e-?[0-9]+)?", text))
        if op == 4 and numbers:  # keeps the file valid JSON: a value at an edge
            m = rng.choice(numbers)
            text = text[: m.start()] + rng.choice(("2800", "-2800", "2801", "1e-300", "0", "279.9")) + text[m.end() :]
        elif op == 0:
            text = text[:at] + rng.choice(swaps) + text[at:]
        elif op == 1:
            text = text[:at] + text[at + rng.randint(1, 8) :]
        elif op == 2:
            depth = rng.choice((2, 50, 70, 5000))
            text = text[:at] + "[" * depth + "0" + "]" * depth + text[at:]
        else:
            text = text.replace("]", "]" * rng.randint(0, 2), 1)
    return text.encode()


def _check_image(path: Path) -> None:
    pixels, notes = load_image(path)
    assert pixels.ndim == 2 and pixels.dtype in (np.uint8, np.float32) and all(isinstance(n, str) for n in notes)
    preprocess(pixels)  # the rest of `predict`'s path: a result (or None: no ink) or its own error


def _check_model(path: Path) -> None:
    m = load_model(path)
    assert isinstance(m, Model)
    m.check_output(m.forward(np.random.default_rng(0).random((4, 784), dtype=np.float32)))


def _check_strokes(path: Path) -> None:
    drawing = strokes.load(path)
    assert sum(len(s) for s in drawing) <= strokes.MAX_POINTS
    strokes.render(drawing)  # what --replay does with them


KINDS: dict[str, tuple[Callable[[], list[bytes]], Callable[[bytes, random.Random], bytes], Callable[[Path], None], str]] = {
    "png": (lambda: _image_seeds("PNG"), _mutate_png, _check_image, ".png"),
    "jpeg": (lambda: _image_seeds("JPEG"), mutate, _check_image, ".jpg"),
    "bmp": (lambda: _image_seeds("BMP"), mutate, _check_image, ".bmp"),
    "tiff": (lambda: _image_seeds("TIFF"), mutate, _check_image, ".tif"),
    "gif": (lambda: _image_seeds("GIF"), mutate, _check_image, ".gif"),
    "npz": (lambda: [_model_seed(False), _model_seed(True)], _mutate_npz, _check_model, ".npz"),
    "strokes": (lambda: [_strokes_seed()], _mutate_json, _check_strokes, ".json"),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_mutated_files_end_in_a_result_or_a_clear_error(kind: str, tmp_path: Path,
                                                         capfd: pytest.CaptureFixture[str]) -> None:
    """Also quiet: no warning and nothing on stderr (libtiff writes there) outside the
    loader's notes, which `predict` prints beside the file's name."""
    make_seeds, mutator, check, suffix = KINDS[kind]
    seeds = make_seeds()
    rng = random.Random(f"{SEED}-{kind}")
    outcomes = {"result": 0, "error": 0}
    for case in range(N):
        path = tmp_path / f"case{suffix}"
        path.write_bytes(mutator(rng.choice(seeds), rng))
        where = f"{kind} case {case} (GEMMPAD_FUZZ_SEED={SEED})"
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                check(path)
                outcomes["result"] += 1
            except GemmpadError as exc:
                assert "\n" not in str(exc).strip(), f"{where}: a multi-line error: {exc!r}"
                outcomes["error"] += 1
            except Exception as exc:  # noqa: BLE001  the point of the test: name the case, keep the input
                kept = tmp_path / f"{kind}-{case}{suffix}"
                path.rename(kept)
                pytest.fail(f"{where}: {type(exc).__name__}: {exc} (input: {kept})")
        elapsed = time.perf_counter() - t0
        assert elapsed < DEADLINE_S, f"{where} took {elapsed:.1f} s"
        assert not caught, f"{where}: warned {[str(w.message) for w in caught]}"
        assert capfd.readouterr().err == "", f"{where}: wrote to stderr"
    with capfd.disabled():
        print(f"{kind}: {N} cases, {outcomes['result']} results, {outcomes['error']} clear errors")
    assert outcomes["error"] > 0  # the mutator does break files; a fuzz that never fails tested nothing


# ------------------------------------------------------------ by property (hypothesis)
# Issue 40: the fuzz extended to bench result files (what `bench report` writes into a README)
# and stroke files by what they cost to paint. Bounded examples, no deadline (a loaded CI
# machine is slow, not wrong); a failure prints the example that shrank from it.
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gemmpad.bench import report  # noqa: E402
from gemmpad.ui.canvas import Canvas  # noqa: E402

_DROP = object()  # a field left out
_HOSTILE_TEXT = st.one_of(
    st.sampled_from(["<script>alert(1)</script>", "a|b", "`x`", "[l](u)", "<!-- bench:gemm end -->",
                     "<!-- bench:mlp begin -->", "x\n| y |", "\x1b[2J", "\\", "", " " * 70, "\u2028", "cuda.07_warptile",
                     "torch CUDA graph", "fp32", "NVIDIA H200"]),
    st.text(max_size=12),
)
_JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63), st.floats(), _HOSTILE_TEXT,
              st.integers(1, 80).map(lambda n: json.loads("[" * n + "]" * n))),  # deep nesting
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_HOSTILE_TEXT, inner, max_size=3),
    max_leaves=6,
)
_ROWS = {
    "gemm": {"kernel": "cuda.07_warptile", "precision": "fp32", "M": 256, "N": 100, "K": 784, "ms": 0.01,
             "gflops": 500.0, "reference": "cuBLAS fp32", "reference_gflops": 600.0, "percent_of_reference": 83.3},
    "mlp": {"backend": "cuda", "kernel": "cuda.mlp_fused", "batch": 1, "kernel_us": 5.0, "e2e_us": 9.0},
    "train": {"engine": "native", "precision": "fp32", "batch": 256, "epoch_ms_median": 5.5},
}
_MACHINE = {"cpu": "Xeon", "host_cores": 16, "date_utc": "2026-11-29T00:00:00+00:00",
            "cuda": {"available": True, "device": "NVIDIA H200", "multiprocessors": 132, "runtime_version": 13000},
            "nvidia_smi": {"driver_version": "580.159.04"}, "versions": {"numpy": "2.5.2"}}


def _spoiled(template: dict, keep: float = 0.7) -> st.SearchStrategy[dict]:
    """`template` with each field kept (mostly), left out, or any JSON value or hostile text."""
    def field(v: object) -> st.SearchStrategy[object]:
        other = _spoiled(v) if isinstance(v, dict) else st.one_of(st.just(_DROP), _JSON_VALUES)
        return st.floats(0, 1).flatmap(lambda u: st.just(v) if u < keep else other)
    return st.fixed_dictionaries({k: field(v) for k, v in template.items()}).map(
        lambda d: {k: v for k, v in d.items() if v is not _DROP})


def _result_files(kind: str) -> st.SearchStrategy[object]:
    files = st.fixed_dictionaries({"machine": _spoiled(_MACHINE), "results": st.lists(_spoiled(_ROWS[kind]), max_size=6)})
    return st.one_of(files, files, files, _JSON_VALUES)


_UNESCAPED_BAR = re.compile(r"(?<!\\)\|")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(list(_ROWS)).flatmap(lambda kind: st.tuples(st.just(kind), _result_files(kind))))
def test_bench_result_files_end_in_a_table_or_a_clear_error(case: tuple[str, object]) -> None:
    """Any result file: either one line of error and the README untouched, or tables whose
    rows all have the header's columns, no HTML, no control character, and each block's
    markers still once each (issue 40 #12: KeyError, TypeError, <script> in the README)."""
    import argparse
    import tempfile

    kind, data = case
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / report.RESULTS[kind]).write_text(json.dumps(data))
        readme = d / "README.md"
        before = "".join(f"{b}\nold\n{e}\n" for b, e in map(report.markers, report.RESULTS))
        readme.write_text(before)
        try:
            report.run(argparse.Namespace(dir=[str(d)], readme=[str(readme)]))
        except GemmpadError as exc:
            assert "\n" not in str(exc).strip()
            assert readme.read_text() == before
            return
        text = readme.read_text()
    for b, e in map(report.markers, report.RESULTS):
        assert text.count(b) == 1 and text.count(e) == 1
    assert "<script" not in text and not re.search(r"[\x00-\x09\x0b-\x1f\x7f\u2028\u2029]", text)
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows and len({len(_UNESCAPED_BAR.findall(line)) for line in rows}) == 1, rows


_NEAR = st.floats(-20, 300)
_ANY = st.floats(-strokes.FAR_SIDES * 4096, strokes.FAR_SIDES * 4096)
_STROKE_FILES = st.fixed_dictionaries({
    "canvas": st.tuples(st.integers(16, 4096), st.integers(16, 4096)).map(list),
    "strokes": st.lists(st.fixed_dictionaries({
        "width": st.floats(*strokes.WIDTH_RANGE),
        "points": st.lists(st.tuples(st.one_of(_NEAR, _NEAR, _ANY), st.one_of(_NEAR, _NEAR, _ANY)).map(list),
                           min_size=1, max_size=40),
    }), min_size=1, max_size=4),
})


def _counting_painter(work: list[float]) -> Callable[..., None]:
    """A stand-in for strokes.paint_segment that adds up the pixels the real one would touch
    (its clipped bounding box) and the per-call overhead the price counts, painting nothing."""
    def paint(canvas: np.ndarray, p0, p1, width: float) -> None:  # noqa: ANN001
        h, w = canvas.shape
        r = width / 2.0
        xa, xb = max(0, np.floor(min(p0[0], p1[0]) - r - 1)), min(w, np.ceil(max(p0[0], p1[0]) + r + 2))
        ya, yb = max(0, np.floor(min(p0[1], p1[1]) - r - 1)), min(h, np.ceil(max(p0[1], p1[1]) + r + 2))
        work[0] += max(0.0, xb - xa) * max(0.0, yb - ya) + strokes.PIECE_OVERHEAD_PX
    return paint


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_STROKE_FILES)
def test_stroke_files_cost_what_they_are_priced_and_recordings_load_back(raw: dict) -> None:
    """Issue 40 #5: a stroke file either is refused or its painting, straight (fine-tune) and
    through the window's curves (--replay), touches no more pixels than its price allows; and
    what the canvas then holds, saved (--record), loads back."""
    import tempfile
    from unittest import mock

    from gemmpad.ui import canvas as canvas_module

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.json"
        path.write_text(json.dumps(raw))
        try:
            drawing = strokes.load_drawing(path)
        except GemmpadError as exc:
            assert "\n" not in str(exc).strip()
            return
        price = drawing.paint_cost()
        assert price <= strokes.MAX_PAINT_COST
        straight, curved = [0.0], [0.0]
        with mock.patch.object(strokes, "paint_segment", _counting_painter(straight)):
            drawing.on_canvas(strokes.CANVAS).render()
        assert straight[0] <= 1.2 * price
        c = Canvas()
        with mock.patch.object(canvas_module, "paint_segment", _counting_painter(curved)):
            d = drawing.on_canvas(c.size)
            for stroke, width in zip(d.strokes, d.widths):  # harness.replay on the canvas alone
                c.brush = width
                c.press(*stroke[0])
                for p in stroke[1:]:
                    c.move(*p)
                c.release()
        assert curved[0] <= 1.2 * strokes.MAX_PAINT_COST
        strokes.save(path, c.strokes(), c.widths(), c.size)
        if c.strokes():
            strokes.load_drawing(path)
