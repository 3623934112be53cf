"""The drawing surface: strokes in, a float image out, with no GUI code.

The canvas is a NumPy array that the app shows as a texture, painted segment by
segment with `gemmpad.strokes.paint_segment` as the pointer moves. Keeping it
free of Dear PyGui means the exact pixels the network reads can be tested
headless, and that replaying recorded strokes reproduces the live drawing bit
for bit (undo re-renders the remaining strokes with the same painter).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemmpad.strokes import CANVAS, Stroke, paint_segment

DEFAULT_BRUSH = 18.0  # px on the 280 px canvas: the width the training drawings use
BRUSH_RANGE = (6.0, 40.0)
# A new pointer sample closer than this to the last one adds nothing visible;
# skipping it keeps recorded strokes small when the mouse rests.
MIN_STEP_PX = 0.5


@dataclass
class _Stroke:
    points: list[tuple[float, float]]
    width: float


class Canvas:
    """A 280x280 float32 image (1 = ink) and the strokes that made it."""

    def __init__(self, size: tuple[int, int] = CANVAS, brush: float = DEFAULT_BRUSH) -> None:
        self.size = size
        self.image = np.zeros(size, dtype=np.float32)
        self._strokes: list[_Stroke] = []
        self._active: _Stroke | None = None
        self.brush = brush
        # Bumped on every pixel change, so the app knows when to re-upload the
        # texture and when to ask for a new prediction.
        self.version = 0

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

    def strokes(self) -> list[Stroke]:
        """The strokes as [n, 2] arrays (the gemmpad.strokes format, for --record)."""
        return [np.asarray(s.points, dtype=np.float64) for s in self._strokes]

    def press(self, x: float, y: float) -> None:
        """Start a stroke with a dot under the pointer."""
        if self._active is not None:
            self.release()
        self._active = _Stroke([(x, y)], self._brush)
        self._strokes.append(self._active)
        paint_segment(self.image, (x, y), (x, y), self._active.width)
        self.version += 1

    def move(self, x: float, y: float) -> None:
        """Extend the active stroke by one straight, round-capped segment."""
        s = self._active
        if s is None:
            return
        px, py = s.points[-1]
        if (x - px) ** 2 + (y - py) ** 2 < MIN_STEP_PX**2:
            return
        s.points.append((x, y))
        paint_segment(self.image, (px, py), (x, y), s.width)
        self.version += 1

    def release(self) -> None:
        self._active = None

    def clear(self) -> None:
        self._strokes.clear()
        self._active = None
        self.image.fill(0.0)
        self.version += 1

    def undo(self) -> bool:
        """Remove the last stroke; False when there is none."""
        if not self._strokes:
            return False
        self._strokes.pop()
        self._active = None
        self._repaint()
        return True

    def _repaint(self) -> None:
        self.image.fill(0.0)
        for s in self._strokes:
            pts = s.points
            if len(pts) == 1:
                paint_segment(self.image, pts[0], pts[0], s.width)
            for a, b in zip(pts[:-1], pts[1:]):
                paint_segment(self.image, a, b, s.width)
        self.version += 1
