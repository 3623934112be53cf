"""Things people draw that are not one digit: the set the "unsure" detector is measured on.

Each sample is drawn as the app would draw it (strokes on the 280x280 canvas, the round
brush of gemmpad.inputs.strokes, then preprocess()), in four kinds:
- scribbles: one to three random smooth strokes with many turns;
- letters: capitals that no digit resembles (A E F H K M N R W X Y; O, I, Z, S, B, G,
  T and q look like digits and are left out);
- shapes: a dot, a horizontal line, a square, a triangle, a star, a cross, a spiral;
- pairs: two drawn digits side by side ("12" written together).
Placement, size, slant, jitter and brush width vary like gemmpad.data.synthetic's digits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gemmpad.data.synthetic import STYLE_NAMES, sample_strokes
from gemmpad.inputs.preprocess import preprocess
from gemmpad.inputs.strokes import CANVAS, render

KINDS = ("scribble", "letter", "shape", "pair")
SEED = 20261125

# Capitals as polylines in a unit box (x right, y down): strokes of points.
LETTERS: dict[str, list[list[tuple[float, float]]]] = {
    "A": [[(0.0, 1.0), (0.5, 0.0), (1.0, 1.0)], [(0.25, 0.55), (0.75, 0.55)]],
    "E": [[(1.0, 0.0), (0.0, 0.0), (0.0, 1.0), (1.0, 1.0)], [(0.0, 0.5), (0.8, 0.5)]],
    "F": [[(1.0, 0.0), (0.0, 0.0), (0.0, 1.0)], [(0.0, 0.5), (0.8, 0.5)]],
    "H": [[(0.0, 0.0), (0.0, 1.0)], [(1.0, 0.0), (1.0, 1.0)], [(0.0, 0.5), (1.0, 0.5)]],
    "K": [[(0.0, 0.0), (0.0, 1.0)], [(1.0, 0.0), (0.0, 0.55), (1.0, 1.0)]],
    "M": [[(0.0, 1.0), (0.0, 0.0), (0.5, 0.6), (1.0, 0.0), (1.0, 1.0)]],
    "N": [[(0.0, 1.0), (0.0, 0.0), (1.0, 1.0), (1.0, 0.0)]],
    "R": [[(0.0, 1.0), (0.0, 0.0), (0.7, 0.0), (0.95, 0.2), (0.7, 0.45), (0.0, 0.45)], [(0.4, 0.45), (1.0, 1.0)]],
    "W": [[(0.0, 0.0), (0.25, 1.0), (0.5, 0.35), (0.75, 1.0), (1.0, 0.0)]],
    "X": [[(0.0, 0.0), (1.0, 1.0)], [(1.0, 0.0), (0.0, 1.0)]],
    "Y": [[(0.0, 0.0), (0.5, 0.5), (1.0, 0.0)], [(0.5, 0.5), (0.5, 1.0)]],
}


@dataclass(frozen=True)
class NonDigits:
    images: np.ndarray  # float32 [N, 28, 28], as preprocess() makes them
    kinds: np.ndarray  # int64 [N], index into KINDS


def _place(strokes: list[np.ndarray], rng: np.random.Generator) -> tuple[list[np.ndarray], float]:
    """Strokes in a unit-ish box -> canvas pixels, at a random size, place and slant, with a brush width."""
    slant = rng.uniform(-0.3, 0.2)
    pts = [np.asarray(s, dtype=np.float64) @ np.array([[1.0, 0.0], [-slant, 1.0]]) for s in strokes]
    allp = np.vstack(pts)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    size_px = rng.uniform(80.0, 240.0)
    scale = size_px / max(float((hi - lo).max()), 1e-6)
    width = rng.uniform(8.0, 26.0)
    ch, cw = CANVAS
    extent = (hi - lo) * scale
    margin = width / 2 + 2
    x0 = rng.uniform(margin, max(margin, cw - margin - extent[0]))
    y0 = rng.uniform(margin, max(margin, ch - margin - extent[1]))
    out = [(p - lo) * scale + np.array([x0, y0]) + rng.normal(0.0, 0.6, p.shape) for p in pts]
    return out, float(width)


def _dense(poly: list[tuple[float, float]], step: float = 0.02) -> np.ndarray:
    """A polyline sampled every `step` (so jitter and slant bend it like a hand would)."""
    p = np.asarray(poly, dtype=np.float64)
    seg = np.hypot(*np.diff(p, axis=0).T)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    at = np.append(np.arange(0.0, s[-1], step), s[-1]) if s[-1] > 0 else np.zeros(1)
    return np.column_stack([np.interp(at, s, p[:, 0]), np.interp(at, s, p[:, 1])])


def scribble(rng: np.random.Generator) -> tuple[list[np.ndarray], float]:
    strokes = []
    for _ in range(int(rng.integers(1, 4))):
        n = int(rng.integers(60, 160))
        heading = np.cumsum(rng.normal(0.0, 0.45, n))
        steps = np.column_stack([np.cos(heading), np.sin(heading)]) * 0.02
        strokes.append(np.cumsum(steps, axis=0) + rng.uniform(0, 0.5, 2))
    return _place(strokes, rng)


def letter(rng: np.random.Generator) -> tuple[list[np.ndarray], float]:
    shape = LETTERS[sorted(LETTERS)[int(rng.integers(len(LETTERS)))]]
    strokes = [_dense(s) + rng.normal(0.0, 0.01, (1, 2)) for s in shape]
    aspect = rng.uniform(0.6, 1.1)
    return _place([s * np.array([aspect, 1.0]) for s in strokes], rng)


def shape(rng: np.random.Generator) -> tuple[list[np.ndarray], float]:
    kind = int(rng.integers(7))
    if kind == 0:  # a dot
        return [np.array([[rng.uniform(60, 220), rng.uniform(60, 220)]])], float(rng.uniform(10, 30))
    if kind == 1:  # a horizontal line
        return _place([_dense([(0.0, 0.0), (1.0, rng.uniform(-0.1, 0.1))])], rng)
    if kind == 2:  # a square
        return _place([_dense([(0, 0), (1, 0), (1, 1), (0, 1), (0, 0)])], rng)
    if kind == 3:  # a triangle
        return _place([_dense([(0.5, 0), (1, 0.9), (0, 0.9), (0.5, 0)])], rng)
    if kind == 4:  # a five-pointed star in one stroke
        a = np.pi / 2 + np.arange(6) * 4 * np.pi / 5
        return _place([_dense(list(zip(0.5 + 0.5 * np.cos(a), 0.5 - 0.5 * np.sin(a))))], rng)
    if kind == 5:  # a plus sign
        return _place([_dense([(0.5, 0), (0.5, 1)]), _dense([(0, 0.5), (1, 0.5)])], rng)
    t = np.linspace(0, rng.uniform(3, 5) * np.pi, 200)  # a spiral
    return _place([np.column_stack([t * np.cos(t), t * np.sin(t)])], rng)


def pair(rng: np.random.Generator) -> tuple[list[np.ndarray], float]:
    """Two drawn digits next to each other, each squeezed into its half of the canvas."""
    out, widths = [], []
    for half in range(2):
        name = STYLE_NAMES[int(rng.integers(len(STYLE_NAMES)))]
        strokes, width = sample_strokes(int(name[0]), name[2:], rng)
        allp = np.vstack(strokes)
        lo, hi = allp.min(axis=0), allp.max(axis=0)
        scale = min(120.0 / max(hi[0] - lo[0], 1e-6), 200.0 / max(hi[1] - lo[1], 1e-6))
        offset = np.array([10.0 + 140.0 * half + rng.uniform(-8, 8), 40.0 + rng.uniform(-10, 10)])
        out += [(s - lo) * scale + offset for s in strokes]
        widths.append(width * scale)
    return out, float(np.clip(np.mean(widths), 6.0, 24.0))


MAKERS: dict[str, Callable[[np.random.Generator], tuple[list[np.ndarray], float]]] = {
    "scribble": scribble, "letter": letter, "shape": shape, "pair": pair,
}


def generate(per_kind: int = 250, seed: int = SEED) -> NonDigits:
    """`per_kind` samples of each kind, preprocessed like the app's canvas."""
    rng = np.random.default_rng(seed)
    images, kinds = [], []
    for k, name in enumerate(KINDS):
        made = 0
        while made < per_kind:
            strokes, width = MAKERS[name](rng)
            x = preprocess(render(strokes, CANVAS, width))
            if x is None:  # drawn entirely off the canvas: draw another
                continue
            images.append(x)
            kinds.append(k)
            made += 1
    return NonDigits(np.stack(images).astype(np.float32), np.array(kinds, dtype=np.int64))
