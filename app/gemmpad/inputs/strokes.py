"""Strokes: how a drawing is stored, replayed and painted into pixels.

A drawing is a list of strokes; a stroke is an [n, 2] array of (x, y) points in
canvas pixels. A strokes file also records each stroke's brush width and the canvas
size, so that a replay paints exactly what was drawn:
    {"canvas": [height, width], "strokes": [{"width": 18.0, "points": [[x, y], ...]}, ...]}
(a bare list of strokes, the older form, is read with the default width on CANVAS).
The same files are --record's, the window's saved drawings and corrections
(models/README.md). The app paints each new segment into a float image (1 = ink)
with an anti-aliased round brush, and the same painter renders the synthetic
drawn digits used to train and evaluate the model, so the model sees exactly
what the app makes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gemmpad.errors import GemmpadError
from gemmpad.inputs.files import write_text
from gemmpad.inputs.reads import load_json

Stroke = np.ndarray  # [n, 2] float, (x, y) in canvas pixels
CANVAS = (280, 280)  # (height, width) of the app's canvas
# Farthest a stroke point may lie from the canvas origin, in the file's canvas sides: relative
# to the canvas, so the same file scaled to the app's canvas (a replay, and its recording) holds.
FAR_SIDES = 10
MAX_STROKE_POINTS = 2_000  # a slow, long stroke at 60 frames per second is a few hundred
MAX_POINTS = 10_000  # replaying this many took ~10 s in the window (development VM, 2026-11-24)
MAX_FILE_BYTES = 4 << 20  # 10,000 points take ~0.15 MB as saved; room for indentation
# The window paints the span between two pointer samples as a curve cut into pieces this long
# (gemmpad.ui.canvas); a file is priced (paint_cost) as the window would paint it.
CURVE_STEP_PX = 3.0
# Painting one piece costs a NumPy call (~30-110 us) besides its pixels (~30 ns each): this
# many pixels' worth, so that thousands of thin pieces are priced, not only wide ones.
PIECE_OVERHEAD_PX = 1_000
# What painting a drawing may cost, in pixels touched at the app's 280x280 canvas (paint_cost):
# ~1-4 s of painting. A digit drawn at the default brush costs ~0.3 million; 10,000 points at
# the window's widest brush, ~30 million. Points alone did not bound the work: a 110 KB file (canvas 4096,
# width 200, long zig-zags) would have taken half an hour to fine-tune on.
MAX_PAINT_COST = 40 << 20
DEFAULT_WIDTH = 18.0  # px: the app's default brush, and the width of strokes in files without one
WIDTH_RANGE = (0.5, 200.0)


def paint_segment(canvas: np.ndarray, p0: Sequence[float], p1: Sequence[float], width: float) -> None:
    """Paint a round-capped segment of diameter `width` into `canvas` in place.

    Coverage falls off linearly over one pixel at the edge (anti-aliasing) and is
    max-blended, so repainting the same place never darkens it twice. Only the
    segment's bounding box is touched, which keeps live drawing cheap.
    """
    h, w = canvas.shape
    r = width / 2.0
    x0, y0 = float(p0[0]), float(p0[1])
    x1, y1 = float(p1[0]), float(p1[1])
    xa, xb = int(max(0, np.floor(min(x0, x1) - r - 1))), int(min(w, np.ceil(max(x0, x1) + r + 2)))
    ya, yb = int(max(0, np.floor(min(y0, y1) - r - 1))), int(min(h, np.ceil(max(y0, y1) + r + 2)))
    if xa >= xb or ya >= yb:
        return
    ys, xs = np.mgrid[ya:yb, xa:xb].astype(np.float32)
    xs += 0.5  # pixel centres
    ys += 0.5
    dx, dy = x1 - x0, y1 - y0
    len2 = dx * dx + dy * dy
    if len2 > 0:
        t = np.clip(((xs - x0) * dx + (ys - y0) * dy) / len2, 0.0, 1.0)
    else:
        t = np.zeros_like(xs)
    dist = np.hypot(xs - (x0 + t * dx), ys - (y0 + t * dy))
    cover = np.clip(r + 0.5 - dist, 0.0, 1.0)
    region = canvas[ya:yb, xa:xb]
    np.maximum(region, cover, out=region)


def paint_stroke(canvas: np.ndarray, stroke: Stroke, width: float) -> None:
    """Paint every segment of one stroke (a single point paints a dot)."""
    pts = np.asarray(stroke, dtype=np.float64).reshape(-1, 2)
    if len(pts) == 1:
        paint_segment(canvas, pts[0], pts[0], width)
    for a, b in zip(pts[:-1], pts[1:]):
        paint_segment(canvas, a, b, width)


def render(strokes: Sequence[Stroke], size: tuple[int, int] = CANVAS, width: float = DEFAULT_WIDTH) -> np.ndarray:
    """A fresh float32 image of `size` (height, width) with the strokes painted in."""
    canvas = np.zeros(size, dtype=np.float32)
    for s in strokes:
        paint_stroke(canvas, s, width)
    return canvas


@dataclass(frozen=True)
class Drawing:
    """What a strokes file holds: the strokes, each one's brush width, the canvas size."""

    strokes: list[Stroke]
    widths: list[float]
    canvas: tuple[int, int] = CANVAS  # (height, width)

    def on_canvas(self, size: tuple[int, int]) -> Drawing:
        """The drawing scaled (points and widths alike) to a canvas of `size`, same aspect kept."""
        f = min(size[0] / self.canvas[0], size[1] / self.canvas[1])
        if f == 1.0:
            return self
        return Drawing([s * f for s in self.strokes], [w * f for w in self.widths], size)

    def paint_cost(self) -> float:
        """What painting the drawing costs on the app's canvas (strokes scaled to it, as a
        replay draws them), in pixels touched: see stroke_cost."""
        f = min(CANVAS[0] / self.canvas[0], CANVAS[1] / self.canvas[1])
        return sum(stroke_cost(s * f, w * f) for s, w in zip(self.strokes, self.widths))

    def render(self) -> np.ndarray:
        """The canvas as painted: each stroke at its own width."""
        canvas = np.zeros(self.canvas, dtype=np.float32)
        for s, w in zip(self.strokes, self.widths):
            paint_stroke(canvas, s, w)
        return canvas


def piece_cost(length: float | np.ndarray, width: float) -> float | np.ndarray:
    """Pixels touched painting a segment of `length` px at brush `width`: the rectangle
    around its round-capped outline with the one-pixel anti-aliased rim, per CURVE_STEP_PX
    piece the window cuts it into (continuous in `length`, so rounding a saved point moves
    the price by little), plus PIECE_OVERHEAD_PX per piece."""
    rim = width + 2.0
    return length * rim + np.maximum(1.0, length / CURVE_STEP_PX) * (rim * rim + PIECE_OVERHEAD_PX)


def stroke_cost(points: np.ndarray, width: float) -> float:
    """Pixels touched painting one stroke (piece_cost of each segment, and the dot where the
    pen went down), in the units of `points`: the area painted, overlaps counted, which is
    what the time goes by (length x width for a long stroke, width squared per short piece)."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    lengths = np.hypot(*np.diff(pts, axis=0).T)
    return float(np.sum(piece_cost(lengths, width)) + piece_cost(0.0, width))


def load(path: str | os.PathLike[str]) -> list[Stroke]:
    """The strokes of a strokes file (load_drawing() also gives widths and canvas)."""
    return load_drawing(path).strokes


def load_drawing(path: str | os.PathLike[str]) -> Drawing:
    """Read a strokes JSON file (the format in the module's docstring).

    Points are capped per stroke and in all (MAX_STROKE_POINTS, MAX_POINTS): a hand
    drawing a digit makes a few hundred, and replaying costs time per point, so a
    larger file is a mistake or an attack, refused before any of it is drawn. So is
    one whose painting would cost more than MAX_PAINT_COST (long strokes, wide brushes).
    """
    p = Path(path)
    raw = load_json(p, MAX_FILE_BYTES, GemmpadError, "strokes JSON file")
    canvas, widths = CANVAS, None
    if isinstance(raw, dict) and {"canvas", "strokes"} <= raw.keys():
        canvas, raw, widths = _canvas(raw["canvas"], p), raw["strokes"], []
        if not isinstance(raw, list) or not all(isinstance(s, dict) and {"width", "points"} <= s.keys() for s in raw):
            raise GemmpadError(f'{p}: "strokes" must be a list of {{"width": px, "points": [[x, y], ...]}}')
        widths = [_width(s["width"], i, p) for i, s in enumerate(raw)]
        raw = [s["points"] for s in raw]
    if not isinstance(raw, list):
        raise GemmpadError(f"{p}: expected a list of strokes, got {type(raw).__name__} "
                           '(or an object with "canvas" and "strokes")')
    strokes = []
    total = 0
    for i, s in enumerate(raw):
        if isinstance(s, list) and len(s) > MAX_STROKE_POINTS:
            raise GemmpadError(f"{p}: stroke {i} has {len(s):,} points, more than a stroke may have "
                               f"({MAX_STROKE_POINTS:,})")
        total += len(s) if isinstance(s, list) else 0
        if total > MAX_POINTS:
            raise GemmpadError(f"{p}: more than {MAX_POINTS:,} points in all (by stroke {i}): too many to replay")
        try:
            arr = np.asarray(s, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            raise GemmpadError(f"{p}: stroke {i} is not a list of [x, y] points") from None
        if arr.ndim != 2 or arr.shape[1] != 2 or len(arr) == 0 or not np.all(np.isfinite(arr)):
            raise GemmpadError(f"{p}: stroke {i} must be a non-empty list of finite [x, y] points")
        far = FAR_SIDES * max(canvas)  # a pen can leave the canvas, not by kilometres
        if np.abs(arr).max() > far:
            raise GemmpadError(f"{p}: stroke {i} has a point more than {far:g} px from the canvas origin "
                               f"({FAR_SIDES} times the canvas)")
        strokes.append(arr)
    drawing = Drawing(strokes, widths if widths is not None else [DEFAULT_WIDTH] * len(strokes), canvas)
    cost = drawing.paint_cost()
    if cost > MAX_PAINT_COST:
        raise GemmpadError(f"{p}: painting it would touch {cost / 1e6:,.0f} million pixels at the app's canvas "
                           f"(strokes this long and wide), more than a drawing may ({MAX_PAINT_COST / 1e6:.0f} million)")
    return drawing


def _canvas(value: object, p: Path) -> tuple[int, int]:
    if (isinstance(value, list) and len(value) == 2 and all(type(v) is int and 16 <= v <= 4096 for v in value)):
        return value[0], value[1]
    raise GemmpadError(f'{p}: "canvas" must be [height, width] in pixels, each 16-4096')


def _width(value: object, i: int, p: Path) -> float:
    if type(value) in (int, float) and WIDTH_RANGE[0] <= value <= WIDTH_RANGE[1]:
        return float(value)
    raise GemmpadError(f"{p}: stroke {i}'s width must be {WIDTH_RANGE[0]:g}-{WIDTH_RANGE[1]:g} px")


def save(path: str | os.PathLike[str], strokes: Sequence[Stroke], widths: Sequence[float] | None = None,
         canvas: tuple[int, int] = CANVAS) -> None:
    """Write strokes with their widths (DEFAULT_WIDTH when not given) and the canvas size as
    JSON (atomically), points rounded to 0.1 px."""
    write_text(path, dumps(strokes, widths, canvas))


def dumps(strokes: Sequence[Stroke], widths: Sequence[float] | None = None, canvas: tuple[int, int] = CANVAS) -> str:
    """The text `save` writes: for a writer that puts it in one unit with other files (the window's PNG)."""
    ws = [DEFAULT_WIDTH] * len(strokes) if widths is None else list(widths)
    data = {"canvas": [int(canvas[0]), int(canvas[1])],
            "strokes": [{"width": round(float(w), 2),
                         "points": [[round(float(x), 1), round(float(y), 1)] for x, y in np.asarray(s).reshape(-1, 2)]}
                        for s, w in zip(strokes, ws)]}
    return json.dumps(data) + "\n"
