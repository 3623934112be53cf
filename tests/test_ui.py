"""The drawing window, driven in-process frame by frame, plus one scripted subprocess run.

Dear PyGui allows one context per process, so the in-process tests share one
session-scoped App and reset it between tests. Without a DISPLAY the session
starts its own Xvfb (skipping, with the reason, when Xvfb is not installed).
Screenshots are kept under pytest's temporary directory; their paths are printed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from gemmpad import strokes
from gemmpad.engine import available_backends
from gemmpad.model import Model, default_model_path, load_model
from gemmpad.strokes import CANVAS
from gemmpad.ui import harness
from gemmpad.ui.canvas import Canvas

HAVE_MODEL = default_model_path().exists()
# The backend the tests draw on: the native CPU code when this build has it, else NumPy.
BASE = "cpu" if not available_backends()["cpu"] else "numpy"
NEEDS_MODEL = pytest.mark.skipif(not HAVE_MODEL, reason=f"no shipped model at {default_model_path()}")


# ------------------------------------------------------------------ drawings
def _zero() -> list[np.ndarray]:
    t = np.linspace(0, 2 * np.pi, 49)
    return [np.stack([140 + 55 * np.sin(t), 140 - 85 * np.cos(t)], axis=1)]


def _one() -> list[np.ndarray]:
    return [np.stack([np.linspace(146, 134, 19), np.linspace(50, 230, 19)], axis=1)]


def _seven() -> list[np.ndarray]:
    top = np.stack([np.linspace(72, 205, 12), np.linspace(70, 64, 12)], axis=1)
    stem = np.stack([np.linspace(205, 138, 16), np.linspace(64, 236, 16)], axis=1)
    return [top, stem]


DIGITS = {0: _zero, 1: _one, 7: _seven}


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def display() -> Iterator[str]:
    """A usable X display: the session's own, or a private Xvfb started here."""
    from gemmpad.ui.app import display_problem

    if os.environ.get("DISPLAY") and not display_problem():
        yield os.environ["DISPLAY"]
        return
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("no X display and Xvfb is not installed (apt-get install xvfb xauth)")
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [xvfb, "-displayfd", str(write_fd), "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        number = f.readline().strip()  # Xvfb writes the display number once it accepts clients
    if not number:
        proc.kill()
        pytest.skip("Xvfb did not start")
    old = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = f":{number}"
    try:
        yield os.environ["DISPLAY"]
    finally:
        if old is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = old
        proc.terminate()
        proc.wait(10)


def _model() -> Model:
    """The shipped model, or random weights when it is absent (enough for pixel/plumbing tests)."""
    if HAVE_MODEL:
        return load_model()
    rng = np.random.default_rng(1234)
    w = {
        "W1": rng.normal(0, 0.05, (784, 100)),
        "b1": rng.normal(0, 0.1, 100),
        "W2": rng.normal(0, 0.1, (100, 100)),
        "b2": rng.normal(0, 0.1, 100),
        "W3": rng.normal(0, 0.3, (100, 10)),
        "b3": rng.normal(0, 0.1, 10),
    }
    return Model({k: v.astype(np.float32) for k, v in w.items()})


@pytest.fixture(scope="session")
def session_app(display: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from gemmpad.engine import Classifier
    from gemmpad.ui.window import App

    app = App(Classifier(_model(), backend=BASE), drawings_dir=tmp_path_factory.mktemp("drawings"), vsync=False)
    app.step()
    yield app
    app.close()


@pytest.fixture
def app(session_app: object) -> object:
    """The shared window, reset: empty canvas, BASE backend's default kernel, batch 1, cold timing,
    default brush."""
    from gemmpad.ui.canvas import DEFAULT_BRUSH

    a = session_app
    a.clear()
    a.set_continuous(False)
    a.set_warm(False)
    a.set_backend(BASE)
    a.set_kernel(a.kernel_lists[BASE][-1])  # the whole-network kernel: the backend's default
    a.set_batch(1)
    a.set_brush(DEFAULT_BRUSH)
    harness.settle(a)
    return a


def _draw(app: object, drawing: list[np.ndarray]) -> None:
    """Feed the strokes through the pointer path, a few points per frame, then settle."""
    harness.replay(app, drawing, points_per_frame=4)
    harness.settle(app)


def _at_canvas_size(shown: np.ndarray) -> np.ndarray:
    """The canvas as shown on screen (any size), sampled back to the canvas's pixels."""
    rows = ((np.arange(CANVAS[0]) + 0.5) * shown.shape[0] / CANVAS[0]).astype(int)
    cols = ((np.arange(CANVAS[1]) + 0.5) * shown.shape[1] / CANVAS[1]).astype(int)
    return shown[rows][:, cols]


def _shot(app: object, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    path = harness.screenshot(app, tmp_path_factory.getbasetemp() / "screenshots" / f"{name}.png")
    print(f"screenshot: {path}")
    return path


# ------------------------------------------------------------ canvas (no GUI)
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


def test_worker_answers_the_newest_request_and_skips_stale_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from gemmpad.engine import Classifier
    from gemmpad.ui.inference import InferenceWorker

    clf = Classifier(_model(), backend="numpy")
    real, seen = clf.classify, []

    def slow(image: np.ndarray, batch: int = 1, warmup: int = 0) -> object:
        seen.append(float(image[0, 0]))
        time.sleep(0.05)
        return real(image, batch, warmup)

    monkeypatch.setattr(clf, "classify", slow)
    worker = InferenceWorker(clf)
    try:
        image = strokes.render(_seven())
        for i in range(20):  # much faster than the worker can answer
            image[0, 0] = i / 100
            last = worker.submit(image, "numpy", None, 1 + i % 2)
        assert worker.wait_idle(10)
        result = worker.take()
        assert result is not None and result.seq == last and result.error == ""
        assert seen[-1] == pytest.approx(0.19) and len(seen) < 20  # the newest ran; stale ones were dropped
        assert result.prediction is not None and result.prediction.timing.batch == 2
        assert result.history and all(t.batch == 2 for t in result.history)  # this configuration only
        assert worker.take() is None  # each result is handed out once
        worker.submit(image, "no-such-backend", None, 1)  # refused: reported, old setting kept
        assert worker.wait_idle(10)
        bad = worker.take()
        assert bad is not None and "no-such-backend" in bad.error and bad.backend == "numpy"
        assert bad.prediction is not None
    finally:
        worker.close()


def test_changes_and_warm_requests_run_untimed_passes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from gemmpad.engine import Classifier, Timing
    from gemmpad.ui.inference import WARM_SKIP_US, WARMUP_PASSES, InferenceWorker

    clf = Classifier(_model(), backend="numpy")
    real, warmups = clf.classify, []

    def counted(image: np.ndarray, batch: int = 1, warmup: int = 0) -> object:
        warmups.append(warmup)
        return real(image, batch, warmup)

    monkeypatch.setattr(clf, "classify", counted)
    worker = InferenceWorker(clf)
    try:
        image = strokes.render(_seven())
        for warm in (False, False, True, True):
            worker.submit(image, "numpy", None, 1, warm)
            assert worker.wait_idle(10)
        result = worker.take()
        # a cold change (the first request is one) runs a set-up pass apart, then a cold one;
        # cold frames run alone and warm ones after WARMUP_PASSES
        assert warmups == [0, 0, 0, WARMUP_PASSES, WARMUP_PASSES]
        assert result is not None and len(result.history) == 2  # warm and cold frames are not mixed
        clf._record(Timing(1.0, 2 * WARM_SKIP_US, 1))  # as if the last call took 20 ms
        worker.submit(image, "numpy", None, 1, True)
        assert worker.wait_idle(10) and warmups[-1] == 0  # slow calls are not warmed up
    finally:
        worker.close()


# ------------------------------------------------------------- in the window
def test_preview_and_textures_show_what_the_network_sees(app: object, tmp_path_factory: pytest.TempPathFactory) -> None:
    from gemmpad.preprocess import preprocess
    from gemmpad.ui import style
    from gemmpad.ui.prediction_panel import PREVIEW_SCALE

    _draw(app, _seven())
    assert app.canvas.image.max() == pytest.approx(1.0)
    expected = preprocess(app.canvas.image)
    assert expected is not None
    np.testing.assert_array_equal(app.preview28, expected)
    # The window shows those pixels: read them back from the frame buffer.
    frame = harness.grab(app)
    x, y, w, h = harness.rect(app.pred.preview)
    assert (w, h) == (28 * PREVIEW_SCALE, 28 * PREVIEW_SCALE)
    c = PREVIEW_SCALE // 2
    shown = style.coverage_from_rgba(frame[y + c : y + h : PREVIEW_SCALE, x + c : x + w : PREVIEW_SCALE])
    np.testing.assert_allclose(shown, expected, atol=3 / 255)
    x, y, w, h = harness.rect(app.draw.image)
    shown = _at_canvas_size(style.coverage_from_rgba(frame[y : y + h, x : x + w]))
    assert np.abs(shown - app.canvas.image).mean() < 0.01  # the canvas shows at any size, filtered
    _shot(app, tmp_path_factory, "preview-seven")


@NEEDS_MODEL
@pytest.mark.parametrize("digit", sorted(DIGITS))
def test_reads_drawn_digits(app: object, digit: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    import dearpygui.dearpygui as dpg

    _draw(app, DIGITS[digit]())
    assert app.prediction is not None
    assert app.prediction.digit == digit, f"read {app.prediction.digit}, probs {np.round(app.prediction.probs, 3)}"
    assert dpg.get_value(app.pred.digit) == str(digit)
    _shot(app, tmp_path_factory, f"digit-{digit}")


def test_switching_backend_kernel_and_batch_keeps_the_prediction(app: object) -> None:
    _draw(app, _seven())
    ref = app.prediction
    assert ref is not None
    seen = []
    for backend, reason in app.backend_reasons.items():
        if reason:
            continue
        app.set_backend(backend)
        harness.settle(app)
        assert app.clf_backend == backend and app.kernel in app.kernel_lists[backend]
        for kernel in app.kernel_lists[backend]:
            app.set_kernel(kernel)
            harness.settle(app)
            assert (app.clf_backend, app.clf_kernel) == (backend, kernel), app.error
            assert app.prediction is not None and not app.error
            # tf32 / fp16 kernels round the inputs: allow their error, not more.
            np.testing.assert_allclose(app.prediction.probs, ref.probs, atol=2e-2 if "16" in kernel or "tf32" in kernel else 1e-4)
            assert app.prediction.digit == ref.digit
            assert len(app.history) >= 1 and app.history[-1].batch == 1
            seen.append(kernel)
    assert "numpy" in seen and (BASE != "cpu" or any(k.startswith("cpu.") for k in seen))
    app.set_backend(BASE)
    for batch in (4, 256):
        app.set_batch(batch)
        harness.settle(app)
        p = app.prediction
        assert p is not None and p.timing.batch == batch
        assert np.isclose(p.probs.sum(), 1.0, atol=1e-4)
        if HAVE_MODEL:  # jittered copies of a clear 7 still read 7
            assert p.digit == ref.digit
        else:  # random weights: averaging small shifts keeps the probabilities near the unshifted ones
            assert np.abs(p.probs - ref.probs).max() < 0.25
    summary = harness.summary(app)
    assert summary["batch"] == 256 and summary["kernel"] == app.kernel and summary["frames"] > 0


def test_gpu_controls_are_disabled_with_the_reason_when_cuda_is_unusable(app: object) -> None:
    import dearpygui.dearpygui as dpg

    from gemmpad import cuda_status

    status = cuda_status()
    btn = app.engine.backend_buttons["cuda"]
    assert dpg.get_item_configuration(btn)["enabled"] == status.available
    if status.available:
        assert status.device in dpg.get_value(app.status.gpu)
        return
    from gemmpad.ui.text import gpu_line

    first = status.reason.split(" (", 1)[0]  # one clause, not the driver's two versions
    assert gpu_line(status) == f"No GPU: {first}; the CPU runs the network"
    assert dpg.get_value(app.status.gpu).rstrip("…") in gpu_line(status)
    tooltip_texts = [dpg.get_value(t) for t in dpg.get_item_children(app.engine.backend_tips["cuda"], 1)]
    assert any(status.reason in t for t in tooltip_texts)
    app.set_backend("cuda")  # refused, with the reason, and the app stays on the CPU
    assert app.backend == BASE and status.reason in app.message
    # Hovering the greyed-out button shows the reason (tooltips of disabled items must still open).
    try:
        xt = _XTest()
    except OSError as exc:
        pytest.skip(f"XTest is not available to fake mouse input: {exc}")
    try:
        vx, vy = dpg.get_viewport_pos()
        x, y, w, h = harness.rect(btn)
        xt.move(int(vx + x + w / 2), int(vy + y + h / 2))
        for _ in range(10):
            app.step()
        assert dpg.is_item_hovered(btn) and dpg.is_item_visible(app.engine.backend_tips["cuda"])
    finally:
        xt.move(0, 0)
        xt.close()


def test_clear_and_undo(app: object) -> None:
    import dearpygui.dearpygui as dpg

    from gemmpad.preprocess import preprocess

    drawing = _seven()
    _draw(app, drawing)
    assert len(app.canvas.strokes()) == 2
    app.undo()
    harness.settle(app)
    np.testing.assert_allclose(app.canvas.image, strokes.render(app.canvas.strokes()), atol=1e-6)
    assert len(app.canvas.strokes()) == 1
    np.testing.assert_array_equal(app.preview28, preprocess(app.canvas.image))
    one_stroke = app.canvas.image.copy()
    app.clear()
    harness.settle(app)
    assert not app.canvas.image.any() and app.prediction is None
    assert dpg.get_value(app.pred.digit) == "?" and not app.preview28.any()
    app.undo()  # a clear is undone like a stroke: the drawing and its reading come back
    harness.settle(app)
    np.testing.assert_array_equal(app.canvas.image, one_stroke)
    assert app.prediction is not None and len(app.canvas.strokes()) == 1
    app.redo()  # and redone
    harness.settle(app)
    assert app.canvas.empty and app.prediction is None
    app.undo()
    app.undo()  # back to before the first stroke
    harness.settle(app)
    assert app.canvas.empty and app.prediction is None
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

    _draw(app, _seven())
    assert app.shortcut(dpg.mvKey_Z, ctrl=True)
    assert len(app.canvas.strokes()) == 1
    width = app.canvas.brush
    app.shortcut(dpg.mvKey_Close_Brace)
    assert app.canvas.brush == width + 2
    from gemmpad.ui.keys import key_equal

    # Only ImGui named keys (>= 512) may be polled: lower codes read garbage in Dear PyGui 2.3.
    assert all(s.key >= 512 for s in app.shortcuts)
    app.shortcut(key_equal())
    assert app.batch == 2
    app.shortcut(dpg.mvKey_Minus)
    assert app.batch == 1
    kernels = app.kernel_lists[BASE]
    start = kernels.index(app.kernel)
    app.shortcut(dpg.mvKey_K)
    assert app.kernel == kernels[(start + 1) % len(kernels)]
    app.shortcut(dpg.mvKey_K, shift=True)
    assert app.kernel == kernels[start]
    usable = [b for b, reason in app.backend_reasons.items() if not reason]
    app.shortcut(dpg.mvKey_B)
    assert app.backend == usable[(usable.index(BASE) + 1) % len(usable)]
    app.shortcut(dpg.mvKey_R)
    assert app.continuous
    app.shortcut(dpg.mvKey_W)
    assert app.warm and dpg.get_value(app.engine.warm_box)
    harness.settle(app)
    assert harness.summary(app)["warm"] and "warm" in dpg.get_value(app.engine.caption)
    assert app.history and app.history[-1].batch == 1
    app.shortcut(dpg.mvKey_W)
    app.set_continuous(False)
    assert not app.warm and not dpg.get_value(app.engine.warm_box)
    app.shortcut(dpg.mvKey_C)
    assert app.canvas.empty
    assert not app.shortcut(dpg.mvKey_F12)


def test_drawing_never_waits_for_a_slow_forward_pass(app: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames keep coming while a forward pass is stuck: the worker's classify blocks until
    the test releases it, and every frame of a new stroke must be drawn in the meantime."""
    _draw(app, _seven())
    clf = app.worker._clf
    real = clf.classify
    release, started, finished = threading.Event(), threading.Event(), threading.Event()

    def stuck(image: np.ndarray, batch: int = 1, warmup: int = 0) -> object:
        started.set()
        release.wait(30)  # a frame that waited for this would stall the test, not pass it
        finished.set()
        return real(image, batch, warmup)

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
    _draw(app, _one())
    labelled = app.save(label=1)
    assert labelled is not None and labelled.parent == app.drawings_dir / "1"
    pixels = np.asarray(Image.open(labelled))
    assert pixels.dtype == np.uint8 and pixels.shape == CANVAS
    np.testing.assert_allclose(pixels / 255.0, app.canvas.image, atol=1 / 255)
    # The strokes file (points rounded to 0.1 px) re-renders the same drawing.
    diff = np.abs(strokes.render(strokes.load(labelled.with_suffix(".json"))) - app.canvas.image)
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


class _XTest:
    """Real pointer events on the X server (XTest), to check the mouse-to-canvas mapping."""

    def __init__(self) -> None:
        self.x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        self.xtst = ctypes.CDLL(ctypes.util.find_library("Xtst") or "libXtst.so.6")
        self.x11.XOpenDisplay.restype = ctypes.c_void_p
        self.x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        self.x11.XFlush.argtypes = [ctypes.c_void_p]
        self.x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
        self.xtst.XTestFakeMotionEvent.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_ulong]
        self.xtst.XTestFakeButtonEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        self.dpy = self.x11.XOpenDisplay(None)
        if not self.dpy:
            raise OSError("cannot open the display")

    def move(self, x: int, y: int) -> None:
        self.xtst.XTestFakeMotionEvent(self.dpy, -1, x, y, 0)
        self.x11.XFlush(self.dpy)

    def key(self, name: str, down: bool) -> None:
        """Press or release the key with X keysym `name` ("c", "z", "Control_L")."""
        self.x11.XStringToKeysym.restype = ctypes.c_ulong
        self.x11.XStringToKeysym.argtypes = [ctypes.c_char_p]
        self.x11.XKeysymToKeycode.restype = ctypes.c_ubyte
        self.x11.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        self.xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        code = self.x11.XKeysymToKeycode(self.dpy, self.x11.XStringToKeysym(name.encode()))
        self.xtst.XTestFakeKeyEvent(self.dpy, code, int(down), 0)
        self.x11.XFlush(self.dpy)

    def button(self, down: bool) -> None:
        self.xtst.XTestFakeButtonEvent(self.dpy, 1, int(down), 0)
        self.x11.XFlush(self.dpy)

    def close(self) -> None:
        self.x11.XCloseDisplay(self.dpy)


def test_real_mouse_and_keys_reach_the_canvas(app: object) -> None:
    import dearpygui.dearpygui as dpg

    try:
        xt = _XTest()
    except OSError as exc:
        pytest.skip(f"XTest is not available to fake mouse input: {exc}")
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
    xt = _XTest()
    try:
        for name, down in (("Control_L", True), ("z", True), ("z", False), ("Control_L", False)):
            xt.key(name, down)
            for _ in range(2):
                app.step()
    finally:
        xt.close()
    assert app.canvas.empty


# ------------------------------------------------------------ the CLI, scripted
def _env(display: str | None) -> dict[str, str]:
    """The environment for `python -m gemmpad`: the same gemmpad this process imported
    (the source tree in development, site-packages after `pip install .`)."""
    import gemmpad

    env = dict(os.environ)
    package_root = str(Path(gemmpad.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env.pop("DISPLAY", None)
    if display:
        env["DISPLAY"] = display
    return env


def test_replay_screenshot_exit(display: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    from PIL import Image

    from gemmpad.ui import style

    out = tmp_path_factory.getbasetemp() / "screenshots"
    out.mkdir(exist_ok=True)
    drawing = _seven()
    replay = out / "seven.json"
    strokes.save(replay, drawing)
    png = out / "replay-seven.png"
    record = out / "recorded.json"
    cmd = [sys.executable, "-m", "gemmpad", "app", "--replay", str(replay), "--backend", BASE,
           "--screenshot", str(png), "--exit", "--no-vsync", "--record", str(record)]
    if not HAVE_MODEL:
        _model().save(out / "random-mlp.npz")
        cmd += ["--model", str(out / "random-mlp.npz")]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=_env(display), capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    result = json.loads(line)
    print(f"screenshot: {png}\nreplay wall {wall:.2f} s; {line}")
    assert result["backend"] == BASE
    assert result["kernel"] == "numpy" if BASE == "numpy" else result["kernel"].startswith("cpu.")
    assert result["strokes"] == 2 and result["batch"] == 1
    assert len(result["probs"]) == 10 and abs(sum(result["probs"]) - 1) < 1e-3
    assert result["kernel_us"] > 0 and result["end_to_end_us"] >= result["kernel_us"]
    assert result["startup_s"] is not None and 0 < result["startup_s"] < 30
    if HAVE_MODEL:
        assert result["digit"] == 7
    # --record wrote back what was drawn (the painted polyline: the samples joined by short curves).
    recorded = strokes.load(record)
    assert len(recorded) == len(drawing)
    for got, want in zip(recorded, drawing):
        np.testing.assert_allclose(got[[0, -1]], want[[0, -1]], atol=0.06)
    assert np.abs(strokes.render(recorded) - strokes.render(drawing)).mean() < 0.005
    # The screenshot shows the drawing where the canvas is.
    img = np.asarray(Image.open(png).convert("RGB"), dtype=np.float32) / 255.0
    assert img.shape[0] > 500 and img.shape[1] > 900
    x, y, w, h = result["canvas_rect"]
    shown = _at_canvas_size(style.coverage_from_rgba(img[y : y + h, x : x + w]))
    assert np.abs(shown - strokes.render(drawing)).mean() < 0.01


def test_no_display_gives_a_clear_message_not_an_abort(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "gemmpad", "app", "--exit"], env=_env(None),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "DISPLAY" in proc.stderr and "xvfb-run" in proc.stderr and "gemmpad predict" in proc.stderr
    assert "Traceback" not in proc.stderr
    bad = subprocess.run([sys.executable, "-m", "gemmpad", "app", "--exit"], env={**_env(None), "DISPLAY": ":4242"},
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cannot open display" in bad.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replay", "/nonexistent/strokes.json"], "strokes JSON file not found"),
        (["--batch", "5000"], "--batch must be between 1 and 4096"),
        (["--kernel", "numpy.no_such_kernel", "--backend", "numpy"], "no_such_kernel"),
        (["--screenshot", "/dev/null/shot.png"], "--screenshot /dev/null/shot.png: /dev/null is a file, not a directory"),
        (["--screenshot", "/tmp/shot"], "--screenshot /tmp/shot: the file type comes from the suffix"),
        (["--screenshot", "/tmp"], "--screenshot /tmp: /tmp is a directory"),
        (["--record", "/dev/null/strokes.json"], "--record /dev/null/strokes.json: /dev/null is a file"),
        (["--record", "/tmp"], "--record /tmp: /tmp is a directory"),
        (["--brush", "nan"], "argument --brush: must be a finite number"),
    ],
)
def test_bad_arguments_give_one_line_errors(display: str, args: list[str], message: str, tmp_path: Path) -> None:
    if not HAVE_MODEL:
        _model().save(tmp_path / "random-mlp.npz")
        args = [*args, "--model", str(tmp_path / "random-mlp.npz")]
    proc = subprocess.run([sys.executable, "-m", "gemmpad", "app", *args, "--exit"], env=_env(display),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_hostile_files_for_the_window_are_one_line_errors(display: str, tmp_path: Path) -> None:
    """Issue 20: --replay of a FIFO hung (finding 5), --record replaced special files and
    symlinks (finding 7), a model that overflows showed "nan %" (finding 4)."""
    from tests.hostile_files import fifo

    escapes = [fifo(tmp_path / "replay.json"), fifo(tmp_path / "record.json")]
    huge = {k: np.asarray(v, np.float32) for k, v in _model().weights.items()}
    huge["W1"] = np.full_like(huge["W1"], 3e38)
    np.savez(tmp_path / "huge.npz", **huge)
    model = ["--model", str(tmp_path / "huge.npz")]
    cases = [(["--replay", str(tmp_path / "replay.json")], "replay.json: is a FIFO, not a regular file"),
             (["--record", str(tmp_path / "record.json")], "record.json is not a regular file"),
             (model, "huge.npz: the network's output is not finite")]
    try:
        for args, message in cases:
            proc = subprocess.run([sys.executable, "-m", "gemmpad", "app", *args, "--exit"], env=_env(display),
                                  capture_output=True, text=True, timeout=60)
            assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    finally:
        for done in escapes:
            done.set()
    assert (tmp_path / "record.json").is_fifo()


# ------------------------------------------------------------ layout at any size
def _controls(app: object) -> dict[str, int | str]:
    """The leaf widgets whose rectangles the layout test reads back."""
    d, p, e = app.draw, app.pred, app.engine
    items = {"canvas": d.image, "clear": d.clear_btn, "undo": d.undo_btn, "redo": d.redo_btn, "help": d.help_btn,
             "brush": d.brush, "label": d.label, "save": d.save_btn, "digit": p.digit, "conf": p.conf,
             "bars": p.bars_plot, "preview": p.preview, "kernel": e.kernel_combo, "batch": e.batch_combo,
             "run": e.continuous_box, "warm": e.warm_box, "latency": e.plot, "gpu": app.status.gpu}
    items.update({f"backend-{b}": btn for b, btn in e.backend_buttons.items()})
    items.update({f"{k}-{i}": c for k, cells in e.cells.items() for i, c in enumerate(cells)})
    return items


@pytest.mark.parametrize("size", [(1200, 716), (800, 520), (420, 300), (1400, 950), (1000, 640)])
def test_layout_follows_the_window(app: object, size: tuple[int, int], tmp_path_factory: pytest.TempPathFactory) -> None:
    import dearpygui.dearpygui as dpg

    from gemmpad.ui.layout import plan

    _draw(app, _seven())
    try:
        dpg.set_viewport_width(size[0])
        dpg.set_viewport_height(size[1])
        for _ in range(6):
            app.step()
        vw, vh = dpg.get_viewport_client_width(), dpg.get_viewport_client_height()
        assert (vw, vh) == size
        L = plan(vw, vh)
        assert app.layout == L
        x, y, w, h = harness.rect(app.draw.image)
        assert w == h == L.canvas and x >= 0 and x + w <= vw  # the canvas grows with the window, square
        body_bottom = vh - 14 - L.status_h  # the window padding, then the status bar
        shown = {}
        for name, item in _controls(app).items():
            r = harness.rect(item)
            if name == "gpu":
                assert r[1] >= body_bottom  # the status bar is under the panels
                continue
            if dpg.is_item_visible(item) and r[1] >= 0 and r[1] + r[3] <= body_bottom and r[0] + r[2] <= vw:
                shown[name] = r
        for name in ("clear", "undo", "redo", "save", "label", "kernel", "batch") + tuple(
                f"backend-{b}" for b in app.engine.backend_buttons):
            if name not in shown:
                continue
            item = _controls(app)[name]
            label = dpg.get_item_label(item) if name not in ("label", "kernel", "batch") else dpg.get_value(item)
            tw = dpg.get_text_size(label)[0]
            assert shown[name][2] >= tw + 8, f"{name} is {shown[name][2]} px wide, its text {tw} at {size}"
        names = sorted(shown)
        for i, a in enumerate(names):
            ax, ay, aw, ah = shown[a]
            for b in names[i + 1 :]:
                bx, by, bw, bh = shown[b]
                overlap = min(ax + aw, bx + bw) - max(ax, bx) > 1 and min(ay + ah, by + bh) - max(ay, by) > 1
                assert not overlap, f"{a} {shown[a]} overlaps {b} {shown[b]} at {size}"
        if L.mode == "wide":  # everything on one screen at the sizes that allow it
            assert {"canvas", "kernel", "latency", "preview", "bars"} <= set(shown), sorted(shown)
        _shot(app, tmp_path_factory, f"layout-{size[0]}x{size[1]}")
    finally:
        dpg.set_viewport_width(1200)
        dpg.set_viewport_height(716)
        for _ in range(4):
            app.step()


def test_save_label_is_for_one_drawing(app: object) -> None:
    """Pick 4 and save: 4/. Ctrl+7: 7/. Clear, draw, Ctrl+S: unlabelled/, not 4/."""
    import dearpygui.dearpygui as dpg

    from gemmpad.ui.draw_panel import NO_LABEL

    _draw(app, _one())
    dpg.set_value(app.draw.label, "4")
    first = app.save()
    assert first is not None and first.parent.name == "4"
    assert dpg.get_value(app.draw.label) == NO_LABEL and app.message.startswith("Saved 4/")
    assert app.shortcut(dpg.mvKey_7, ctrl=True)
    assert dpg.get_value(app.draw.label) == NO_LABEL
    dpg.set_value(app.draw.label, "3")
    app.clear()  # a new drawing: the label chosen for the old one goes
    assert dpg.get_value(app.draw.label) == NO_LABEL
    _draw(app, _seven())
    assert app.shortcut(dpg.mvKey_S, ctrl=True)
    newest = max(app.drawings_dir.rglob("*.png"), key=lambda p: p.stat().st_mtime_ns)
    assert newest.parent.name == "unlabelled"
    # The message shows whole in the status bar, clear of the frame rate, and expires.
    for _ in range(3):
        app.step()
    mx, _, mw, _ = harness.rect(app.status.msg)
    fx = harness.rect(app.status.frame)[0]
    assert dpg.get_value(app.status.msg).strip() and (not dpg.get_value(app.status.frame) or mx + mw <= fx)


def test_real_shift_equals_raises_the_batch(app: object) -> None:
    """"+" typed the usual way (Shift and =) doubles the batch, through real X key events."""
    try:
        xt = _XTest()
    except OSError as exc:
        pytest.skip(f"XTest is not available to fake key input: {exc}")
    try:
        for name, down in (("Shift_L", True), ("equal", True), ("equal", False), ("Shift_L", False),
                           ("equal", True), ("equal", False), ("minus", True), ("minus", False)):
            xt.key(name, down)
            for _ in range(2):
                app.step()
            if (name, down) == ("Shift_L", False):
                assert app.batch == 2
    finally:
        xt.close()
    assert app.batch == 2  # "=" doubled it to 4, "-" halved it again


def test_idle_window_costs_next_to_nothing(app: object) -> None:
    """With nothing drawn and nothing running, the loop stops drawing frames: the process
    uses under a tenth of a core (it used 1.4-1.6 of 2 cores redrawing ~90 fps), and a real
    key press still reaches it."""
    import dearpygui.dearpygui as dpg

    from gemmpad.ui import window

    app.step()
    stop = threading.Event()
    measured: dict[str, float] = {}

    def observe() -> None:
        time.sleep(window.IDLE_AFTER_S + 0.5)  # let it go idle
        c0, t0, f0 = time.process_time(), time.perf_counter(), app.frames
        stop.wait(3.0)
        measured.update(cpu=time.process_time() - c0, wall=time.perf_counter() - t0, frames=app.frames - f0)
        app.quit()

    watcher = threading.Thread(target=observe)
    watcher.start()
    app._quit = False
    app.run()
    watcher.join()
    app._quit = False
    share = measured["cpu"] / measured["wall"]
    print(f"idle: {100 * share:.1f} % of a core, {measured['frames'] / measured['wall']:.1f} frames/s")
    assert share < 0.10, measured
    # input wakes it: a real key (B, next backend) is seen although no frame was drawing
    try:
        xt = _XTest()
    except OSError as exc:
        pytest.skip(f"XTest is not available to fake key input: {exc}")
    before = app.backend

    def press() -> None:
        time.sleep(window.IDLE_AFTER_S + 1.5)
        xt.key("b", True)
        time.sleep(0.05)
        xt.key("b", False)
        time.sleep(0.5)
        app.quit()

    presser = threading.Thread(target=press)
    presser.start()
    try:
        app.run()
    finally:
        presser.join()
        xt.close()
        app._quit = False
    usable = [b for b, reason in app.backend_reasons.items() if not reason]
    assert app.backend == usable[(usable.index(before) + 1) % len(usable)]
    assert dpg.is_dearpygui_running()


def test_race_runs_every_kernel_without_blocking_and_can_be_cancelled(app: object) -> None:
    import dearpygui.dearpygui as dpg

    from gemmpad.ui import race as race_mod

    app.race_toggle()  # nothing drawn: refused, said
    assert app.race is None and "Draw a digit first" in app.message
    _draw(app, _seven())
    app.set_batch(8)
    harness.settle(app)
    app.race_toggle()
    race = app.race
    entrants = [(b, k) for b, reason in app.backend_reasons.items() if not reason for k in app.kernel_lists[b]]
    assert race is not None and race.entrants == entrants and race.batch == 8
    assert dpg.get_value(app.engine.tabs) == app.engine.race_tab
    frames = 0
    deadline = time.perf_counter() + 120
    while race.running:  # the window keeps drawing frames while the race runs
        app.step()
        frames += 1
        assert time.perf_counter() < deadline
    app.step()
    laps = race.laps
    assert [(lap.backend, lap.kernel) for lap in laps] == entrants and not any(lap.error for lap in laps)
    for lap in laps:
        for warm in (False, True):
            k, e = lap.times(warm)
            assert 0 < k <= e * 1.05 + 5, (lap, warm)  # end to end includes the kernel
    best = race_mod.fastest(laps, warm=False)
    assert best is not None and best.cold_e2e_us == min(lap.cold_e2e_us for lap in laps)
    assert "kernels at batch 8" in dpg.get_value(app.engine.race.status) and frames > 1
    # G cancels a running race between calls
    app.set_batch(1024)
    app.shortcut(dpg.mvKey_G)
    assert app.race is not race and app.race.running
    app.shortcut(dpg.mvKey_G)
    assert app.race.wait(30) and app.race.cancelled and len(app.race.laps) < len(entrants)
    app.step()
    assert "cancelled" in dpg.get_value(app.engine.race.status)
    dpg.set_value(app.engine.tabs, app.engine.latency_tab)


def test_inside_the_network_shows_the_hidden_layers(app: object) -> None:
    import dearpygui.dearpygui as dpg

    from gemmpad.ui import style

    _draw(app, _seven())
    model = app.worker._clf.model
    h1, h2 = model.hidden(app.preview28.reshape(1, -1))
    for rgba, h in zip(app.pred._hidden_rgba, (h1[0], h2[0])):  # the textures' pixels
        shown = rgba[4::9, 4::9]
        expected = np.empty((10, 10, 4), np.float32)
        style.heat(h.reshape(10, 10), expected)
        np.testing.assert_allclose(shown, expected, atol=1e-5)
    if BASE == "cpu":  # a GEMM kernel runs layer by layer and says how long each took
        app.set_kernel("cpu.02_blocked_simd")
        harness.settle(app)
        assert dpg.get_value(app.pred.layer_text).startswith("per layer: L1 ")
    app.clear()
    harness.settle(app)
    blank = np.empty((10, 10, 4), np.float32)
    style.heat(np.zeros((10, 10), np.float32), blank)
    np.testing.assert_allclose(app.pred._hidden_rgba[0][4::9, 4::9], blank)
    assert dpg.get_value(app.pred.layer_text) == ""


def test_scripted_replay_takes_a_frame_per_stroke_not_per_point(app: object) -> None:
    """Issue 20, finding 6: --replay drew a frame per pair of points (~18 ms each: a 20,000-point
    stroke took 158 s). Now each stroke is fed whole and then one frame drawn, whatever its length."""
    t = np.linspace(0.0, 1.0, strokes.MAX_STROKE_POINTS)
    long_stroke = np.stack([140 + 60 * np.sin(6.28 * t), 40 + 200 * t], axis=1)
    before = app.frames
    harness.replay(app, [long_stroke, long_stroke[::-1]])
    assert app.frames - before == 2
    assert [len(s) > 100 for s in app.canvas.strokes()] == [True, True]  # (points closer than a pixel merge)


def test_the_summary_line_is_strict_json(display: str, tmp_path: Path) -> None:
    """Issue 20, finding 4's rule (JSON output is always valid JSON): with no frame timed yet,
    `app --exit` printed "frame_ms_median": NaN."""
    args = ["--exit"]
    if not HAVE_MODEL:
        _model().save(tmp_path / "random-mlp.npz")
        args += ["--model", str(tmp_path / "random-mlp.npz")]
    proc = subprocess.run([sys.executable, "-m", "gemmpad", "app", *args], env=_env(display),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1], parse_constant=lambda c: pytest.fail(f"{c} in {proc.stdout}"))
    assert summary["frame_ms_median"] is None or summary["frame_ms_median"] > 0
