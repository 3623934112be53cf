"""Synthetic drawn digits: every style renders, varies, is repeatable, and looks like an app drawing."""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad import drawn
from gemmpad.preprocess import preprocess
from gemmpad.strokes import CANVAS


@pytest.mark.parametrize("name", drawn.STYLE_NAMES)
def test_every_style_draws_ink_on_the_canvas(name: str, rng: np.random.Generator) -> None:
    digit, style = int(name[0]), name[2:]
    strokes, width = drawn.sample_strokes(digit, style, rng)
    pts = np.vstack(strokes)
    assert 6.0 <= width <= 32.0
    # The digit's box starts inside the canvas. About 1 draw in 1,000 (a tall, wide, slanted
    # digit) runs past the right or bottom edge, as a stroke dragged off the app's canvas does;
    # the renderer clips it. Shrinking those to fit would change the fixed evaluation set the
    # model card reports, so the bound below is what the generator guarantees.
    assert pts.min() >= -1.0
    assert np.median(pts[:, 0]) <= CANVAS[1] and np.median(pts[:, 1]) <= CANVAS[0]
    canvas = drawn.draw(digit, style, rng)
    assert canvas.shape == CANVAS and canvas.dtype == np.float32
    x = preprocess(canvas)
    assert x is not None and x.max() > 0.5


def test_generate_is_repeatable_and_balanced() -> None:
    a, b = drawn.generate(60, seed=5), drawn.generate(60, seed=5)
    np.testing.assert_array_equal(a.images, b.images)
    c = drawn.generate(60, seed=6)
    assert not np.array_equal(a.images, c.images)
    counts = np.bincount(a.styles, minlength=len(drawn.STYLE_NAMES))
    assert counts.min() >= 60 // len(drawn.STYLE_NAMES)  # styles in equal shares
    for i, name in enumerate(drawn.STYLE_NAMES):
        assert np.all(a.labels[a.styles == i] == int(name[0]))


def test_polarity_and_size_vary(rng: np.random.Generator) -> None:
    canvases = [drawn.draw(7, "crossed", rng) for _ in range(40)]
    inverted = [c[0, 0] > 0.5 for c in canvases]
    assert 5 < sum(inverted) < 35
    heights = [np.ptp(np.nonzero((c if c[0, 0] < 0.5 else 1 - c) > 0.5)[0]) for c in canvases]
    assert max(heights) > 1.8 * min(heights)


def test_accuracy_by_style() -> None:
    ds = drawn.generate(46, seed=1)
    acc = drawn.accuracy_by_style(ds.labels.copy(), ds)
    assert acc["all"] == 1.0 and set(acc) == {"all", *drawn.STYLE_NAMES}
    wrong = drawn.accuracy_by_style((ds.labels + 1) % 10, ds)
    assert wrong["all"] == 0.0
