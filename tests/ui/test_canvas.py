"""The canvas: live painting, undo/redo, dirty regions, curves, the brush (no window)."""

from __future__ import annotations

import numpy as np

from gemmpad.inputs import strokes
from gemmpad.inputs.strokes import CANVAS
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


def _replay(c: Canvas, drawing: strokes.Drawing) -> None:
    """What harness.replay does through the window's pointer path, on the canvas alone."""
    d = drawing.on_canvas(c.size)
    for stroke, width in zip(d.strokes, d.widths):
        c.brush = width
        c.press(*stroke[0])
        for p in stroke[1:]:
            c.move(*p)
        c.release()


def test_every_recording_loads_back(tmp_path, rng: np.random.Generator) -> None:
    """Issue 40 #5: the canvas records its painted polyline, and a replay of sparse points
    (a legal file) recorded more points per stroke and in all than a file may hold: the
    recording could not be loaded back. The canvas now holds no more than a file may."""
    sparse = [np.column_stack([np.linspace(20, 260, 2000), 140 + 100 * np.sin(np.arange(2000) * 0.08)])]  # ~8 px apart
    dense = [np.clip(140 + np.cumsum(rng.normal(0, 2.0, (2000, 2)), axis=0), 0, 280) for _ in range(5)]  # 10,000 points
    for name, lines, widths in (("sparse", sparse, [8.0]), ("dense", dense, [40.0] * 5),
                                ("three", [np.array([[10.0, 10], [270, 20], [20, 270]])], [18.0])):
        drawing = strokes.Drawing(lines, widths)
        assert drawing.paint_cost() <= strokes.MAX_PAINT_COST, name  # a file the loader takes
        c = Canvas()
        _replay(c, drawing)
        path = tmp_path / f"{name}.json"
        strokes.save(path, c.strokes(), c.widths(), c.size)
        back = strokes.load_drawing(path)  # was: "stroke 0 has 5,9xx points, more than a stroke may have"
        assert max(map(len, back.strokes)) <= strokes.MAX_STROKE_POINTS, name
        assert sum(map(len, back.strokes)) <= strokes.MAX_POINTS, name
        assert np.abs(back.render() - c.image).mean() < 1e-3  # what was painted (points rounded to 0.1 px)
    assert c.full is False and len(back.strokes[0]) > 3  # three points: the curve, not a canvas-full stop


def test_a_full_canvas_takes_no_more_ink_and_undo_makes_room() -> None:
    c = Canvas(brush=40.0)
    for i in range(100_000):
        c.press(float(i % 280), float(i * 7 % 280))
        if c.full:
            break
    assert c.full and sum(map(len, c.strokes())) <= strokes.MAX_POINTS
    held = len(c.strokes())
    c.press(5.0, 5.0)
    assert len(c.strokes()) == held  # refused
    assert c.undo() and not c.full
    c.press(5.0, 5.0)
    c.release()
    assert len(c.strokes()) == held
