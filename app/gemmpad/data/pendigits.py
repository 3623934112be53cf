"""Real writers' digits: the pendigits pen trajectories, read, split by writer and drawn like the app.

`pendigits-orig.tra` (Alpaydin & Alimoglu, UCI, CC BY 4.0) holds 7,494 digits by 30
people as pen trajectories in the UNIPEN text format: the same kind of input the app
records. They are the project's only real, stroke-level human digits, so they are
both training data and the honest test of "does it read people it has never seen".

Two rules this module exists to make easy to follow:
- split by writer, never by sample (`writer_folds`, `split_by_writer`): one person's
  digits look alike, so a random split overstates accuracy on new people;
- show the model a pendigits digit exactly as the app would show it a drawing
  (`render`): the strokes painted with the app's own brush (`gemmpad.inputs.strokes`) on a
  canvas, at a chosen pen width, size, place, slant and polarity, then `preprocess`.

The file format (one digit):

    .SEGMENT DIGIT    0 ? "8"      label in quotes
    .COMMENT 8 12  224             label, writer (1..30), sample number
    .PEN_DOWN
     267  333                      x y, tablet units, y grows upwards
    .PEN_UP                        (more PEN_DOWN ... PEN_UP blocks: more strokes)
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gemmpad.data import datafind
from gemmpad.errors import DataError
from gemmpad.inputs.reads import read_input
from gemmpad.inputs.strokes import CANVAS
from gemmpad.inputs.strokes import render as paint

FILENAME = datafind.PENDIGITS_FILE
MAX_BYTES = 64 << 20  # the real file is 3.6 MB; anything this big is not it (and would fill memory)
MAX_POINTS = 10_000  # per stroke; the real file's longest has about 100
MAX_COORD = 1e5  # tablet units; the real box is 500x500


@dataclass(frozen=True, eq=False)
class PenDigit:
    """One written digit: its label, its writer (1..30) and its strokes.

    strokes: float32 [n, 2] arrays of (x, y) in tablet units, y up as in the file
    (flip it for a canvas: `render` does).
    """

    digit: int
    writer: int
    strokes: list[np.ndarray]


def default_path() -> Path:
    """The pendigits file where datafind finds it ($GEMMPAD_PENDIGITS, the fetched copy, ...)."""
    return datafind.pendigits_file()


def read_pendigits(path: str | os.PathLike[str] | None = None) -> list[PenDigit]:
    """Every digit in a UNIPEN pendigits file, in file order.

    A missing, huge, binary, truncated or malformed file raises DataError naming the
    file and line: a half-copied file must not quietly become a smaller test set.
    """
    p = Path(path) if path is not None else default_path()
    if p.is_dir():
        p = p / FILENAME
    raw = read_input(p, MAX_BYTES, DataError, "pendigits file")  # a FIFO or device is refused, not waited on
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise DataError(f"{p}: not a UNIPEN text file (byte {exc.start} is not ASCII)") from None
    return _parse(text.splitlines(), str(p))


def _parse(lines: list[str], source: str) -> list[PenDigit]:
    """The UNIPEN state machine: SEGMENT (label) -> COMMENT (writer) -> PEN_DOWN/points/PEN_UP ..."""
    out: list[PenDigit] = []
    label: int | None = None
    writer: int | None = None
    strokes: list[np.ndarray] = []
    points: list[tuple[float, float]] | None = None  # inside a PEN_DOWN block

    def fail(n: int, what: str) -> DataError:
        return DataError(f"{source}:{n}: {what}")

    def finish(n: int) -> None:
        if label is None:
            return
        if writer is None:
            raise fail(n, f"digit {label} has no .COMMENT line naming its writer")
        if not strokes:
            raise fail(n, f"digit {label} of writer {writer} has no strokes (truncated file?)")
        out.append(PenDigit(digit=label, writer=writer, strokes=list(strokes)))

    for n, line in enumerate(lines, start=1):
        s = line.strip()
        if not s:
            continue
        if s[0] != ".":
            if points is None:
                raise fail(n, f"pen coordinates outside a .PEN_DOWN block: {s[:40]!r}")
            xy = s.split()
            try:
                x, y = float(xy[0]), float(xy[1])
            except (ValueError, IndexError):
                raise fail(n, f"expected two numbers 'x y', got {s[:40]!r}") from None
            if len(xy) != 2 or not (abs(x) <= MAX_COORD and abs(y) <= MAX_COORD):
                raise fail(n, f"expected two finite coordinates within {MAX_COORD:g}, got {s[:40]!r}")
            if len(points) >= MAX_POINTS:
                raise fail(n, f"a stroke with more than {MAX_POINTS} points")
            points.append((x, y))
            continue
        word = s.split(maxsplit=1)[0]
        if points is not None and word != ".PEN_UP":
            raise fail(n, f"{word} inside a .PEN_DOWN block (missing .PEN_UP)")
        if word == ".SEGMENT":
            finish(n)
            quoted = s.split('"')
            if len(quoted) != 3 or quoted[1] not in "0123456789" or len(quoted[1]) != 1:
                raise fail(n, f'a .SEGMENT line must end with the digit in quotes, like "7": {s[:60]!r}')
            label, writer, strokes = int(quoted[1]), None, []
        elif word == ".COMMENT" and label is not None:
            f = s.split()
            try:
                got, who = int(f[1]), int(f[2])
            except (ValueError, IndexError):
                raise fail(n, f"expected '.COMMENT <digit> <writer> <sample>', got {s[:60]!r}") from None
            if got != label:
                raise fail(n, f".COMMENT says digit {got} but its .SEGMENT says {label}")
            if who < 1:
                raise fail(n, f"writer id {who} (must be >= 1)")
            writer = who
        elif word == ".PEN_DOWN":
            if label is None:
                raise fail(n, ".PEN_DOWN before any .SEGMENT")
            points = []
        elif word == ".PEN_UP":
            if points is None:
                raise fail(n, ".PEN_UP without a .PEN_DOWN")
            if not points:
                raise fail(n, "a stroke without points")
            strokes.append(np.asarray(points, dtype=np.float32))
            points = None
        # every other dot-line (.INCLUDE, .LEXICON, .DT, ...) says nothing about the digits
    if points is not None:
        raise fail(len(lines), "the file ends inside a .PEN_DOWN block (truncated)")
    finish(len(lines))
    if not out:
        raise DataError(f"{source}: no digits found (not a UNIPEN pendigits file?)")
    return out


# ---------------------------------------------------------------- splitting by writer


def writers(samples: Sequence[PenDigit]) -> list[int]:
    """The writer ids present, ascending."""
    return sorted({s.writer for s in samples})


def writer_folds(samples: Sequence[PenDigit], k: int) -> list[tuple[int, ...]]:
    """k disjoint groups of writer ids that together cover every writer: fold i holds the
    i-th, (i+k)-th, ... writer in ascending order. Deterministic, so every report of
    "fold 2" means the same people."""
    ids = writers(samples)
    if not 1 <= k <= len(ids):
        raise ValueError(f"k must be between 1 and the number of writers ({len(ids)}), got {k}")
    return [tuple(ids[i::k]) for i in range(k)]


def split_by_writer(samples: Sequence[PenDigit],
                    held_out: Collection[int]) -> tuple[list[PenDigit], list[PenDigit]]:
    """(samples by the other writers, samples by the `held_out` writers), order kept."""
    out = set(held_out)
    return [s for s in samples if s.writer not in out], [s for s in samples if s.writer in out]


def select_writers(samples: Sequence[PenDigit], first: int, last: int) -> list[PenDigit]:
    """The samples of writers first..last (inclusive): `gemmpad eval`'s writer range."""
    return [s for s in samples if first <= s.writer <= last]


# ---------------------------------------------------------------- drawing like the app


@dataclass(frozen=True)
class Style:
    """How a trajectory is put on a canvas: the things that differ between people's
    devices and habits but not their digits.

    canvas (height, width) px; width: pen diameter px; height: the digit's height as a
    fraction of the canvas height; centre: (x, y) of the digit's box as fractions of the
    canvas; slant: x shift per unit of height upwards (0.3 leans the top right); aspect:
    horizontal stretch; rotate: degrees, clockwise on the canvas; dark_ink: dark ink on light paper (False: light on dark, the
    app canvas's own ink-is-1 image).
    """

    canvas: tuple[int, int] = CANVAS
    width: float = 18.0
    height: float = 0.7
    centre: tuple[float, float] = (0.5, 0.5)
    slant: float = 0.0
    aspect: float = 1.0
    rotate: float = 0.0
    dark_ink: bool = False


# The styles real-writer accuracy is reported for (models/README.md). Position, size and
# slant are varied too, though preprocess should make them irrelevant: the pen, the canvas
# and the polarity are what users' devices actually differ in.
STYLES: dict[str, Style] = {
    "brush-18px-280": Style(),  # the app's default brush on its canvas
    "brush-18px-280-dark": Style(dark_ink=True),
    "thin-4px-dark": Style(width=4.0, dark_ink=True),
    "thin-4px-light": Style(width=4.0),
    "thick-32px-dark": Style(width=32.0, height=0.8, dark_ink=True),
    "thick-32px-light": Style(width=32.0, height=0.8, centre=(0.45, 0.55)),
    "pen-3px-400-dark": Style(canvas=(400, 400), width=3.0, height=0.45, centre=(0.4, 0.6), dark_ink=True),
    "small-8px-corner": Style(width=8.0, height=0.3, centre=(0.25, 0.25), slant=0.2),
}


def random_style(rng: np.random.Generator) -> Style:
    """A style drawn at random for training: any pen from a 2 px pen on a large image to a
    40 px brush, any size and place, a slant, narrow or wide, turned a little, either polarity."""
    side = int(rng.integers(200, 501))
    canvas = (side, int(side * rng.uniform(0.8, 1.25)))
    height = float(rng.uniform(0.25, 0.9))
    width = float(np.exp(rng.uniform(np.log(2.0), np.log(0.2 * height * side))))  # up to a fifth of the digit
    half = height / 2 + 0.02
    centre = (float(rng.uniform(min(0.5, half), max(0.5, 1 - half))), float(rng.uniform(min(0.5, half),
                                                                                      max(0.5, 1 - half))))
    return Style(canvas=canvas, width=width, height=height, centre=centre, slant=float(rng.uniform(-0.35, 0.35)),
                 aspect=float(np.exp(rng.uniform(-0.25, 0.25))), rotate=float(rng.uniform(-12.0, 12.0)),
                 dark_ink=bool(rng.random() < 0.5))


def reshaped(sample: PenDigit, rng: np.random.Generator) -> PenDigit:
    """The same digit as another person might write it: each stroke moved and sized a little on
    its own, its ends cut short or run on, the whole bent by a smooth displacement.

    A random style only changes the pen and the page; people differ in where a stroke
    starts and stops (a 4 whose stem rises above the bar or not, a 9 whose tail runs on)
    and in how the strokes sit together. Amounts are fractions of the digit's size."""
    pts = [np.asarray(s, dtype=np.float64) for s in sample.strokes]
    allp = np.vstack(pts)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    size = float(max(hi[1] - lo[1], hi[0] - lo[0], 1.0))
    out = []
    for p in pts:
        if len(p) >= 3:
            seg = np.linalg.norm(np.diff(p, axis=0), axis=1)
            arc = np.concatenate([[0.0], np.cumsum(seg)])
            length = arc[-1]
            if length > 0:
                start, end = 0.0, length
                for side in (0, 1):  # each end: cut short (0-15 % of the stroke) or run on (0-10 %)
                    u = rng.random()
                    if u < 0.3:
                        cut = rng.uniform(0.0, 0.15) * length
                        start, end = (start + cut, end) if side == 0 else (start, end - cut)
                    elif u < 0.5:
                        run = rng.uniform(0.0, 0.1) * length
                        start, end = (start - run, end) if side == 0 else (start, end + run)
                if end - start > 0.2 * length:
                    t = np.concatenate([[start], arc[(arc > start) & (arc < end)], [end]])
                    p = np.column_stack([_along(arc, p[:, 0], t), _along(arc, p[:, 1], t)])
        c = p.mean(axis=0)
        p = (p - c) * np.exp(rng.normal(0.0, 0.08)) + c + rng.normal(0.0, 0.035 * size, 2)
        out.append(p)
    bend = rng.normal(0.0, 0.03 * size, (2, 2))  # a smooth displacement: one wave each way
    phase = rng.uniform(0.0, 2 * np.pi, (2, 2))
    freq = rng.uniform(0.5, 1.5, (2, 2)) * 2 * np.pi / size
    out = [p + np.column_stack([bend[0, 0] * np.sin(freq[0, 0] * p[:, 1] + phase[0, 0])
                                + bend[0, 1] * np.sin(freq[0, 1] * p[:, 0] + phase[0, 1]),
                                bend[1, 0] * np.sin(freq[1, 0] * p[:, 0] + phase[1, 0])
                                + bend[1, 1] * np.sin(freq[1, 1] * p[:, 1] + phase[1, 1])]) for p in out]
    return PenDigit(sample.digit, sample.writer, [p.astype(np.float32) for p in out])


def _along(arc: np.ndarray, v: np.ndarray, t: np.ndarray) -> np.ndarray:
    """v at arc lengths t: linear between the points, straight on past either end."""
    inside = np.interp(t, arc, v)
    before, after = t < arc[0], t > arc[-1]
    if before.any():
        k = np.searchsorted(arc, arc[0] + 1e-9 + 0.1 * (arc[-1] - arc[0]))  # the first tenth's direction
        k = min(max(k, 1), len(arc) - 1)
        inside[before] = v[0] + (v[k] - v[0]) / max(arc[k] - arc[0], 1e-9) * (t[before] - arc[0])
    if after.any():
        k = np.searchsorted(arc, arc[-1] - 0.1 * (arc[-1] - arc[0])) - 1
        k = min(max(k, 0), len(arc) - 2)
        inside[after] = v[-1] + (v[-1] - v[k]) / max(arc[-1] - arc[k], 1e-9) * (t[after] - arc[-1])
    return inside


def canvas_strokes(sample: PenDigit, style: Style) -> list[np.ndarray]:
    """The sample's strokes in canvas pixels (y down) for `style`: flipped, slanted,
    stretched, rotated, scaled to style.height (shrunk if it would not fit the width) and centred."""
    pts = [np.asarray(s, dtype=np.float64) * (1.0, -1.0) for s in sample.strokes]  # y down
    allp = np.vstack(pts)
    mid_y = 0.5 * (allp[:, 1].min() + allp[:, 1].max())
    shaped = [np.column_stack([p[:, 0] * style.aspect - style.slant * (p[:, 1] - mid_y), p[:, 1]]) for p in pts]
    if style.rotate:
        a = np.radians(style.rotate)
        turn = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
        shaped = [p @ turn.T for p in shaped]
    allp = np.vstack(shaped)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    ch, cw = style.canvas
    span = np.maximum(hi - lo, 1.0)
    scale = min(style.height * ch / span[1], 0.95 * cw / span[0])
    target = np.array([style.centre[0] * cw, style.centre[1] * ch])
    return [(p - (lo + hi) / 2.0) * scale + target for p in shaped]


def render(sample: PenDigit, style: Style | str = "brush-18px-280") -> np.ndarray:
    """The canvas (float32 [H, W] in [0, 1]) the app would hold had this pen moved on it."""
    st = STYLES[style] if isinstance(style, str) else style
    canvas = paint(canvas_strokes(sample, st), st.canvas, st.width)
    return 1.0 - canvas if st.dark_ink else canvas
