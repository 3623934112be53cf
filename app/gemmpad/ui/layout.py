"""Where the panels go for a given window size: pure arithmetic, tested without a window.

Three arrangements, chosen by width:
- wide: drawing | prediction | engine side by side, the canvas as large as the height and
  the engine column's minimum allow;
- two columns: the drawing on the left, prediction above engine on the right, that column
  scrolling;
- one column: everything stacked, the whole window scrolling.
Sizes are in screen pixels at UI scale `scale` (fonts and spacing grow with it).

Nothing floats over the panels: Learn ("Teach it your handwriting") is a section of the
drawing column, under the canvas's controls, and keeps at least LEARN_MIN of its height.
The prediction column's "what the network sees" block (the 28x28 input, the hidden
layers beside it) takes what the height leaves, so the hidden layers show without
scrolling at the default size. In one column, where the prediction panel is below the
fold, the drawing column's heading says what it reads, and the chart of the ten
probabilities gives up height so that the digit read and its probabilities show together
once scrolled to; where even that cannot be (a UI scale too large for the window),
`Layout.reading_fits` says so and `fitting_scale` names one that fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_WINDOW = (400, 300)  # the viewport's minimum size
DEFAULT_WINDOW = (1200, 716)
PAD = 14  # the window's padding
GAP = 10  # between columns
INNER = 12  # a panel's own padding
STATUS_H = 34
PREDICTION_W = 300  # the prediction column: 10 bars and the 28x28 preview fit in it
ENGINE_MIN_W = 440  # kernel names, the latency table and the race's labels fit in it
BELOW_CANVAS = 150  # heading above, buttons and brush and save rows below the canvas
CANVAS_MIN, CANVAS_MAX = 200, 720
SCROLLBAR = 14
HEADING = 26  # a panel heading's line
CANVAS_TINY = 120  # the canvas in one column never gets smaller than this
LEARN_MIN = 124  # Learn's section under the canvas: heading, count, buttons, a row of thumbnails
# The prediction panel above and below its picture block: heading, digit, bars, the block's
# heading (above); the kernel that wrote the hidden layers and the per-layer times, three
# lines at most (below). Measured from the panel (the same, in scale units, at scales 1, 1.5
# and 2).
PRED_ABOVE, PRED_BELOW = 366, 77
PREVIEW_MIN, PREVIEW_MAX = 84, 224  # the 28x28 input's side on screen
# The prediction panel's reading: the big digit (its confidence beside it) and the spacing under it, from
# the digit's top to the chart's (measured: the same in scale units at scales 1, 1.5, 2 and 3); then the
# chart of the ten probabilities, BARS_H high, in one column down to BARS_MIN to fit the window's height.
DIGIT_ROW = 131
BARS_H, BARS_MIN = 150, 90
HIDDEN_LABEL = 16  # "hidden 1" over each map
SPACING = 8  # between stacked widgets (style's ItemSpacing)
HIDDEN_GAP = 12  # between the input and the hidden maps beside it


@dataclass(frozen=True)
class Layout:
    mode: str  # "wide", "two", "one"
    canvas: int  # the canvas's side on screen
    draw_w: int  # the drawing column
    draw_h: int
    right_w: int  # the column(s) right of it ("one": below it)
    right_h: int  # 0: as tall as its content (the window scrolls)
    prediction_w: int
    engine_w: int
    status_h: int
    learn_h: int = 0  # Learn's section at the bottom of the drawing column
    preview: int = PREVIEW_MAX  # the 28x28 input's side
    hidden: int = 90  # each hidden layer's map's side (two, stacked beside the input)
    bars: int = BARS_H  # the chart of the ten probabilities' height
    # the digit read and its probabilities fit the window's height together (scrolled to, in one column):
    # false only in one column, at a UI scale too large for the window (fitting_scale)
    reading_fits: bool = True


def pictures(panel_w: int, panel_h: int, scale: float) -> tuple[int, int]:
    """The 28x28 input's side and each hidden map's side in a prediction panel panel_w wide
    and (0: as tall as its content) panel_h high. The two hidden maps stand stacked beside
    the input, each under its label, as tall as it together:
    hidden = (preview - 2 labels - 3 spacings) / 2, and preview + gap + hidden = the width."""
    s = scale
    label, gap, inner, sp = round(HIDDEN_LABEL * s), round(HIDDEN_GAP * s), round(INNER * s), round(SPACING * s)
    content = panel_w - 2 * inner
    side = min((2 * (content - gap) + 2 * label + 3 * sp) // 3, round(PREVIEW_MAX * s))
    if panel_h > 0:
        side = min(side, panel_h - round((PRED_ABOVE + PRED_BELOW) * s))
    side = max(side, round(PREVIEW_MIN * s))
    return side, max((side - 2 * label - 3 * sp) // 2, round(20 * s))


def plan(width: int, height: int, scale: float = 1.0) -> Layout:
    """The arrangement for a viewport of width x height pixels."""
    s = scale
    pad, gap, inner, status = round(PAD * s), round(GAP * s), round(INNER * s), round(STATUS_H * s)
    pred_w, eng_min = round(PREDICTION_W * s), round(ENGINE_MIN_W * s)
    below = round(BELOW_CANVAS * s)
    cmin, cmax = round(CANVAS_MIN * s), round(CANVAS_MAX * s)
    body_h = height - 2 * pad - status - gap  # the columns' height above the status bar
    learn = round(LEARN_MIN * s)
    by_height = body_h - below - 2 * inner - learn

    # wide: the canvas takes what the engine's minimum leaves, up to what the height allows
    # (and no more than half of what the prediction column leaves: the plots want width too)
    by_width = width - 2 * pad - 2 * gap - pred_w - eng_min - 2 * inner
    half = (width - 2 * pad - 2 * gap - pred_w) // 2 - 2 * inner
    canvas = min(by_height, by_width, max(half, min(by_width, cmin)), cmax)
    if canvas >= cmin:
        draw_w = canvas + 2 * inner
        right_w = width - 2 * pad - gap - draw_w
        return Layout("wide", canvas, draw_w, body_h, right_w, body_h, pred_w, right_w - gap - pred_w, status,
                      body_h - canvas - below - 2 * inner, *pictures(pred_w, body_h, s), bars=round(BARS_H * s))

    # two columns: the right one needs the prediction column's width at least
    by_width = width - 2 * pad - gap - pred_w - SCROLLBAR - 2 * inner
    canvas = min(by_height, by_width, cmax)
    if canvas >= cmin:
        draw_w = canvas + 2 * inner
        right_w = width - 2 * pad - gap - draw_w
        panel_w = right_w - SCROLLBAR - inner
        return Layout("two", canvas, draw_w, body_h, right_w, body_h, panel_w, panel_w, status,
                      body_h - canvas - below - 2 * inner, *pictures(panel_w, 0, s), bars=round(BARS_H * s))

    # one column: the canvas as large as the window shows whole (the window scrolls to the rest)
    col_w = width - 2 * pad - SCROLLBAR
    canvas = max(min(col_w - 2 * inner, body_h - 2 * inner - round(HEADING * s), cmax), round(CANVAS_TINY * s))
    draw_h = canvas + below + 2 * inner + learn
    # Side by side the reading is at the top of a column at least BELOW_CANVAS + LEARN_MIN + CANVAS_MIN
    # high, room enough for it at any scale. Here the window scrolls to it: the chart gives up height so
    # the digit and the ten bars show together (at --scale 4 on a 1000 px screen they were 1124 px tall,
    # and no scroll showed the digit with its probabilities); below BARS_MIN they do not fit.
    room = height - 2 * pad - round(DIGIT_ROW * s)
    bars = max(min(room, round(BARS_H * s)), round(BARS_MIN * s))
    return Layout("one", canvas, col_w, draw_h, col_w, 0, col_w, col_w, status, learn, *pictures(col_w, 0, s),
                  bars=bars, reading_fits=room >= round(BARS_MIN * s))


def fitting_scale(width: int, height: int, scale: float) -> float | None:
    """The largest UI scale below `scale`, in quarters down to 0.5 (--scale's least), at which the digit
    read and its probabilities fit a window of width x height together (Layout.reading_fits); None
    where none does."""
    steps = (q / 4 for q in range(math.ceil(scale * 4) - 1, 1, -1))
    return next((s for s in steps if plan(width, height, s).reading_fits), None)
