"""The drawing surface: strokes in, a float image out, with no GUI code.

The canvas is a NumPy array that the app shows as a texture, painted segment by
segment with `gemmpad.inputs.strokes.paint_segment` as the pointer moves (pointer
samples are joined by short curves, so fast strokes stay round). Keeping it
free of Dear PyGui means the exact pixels the network reads can be tested
headless, and that replaying recorded strokes reproduces the live drawing bit
for bit (undo re-renders the remaining strokes with the same painter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gemmpad.inputs.strokes import (CANVAS, CURVE_STEP_PX, DEFAULT_WIDTH, FAR_SIDES, MAX_PAINT_COST, MAX_POINTS,
                              MAX_STROKE_POINTS, Stroke, paint_segment, piece_cost)

DEFAULT_BRUSH = DEFAULT_WIDTH  # 18 px on the 280 px canvas: the width the training drawings use
BRUSH_RANGE = (6.0, 40.0)
# A new pointer sample closer than this to the last one adds nothing visible;
# skipping it keeps recorded strokes small when the mouse rests.
MIN_STEP_PX = 0.5
# The pointer is read once per frame, so a fast stroke arrives as points 10-30 px
# apart; joined by straight lines, curves would show corners. Each span between
# two samples is drawn as a centripetal Catmull-Rom curve cut into pieces
# CURVE_STEP_PX long (gemmpad.inputs.strokes, which prices files the same way).
# What the canvas holds is what --record and Save write, so it holds no more than a
# strokes file may: a stroke reaching MAX_STROKE_POINTS goes on as a new stroke, and
# past MAX_POINTS or this share of MAX_PAINT_COST (the rest is room for rounding the
# points to 0.1 px on saving) the canvas is full and takes no more ink.
PAINT_BUDGET = 0.9 * MAX_PAINT_COST


@dataclass
class _Stroke:
    points: list[tuple[float, float]]  # the painted polyline: what is recorded and re-rendered
    width: float
    samples: list[tuple[float, float]] = field(default_factory=list)  # raw pointer positions
    cost: float = 0.0  # strokes.stroke_cost of points, kept as they are added


class Canvas:
    """A 280x280 float32 image (1 = ink) and the strokes that made it."""

    def __init__(self, size: tuple[int, int] = CANVAS, brush: float = DEFAULT_BRUSH) -> None:
        self.size = size
        self.image = np.zeros(size, dtype=np.float32)
        self._strokes: list[_Stroke] = []
        # What the stroke list was before each stroke or clear (undo pops it) and what undo
        # took back (redo); strokes are shared between the lists, never copied.
        self._undo: list[list[_Stroke]] = []
        self._redo: list[list[_Stroke]] = []
        self._active: _Stroke | None = None
        self._full = False  # set when a stroke met PAINT_BUDGET or MAX_POINTS; cleared when strokes go
        self._points, self._cost = 0, 0.0  # held by the strokes (running totals: _recount)
        self.brush = brush
        # Bumped on every pixel change, so the app knows when to ask for a new prediction.
        self.version = 0
        # The rows/columns changed since take_dirty(), so the app recolours only
        # the few hundred pixels a new segment touched, not all 78,400.
        self._dirty: tuple[int, int, int, int] | None = (0, size[0], 0, size[1])

    @property
    def brush(self) -> float:
        return self._brush

    @brush.setter
    def brush(self, width: float) -> None:
        self._brush = float(np.clip(width, *BRUSH_RANGE))

    @property
    def drawing(self) -> bool:
        """True between a press and its release."""
        return self._active is not None

    @property
    def empty(self) -> bool:
        return not self._strokes

    @property
    def full(self) -> bool:
        """Whether the canvas holds as much as a strokes file may (and takes no more ink)."""
        return self._full

    def _recount(self) -> None:
        """Total the points and paint cost held, after the stroke list changed wholesale."""
        self._points = sum(len(s.points) for s in self._strokes)
        self._cost = sum(s.cost for s in self._strokes)

    def strokes(self) -> list[Stroke]:
        """The strokes as [n, 2] arrays (the gemmpad.inputs.strokes format, for --record)."""
        return [np.asarray(s.points, dtype=np.float64) for s in self._strokes]

    def widths(self) -> list[float]:
        """Each stroke's brush diameter, in the order of strokes()."""
        return [s.width for s in self._strokes]

    def press(self, x: float, y: float) -> None:
        """Start a stroke with a dot under the pointer."""
        if self._active is not None:
            self.release()
        dot = float(piece_cost(0.0, self._brush))
        if self._points + 1 > MAX_POINTS or self._cost + dot > PAINT_BUDGET:
            self._full = True
            return
        self._active = _Stroke([(x, y)], self._brush, [(x, y)], dot)
        self._points += 1
        self._cost += dot
        self._undo.append(list(self._strokes))
        self._redo.clear()
        self._strokes.append(self._active)
        self._paint((x, y), (x, y), self._active.width)

    def move(self, x: float, y: float) -> None:
        """Add a pointer sample. The curve is drawn one span behind the pointer: the
        span ending at a sample needs the next sample to know its direction there."""
        s = self._active
        if s is None:
            return
        px, py = s.samples[-1]
        if (x - px) ** 2 + (y - py) ** 2 < MIN_STEP_PX**2:
            return
        s.samples.append((x, y))
        if len(s.samples) >= 3:
            self._curve(s, len(s.samples) - 3)

    def release(self) -> None:
        """End the stroke, drawing its last span up to where the pointer left."""
        s = self._active
        if s is not None and len(s.samples) >= 2:
            self._curve(s, len(s.samples) - 2)
        self._active = None

    def clear(self) -> None:
        """Wipe the canvas; undo() brings the strokes back."""
        if self._active is not None:
            self.release()
        if self._strokes:
            self._undo.append(list(self._strokes))
            self._redo.clear()
        self._strokes.clear()
        self._full = False
        self._recount()
        self.image.fill(0.0)
        self.version += 1
        self._mark_all()

    def undo(self) -> bool:
        """Take back the last stroke or clear; False when there is nothing to undo."""
        if not self._undo:
            return False
        self._active = None
        before = self._undo.pop()
        self._redo.append(list(self._strokes))
        self._strokes[:] = before
        self._repaint()
        return True

    def redo(self) -> bool:
        """Do again what undo() took back; False when there is nothing to redo."""
        if not self._redo:
            return False
        self._active = None
        after = self._redo.pop()
        self._undo.append(list(self._strokes))
        self._strokes[:] = after
        self._repaint()
        return True

    def _repaint(self) -> None:
        self._full = False  # what undo or redo left may have room again; the next stroke finds out
        self._recount()
        self.image.fill(0.0)
        for s in self._strokes:
            pts = s.points
            if len(pts) == 1:
                paint_segment(self.image, pts[0], pts[0], s.width)
            for a, b in zip(pts[:-1], pts[1:]):
                paint_segment(self.image, a, b, s.width)
        self.version += 1
        self._mark_all()

    def take_dirty(self) -> tuple[slice, slice] | None:
        """(rows, cols) changed since the last call, or None; resets the record."""
        d, self._dirty = self._dirty, None
        return None if d is None else (slice(d[0], d[1]), slice(d[2], d[3]))

    def _paint(self, p0: tuple[float, float], p1: tuple[float, float], width: float) -> None:
        paint_segment(self.image, p0, p1, width)
        self.version += 1
        h, w = self.size
        pad = width / 2 + 2  # paint_segment's own bounding box, rounded outwards
        box = (
            max(0, int(min(p0[1], p1[1]) - pad)),
            min(h, int(max(p0[1], p1[1]) + pad) + 1),
            max(0, int(min(p0[0], p1[0]) - pad)),
            min(w, int(max(p0[0], p1[0]) + pad) + 1),
        )
        if box[0] >= box[1] or box[2] >= box[3]:
            return
        d = self._dirty
        self._dirty = box if d is None else (min(d[0], box[0]), max(d[1], box[1]), min(d[2], box[2]), max(d[3], box[3]))

    def _curve(self, s: _Stroke, i: int) -> None:
        """Paint the span samples[i] -> samples[i + 1] as a centripetal Catmull-Rom curve.

        Centripetal (alpha = 0.5) rather than uniform parameterisation, because
        uneven sample spacing (slow, then fast) makes the uniform curve overshoot
        and loop. Missing neighbours at the ends are mirrored.
        """
        pts = np.asarray(s.samples, dtype=np.float64)
        p1, p2 = pts[i], pts[i + 1]
        p0 = pts[i - 1] if i >= 1 else 2 * p1 - p2
        p3 = pts[i + 2] if i + 2 < len(pts) else 2 * p2 - p1
        if np.hypot(*(p1 - p0)) < 1e-6:
            p0 = 2 * p1 - p2
        if np.hypot(*(p3 - p2)) < 1e-6:
            p3 = 2 * p2 - p1
        t0 = 0.0
        t1 = t0 + np.hypot(*(p1 - p0)) ** 0.5
        t2 = t1 + np.hypot(*(p2 - p1)) ** 0.5
        t3 = t2 + np.hypot(*(p3 - p2)) ** 0.5
        n = max(1, math.ceil(np.hypot(*(p2 - p1)) / CURVE_STEP_PX))
        t = np.linspace(t1, t2, n + 1)[1:, None]
        a1 = ((t1 - t) * p0 + (t - t0) * p1) / (t1 - t0)
        a2 = ((t2 - t) * p1 + (t - t1) * p2) / (t2 - t1)
        a3 = ((t3 - t) * p2 + (t - t2) * p3) / (t3 - t2)
        b1 = ((t2 - t) * a1 + (t - t0) * a2) / (t2 - t0)
        b2 = ((t3 - t) * a2 + (t - t1) * a3) / (t3 - t1)
        curve = ((t2 - t) * b1 + (t - t1) * b2) / (t2 - t1)
        curve[-1] = p2  # land exactly on the sample
        for q in curve:
            if not self._extend((float(q[0]), float(q[1]))):
                return

    def _extend(self, q: tuple[float, float]) -> bool:
        """Paint the active stroke on to `q`, within what a strokes file may hold: on as a new
        stroke past MAX_STROKE_POINTS; False (and the canvas full) past MAX_POINTS or PAINT_BUDGET.
        A curve between far samples can swing past how far a file's points may lie: such a
        point is pulled back to that bound (FAR_SIDES canvases out, where no ink shows)."""
        s = self._active
        assert s is not None
        far = FAR_SIDES * max(self.size)
        q = (min(far, max(-far, q[0])), min(far, max(-far, q[1])))
        prev = s.points[-1]
        cost = float(piece_cost(math.hypot(q[0] - prev[0], q[1] - prev[1]), s.width))
        split = len(s.points) >= MAX_STROKE_POINTS
        if split:
            cost += float(piece_cost(0.0, s.width))  # the new stroke's first point, priced as a dot
        if self._points + 1 + split > MAX_POINTS or self._cost + cost > PAINT_BUDGET:
            self._full = True
            self._active = None  # the rest of this stroke is not drawn
            return False
        if split:  # the same line goes on; undo still takes back the whole press (one undo entry)
            s = self._active = _Stroke([prev], s.width, s.samples, 0.0)
            self._strokes.append(s)
        s.points.append(q)
        s.cost += cost
        self._points += 1 + split
        self._cost += cost
        self._paint(prev, q, s.width)
        return True

    def _mark_all(self) -> None:
        self._dirty = (0, self.size[0], 0, self.size[1])
