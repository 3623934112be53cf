"""Drawing, undo, keys, saving: real mouse and key events where it matters."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from gemmpad.inputs import strokes
from gemmpad.inputs.strokes import CANVAS
from gemmpad.ui import harness
from tests.ui.support import BASE, real_input, draw, one, preview28, seven


def test_clear_and_undo(app: object) -> None:
    import dearpygui.dearpygui as dpg

    from gemmpad.inputs.preprocess import preprocess

    drawing = seven()
    draw(app, drawing)
    assert len(app.canvas.strokes()) == 2
    app.undo()
    harness.settle(app)
    np.testing.assert_allclose(app.canvas.image, strokes.render(app.canvas.strokes()), atol=1e-6)
    assert len(app.canvas.strokes()) == 1
    np.testing.assert_array_equal(preview28(app), preprocess(app.canvas.image))
    one_stroke = app.canvas.image.copy()
    app.clear()
    harness.settle(app)
    assert not app.canvas.image.any() and app.state.reading.prediction is None
    assert dpg.get_value(app.pred.digit) == "?" and not preview28(app).any()
    app.undo()  # a clear is undone like a stroke: the drawing and its reading come back
    harness.settle(app)
    np.testing.assert_array_equal(app.canvas.image, one_stroke)
    assert app.state.reading.prediction is not None and len(app.canvas.strokes()) == 1
    app.redo()  # and redone
    harness.settle(app)
    assert app.canvas.empty and app.state.reading.prediction is None
    app.undo()
    app.undo()  # back to before the first stroke
    harness.settle(app)
    assert app.canvas.empty and app.state.reading.prediction is None
    app.redo()
    assert len(app.canvas.strokes()) == 1
    app.redo()  # the clear, again
    assert app.canvas.empty
    app.undo()
    app.feed("down", 10, 10)  # a new stroke ends the redo chain
    app.feed("up")
    app.step()
    app.redo()  # nothing to redo: no error, no change
    assert len(app.canvas.strokes()) == 2


def test_keyboard_shortcuts_drive_the_same_actions(app: object) -> None:
    import dearpygui.dearpygui as dpg

    draw(app, seven())
    assert app.shortcut(dpg.mvKey_Z, ctrl=True)
    assert len(app.canvas.strokes()) == 1
    width = app.canvas.brush
    app.shortcut(dpg.mvKey_Close_Brace)
    assert app.canvas.brush == width + 2
    from gemmpad.ui.keys import key_equal

    # Only ImGui named keys (>= 512) may be polled: lower codes read garbage in Dear PyGui 2.3.
    assert all(s.key >= 512 for s in app.shortcuts)
    app.shortcut(key_equal())
    assert app.state.batch == 2
    app.shortcut(dpg.mvKey_Minus)
    assert app.state.batch == 1
    kernels = app.kernel_lists[BASE]
    start = kernels.index(app.state.kernel)
    app.shortcut(dpg.mvKey_K)
    assert app.state.kernel == kernels[(start + 1) % len(kernels)]
    app.shortcut(dpg.mvKey_K, shift=True)
    assert app.state.kernel == kernels[start]
    usable = [b for b, reason in app.backend_reasons.items() if not reason]
    app.shortcut(dpg.mvKey_B)
    assert app.state.backend == usable[(usable.index(BASE) + 1) % len(usable)]
    app.shortcut(dpg.mvKey_R)
    assert app.state.continuous
    app.shortcut(dpg.mvKey_W)
    assert app.state.warm and dpg.get_value(app.engine.warm_box)
    harness.settle(app)
    assert harness.summary(app)["warm"] and "warm" in dpg.get_value(app.engine.caption)
    assert app.state.reading.history and app.state.reading.history[-1].batch == 1
    app.shortcut(dpg.mvKey_W)
    app.set_continuous(False)
    assert not app.state.warm and not dpg.get_value(app.engine.warm_box)
    app.shortcut(dpg.mvKey_C)
    assert app.canvas.empty
    assert not app.shortcut(dpg.mvKey_F12)


def test_drawing_never_waits_for_a_slow_forward_pass(app: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames keep coming while a forward pass is stuck: the worker's classify blocks until
    the test releases it, and every frame of a new stroke must be drawn in the meantime."""
    draw(app, seven())
    clf = app.worker._clf
    real = clf.classify
    release, started, finished = threading.Event(), threading.Event(), threading.Event()

    def stuck(image: np.ndarray, batch: int = 1, warmup: int = 0, hidden: bool = False) -> object:
        started.set()
        release.wait(30)  # a frame that waited for this would stall the test, not pass it
        finished.set()
        return real(image, batch, warmup, hidden=hidden)

    monkeypatch.setattr(clf, "classify", stuck)
    app.set_continuous(True)
    try:
        app.step()
        assert started.wait(10)  # the worker is inside the forward pass now
        stroke = [("down", 40.0, 250.0)] + [("move", 40.0 + 5 * i, 250.0) for i in range(1, 40)] + [("up", 0.0, 0.0)]
        frames = 0
        while stroke:
            app.feed(*stroke.pop(0))
            app.step()
            frames += 1
        assert not finished.is_set()  # all those frames ran while the pass was still stuck
        assert frames == 41 and len(app.canvas.strokes()) == 3
    finally:
        release.set()
        app.set_continuous(False)
    harness.settle(app)
    monkeypatch.undo()


def test_save_png_with_and_without_label(app: object) -> None:
    import dearpygui.dearpygui as dpg
    from PIL import Image

    assert app.save() is None  # empty canvas: nothing written
    draw(app, one())
    labelled = app.save(label=1)
    assert labelled is not None and labelled.parent == app.drawings_dir / "1"
    pixels = np.asarray(Image.open(labelled))
    assert pixels.dtype == np.uint8 and pixels.shape == CANVAS
    np.testing.assert_allclose(pixels / 255.0, app.canvas.image, atol=1 / 255)
    # The strokes file (points rounded to 0.1 px) re-renders the same drawing.
    diff = np.abs(strokes.render(strokes.load(labelled.with_suffix(".json"))) - app.canvas.image)
    assert diff.max() < 0.1 and diff.mean() < 1e-3
    # ...with each stroke's brush width and the canvas size: a thick stroke replays thick.
    app.set_brush(34)
    draw(app, seven())
    thick = app.save()
    assert thick is not None
    saved = strokes.load_drawing(thick.with_suffix(".json"))
    assert saved.widths == [18.0, 34.0, 34.0] and saved.canvas == CANVAS
    diff = np.abs(saved.render() - app.canvas.image)
    assert diff.max() < 0.1 and diff.mean() < 1e-3
    plain = app.save()
    assert plain is not None and plain.parent.name == "unlabelled"
    assert app.shortcut(dpg.mvKey_4, ctrl=True)  # Ctrl+digit: save under that label
    assert len(list((app.drawings_dir / "4").glob("*.png"))) == 1
    assert not list(app.drawings_dir.rglob(".*tmp*")), "temporary files left behind"
    good_dir, app.drawings_dir = app.drawings_dir, app.drawings_dir / "plain-file"
    app.drawings_dir.write_text("a file where the drawings folder should be")
    try:
        assert app.save(label=2) is None  # refused, said, and the window goes on
        assert app.error.startswith("Not saved:") and not app.canvas.empty
        app.step()
    finally:
        app.drawings_dir.unlink()
        app.drawings_dir = good_dir


def test_a_full_disk_saves_neither_the_png_nor_its_strokes(app: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 40: the window said "Not saved" but left the PNG without its strokes, which Learn
    then took as a picture. The strokes fail here (no room), so nothing may be there after."""
    import errno
    from pathlib import Path

    real_text, real_bytes = Path.write_text, Path.write_bytes

    def full(real):  # type: ignore[no-untyped-def]
        def write(self: Path, data, *args, **kwargs):  # type: ignore[no-untyped-def]
            if ".json" in self.name:
                raise OSError(errno.ENOSPC, "No space left on device", str(self))
            return real(self, data, *args, **kwargs)
        return write

    draw(app, one())
    folder = app.drawings_dir / "3"
    before = set(folder.glob("*")) if folder.exists() else set()
    monkeypatch.setattr(Path, "write_text", full(real_text))
    monkeypatch.setattr(Path, "write_bytes", full(real_bytes))
    assert app.save(label=3) is None and app.error.startswith("Not saved:")
    monkeypatch.undo()
    assert (set(folder.glob("*")) if folder.exists() else set()) == before
    app.clear()
    harness.settle(app)


def test_real_mouse_and_keys_reach_the_canvas(app: object) -> None:
    import dearpygui.dearpygui as dpg

    xt = real_input()
    try:
        vx, vy = dpg.get_viewport_pos()
        x0, y0 = dpg.get_item_rect_min(app.draw.image)
        w, h = dpg.get_item_rect_size(app.draw.image)
        # A horizontal stroke across the middle of the canvas, at canvas y = 100.
        path = [(int(vx + x0 + w * f), int(vy + y0 + 100 * h / CANVAS[0])) for f in np.linspace(0.2, 0.8, 10)]
        xt.move(*path[0])
        for _ in range(3):
            app.step()
        xt.button(True)
        for p in path:
            xt.move(*p)
            app.step()
            app.step()
        xt.button(False)
        for _ in range(3):
            app.step()
    finally:
        xt.button(False)
        xt.close()
    assert len(app.canvas.strokes()) == 1
    rows = np.nonzero(app.canvas.image.max(axis=1) > 0.5)[0]
    cols = np.nonzero(app.canvas.image.max(axis=0) > 0.5)[0]
    assert abs((rows.min() + rows.max()) / 2 - 100) <= 3
    assert abs(cols.min() - 0.2 * CANVAS[1]) <= 12 and abs(cols.max() - 0.8 * CANVAS[1]) <= 12
    # Real key presses go through the same shortcut table: Ctrl+Z undoes the stroke.
    xt = real_input()
    try:
        for name, down in (("Control_L", True), ("z", True), ("z", False), ("Control_L", False)):
            xt.key(name, down)
            for _ in range(2):
                app.step()
    finally:
        xt.close()
    assert app.canvas.empty


def test_save_label_is_for_one_drawing(app: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pick 4 and save: 4/. Ctrl+7: 7/. Clear, draw, Ctrl+S: unlabelled/, not 4/ (the label
    stuck and filed the next drawing under the old digit); the message then goes away (it
    stayed for minutes, cut and run into the frame time)."""
    import dearpygui.dearpygui as dpg

    from gemmpad.ui import status_bar
    from gemmpad.ui.draw_panel import NO_LABEL

    monkeypatch.setattr(status_bar, "MESSAGE_S", 0.3)
    draw(app, one())
    dpg.set_value(app.draw.label, "4")
    first = app.save()
    assert first is not None and first.parent.name == "4"
    assert dpg.get_value(app.draw.label) == NO_LABEL and app.message.startswith("Saved 4/")
    assert app.shortcut(dpg.mvKey_7, ctrl=True)
    assert app.message.startswith("Saved 7/") and len(list((app.drawings_dir / "7").glob("*.png"))) == 1
    assert dpg.get_value(app.draw.label) == NO_LABEL
    dpg.set_value(app.draw.label, "3")
    app.clear()  # a new drawing: the label chosen for the old one goes
    assert dpg.get_value(app.draw.label) == NO_LABEL
    draw(app, seven())
    assert app.shortcut(dpg.mvKey_S, ctrl=True)
    newest = max(app.drawings_dir.rglob("*.png"), key=lambda p: p.stat().st_mtime_ns)
    assert newest.parent.name == "unlabelled"
    # The message shows whole in the status bar, clear of the frame rate, and expires.
    for _ in range(3):
        app.step()
    mx, _, mw, _ = harness.rect(app.status.msg)
    fx = harness.rect(app.status.frame)[0]
    assert dpg.get_value(app.status.msg).strip() and (not dpg.get_value(app.status.frame) or mx + mw <= fx)
    time.sleep(0.4)
    app.step()
    assert app.message == "" and dpg.get_value(app.status.msg) == ""


def test_real_shift_equals_raises_the_batch(app: object) -> None:
    """"+" typed the usual way (Shift and =) doubles the batch, through real X key events."""
    xt = real_input()
    try:
        for name, down in (("Shift_L", True), ("equal", True), ("equal", False), ("Shift_L", False),
                           ("equal", True), ("equal", False), ("minus", True), ("minus", False)):
            xt.key(name, down)
            for _ in range(2):
                app.step()
            if (name, down) == ("Shift_L", False):
                assert app.state.batch == 2
    finally:
        xt.close()
    assert app.state.batch == 2  # "=" doubled it to 4, "-" halved it again


def test_the_brush_ring_follows_the_real_pointer_over_the_canvas(app: object) -> None:
    """A ring the size of the brush (as shown at the canvas's on-screen scale) sits under the
    pointer while it is over the canvas, and goes when it leaves."""
    import dearpygui.dearpygui as dpg

    xt = real_input()
    app.set_brush(30)
    try:
        vx, vy = dpg.get_viewport_pos()
        x, y, w, h = harness.rect(app.draw.image)
        xt.move(int(vx + x + w / 2), int(vy + y + h / 2))
        for _ in range(3):
            app.step()
        ring = dpg.get_item_configuration(app.draw.ring)
        mx, my = dpg.get_mouse_pos(local=False)
        assert ring["show"] and ring["center"][:2] == pytest.approx([mx, my])
        assert abs(mx - (x + w / 2)) <= 2 and abs(my - (y + h / 2)) <= 2
        assert ring["radius"] == pytest.approx(30 / 2 * w / CANVAS[1], rel=1e-3)
        xt.move(int(vx + x + w + 40), int(vy + y + h / 2))  # off the canvas, to its right
        for _ in range(3):
            app.step()
        assert not dpg.get_item_configuration(app.draw.ring)["show"]
    finally:
        xt.move(0, 0)
        xt.close()


def test_scripted_replay_takes_a_frame_per_stroke_not_per_point(app: object) -> None:
    """Issue 20, finding 6: --replay drew a frame per pair of points (~18 ms each: a 20,000-point
    stroke took 158 s). Now each stroke is fed whole and then one frame drawn, whatever its length."""
    t = np.linspace(0.0, 1.0, strokes.MAX_STROKE_POINTS)
    long_stroke = np.stack([140 + 60 * np.sin(6.28 * t), 40 + 200 * t], axis=1)
    app.canvas.clear()
    before = app.frames
    harness.replay(app, [long_stroke, long_stroke[::-1]])
    assert app.frames - before == 2
    assert [len(s) > 100 for s in app.canvas.strokes()] == [True, True]  # (points closer than a pixel merge)
