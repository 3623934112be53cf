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
    assert pts.min() >= -1.0 and pts[:, 0].max() <= CANVAS[1] + 1 and pts[:, 1].max() <= CANVAS[0] + 1
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
