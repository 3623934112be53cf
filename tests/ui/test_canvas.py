"""The canvas: live painting, undo/redo, dirty regions, curves, the brush (no window)."""

from __future__ import annotations

import numpy as np

from gemmpad import strokes
from gemmpad.strokes import CANVAS
from gemmpad.ui.canvas import Canvas


def test_live_painting_equals_rendering_the_recorded_strokes(rng: np.random.Generator) -> None:
    c = Canvas()
    for _ in range(3):
        pts = rng.uniform(-10, 290, size=(int(rng.integers(1, 30)), 2))
        c.press(*pts[0])
        for p in pts[1:]:
            c.move(*p)
        c.release()
    np.testing.assert_allclose(c.image, strokes.render(c.strokes()), atol=1e-6)
    first_two = strokes.render(c.strokes()[:2])
    assert c.undo()
    np.testing.assert_allclose(c.image, first_two, atol=1e-6)
    c.clear()
    assert c.empty and not c.image.any()
    assert c.undo()  # the clear
    np.testing.assert_allclose(c.image, first_two, atol=1e-6)
    assert c.undo() and c.undo() and c.empty and not c.undo()
    assert c.redo() and c.redo() and c.redo()  # stroke, stroke, clear
    assert c.empty and not c.redo()


def test_recolouring_only_the_dirty_region_matches_a_full_recolour(rng: np.random.Generator) -> None:
    from gemmpad.ui import style

    c = Canvas()
    shown = np.zeros((*CANVAS, 4), dtype=np.float32)
    full = np.zeros_like(shown)
    for step in range(300):
        op = rng.integers(0, 20)
        if op < 12:
            x, y = rng.uniform(-30, 310, 2)
            c.move(x, y) if c.drawing else c.press(x, y)
        elif op < 16:
            c.release()
        elif op < 19:
            c.undo()
        else:
            c.clear()
        region = c.take_dirty()
        if region is not None:
            style.colourise(c.image[region], shown[region])
        style.colourise(c.image, full)
        assert np.array_equal(shown, full), f"stale pixels after step {step}"


def test_fast_strokes_are_drawn_as_curves_not_polygons(rng: np.random.Generator) -> None:
    """Ten pointer samples around a circle (a fast stroke at 60 Hz) still paint a circle."""
    r = rng.uniform(50, 100)
    t = np.linspace(0, 2 * np.pi, 11) + rng.uniform(0, 1)
    samples = np.stack([140 + r * np.cos(t), 140 + r * np.sin(t)], axis=1)
    t_fine = np.linspace(t[0], t[-1], 2000)
    truth = strokes.render([np.stack([140 + r * np.cos(t_fine), 140 + r * np.sin(t_fine)], axis=1)])
    c = Canvas()
    c.press(*samples[0])
    for p in samples[1:]:
        c.move(*p)
    c.release()
    smooth_error = np.abs(c.image - truth).mean()
    polygon_error = np.abs(strokes.render([samples]) - truth).mean()
    assert smooth_error < polygon_error / 3, (smooth_error, polygon_error)
    np.testing.assert_array_equal(c.strokes()[0][-1], samples[-1])  # ends where the pointer left
    np.testing.assert_allclose(c.image, strokes.render(c.strokes()), atol=1e-6)  # recorded = painted


def test_brush_is_clamped_and_per_stroke() -> None:
    c = Canvas()
    c.brush = 1000
    assert c.brush == 40
    c.press(50, 50)
    c.release()
    c.brush = 6
    c.press(200, 200)
    c.release()
    wide, thin = (c.image[30:70, 30:70] > 0).sum(), (c.image[180:220, 180:220] > 0).sum()
    assert wide > 10 * thin > 0
