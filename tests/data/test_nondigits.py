"""The non-digit set the unsure detector is measured on: every kind, repeatable, app-like."""

from __future__ import annotations

import numpy as np

from gemmpad.data import nondigits
from gemmpad.inputs.strokes import CANVAS


def test_each_kind_in_equal_shares_repeatable_by_seed() -> None:
    a = nondigits.generate(6, seed=5)
    b = nondigits.generate(6, seed=5)
    c = nondigits.generate(6, seed=6)
    assert a.images.shape == (24, 28, 28) and a.images.dtype == np.float32
    assert np.bincount(a.kinds).tolist() == [6] * len(nondigits.KINDS)
    np.testing.assert_array_equal(a.images, b.images)
    assert not np.array_equal(a.images, c.images)
    assert a.images.min() >= 0.0 and a.images.max() <= 1.0
    assert (a.images.reshape(24, -1).max(axis=1) > 0.5).all()  # every sample has ink


def test_samples_are_drawn_on_the_canvas_with_an_app_brush(rng: np.random.Generator) -> None:
    for name, make in nondigits.MAKERS.items():
        for _ in range(5):
            strokes, width = make(rng)
            pts = np.vstack(strokes)
            assert 6.0 <= width <= 30.0, name
            # mostly on the canvas (a dot or a pen can leave it a little, as a hand does)
            inside = (pts >= -5).all(axis=1) & (pts[:, 0] <= CANVAS[1] + 5) & (pts[:, 1] <= CANVAS[0] + 5)
            assert inside.mean() > 0.95, name


def test_pairs_are_two_digits_side_by_side(rng: np.random.Generator) -> None:
    for _ in range(5):
        strokes, _ = nondigits.pair(rng)
        xs = np.vstack(strokes)[:, 0]
        assert xs.min() < CANVAS[1] * 0.1 and xs.max() > CANVAS[1] * 0.5  # one digit starts at the left, one past the middle
