"""What the window reads and shows: the preview, digits, every kernel, the GPU's reason."""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.ui import harness
from tests.ui.support import (BASE, DIGITS, HAVE_MODEL, NEEDS_MODEL, at_canvas_size, draw, preview28, real_input, seven,
                              shot)


def test_preview_and_textures_show_what_the_network_sees(app: object, tmp_path_factory: pytest.TempPathFactory) -> None:
    from gemmpad.inputs.preprocess import preprocess
    from gemmpad.ui import style
    from gemmpad.ui.prediction_panel import PREVIEW_SCALE

    draw(app, seven())
    assert app.canvas.image.max() == pytest.approx(1.0)
    expected = preprocess(app.canvas.image)
    assert expected is not None
    np.testing.assert_array_equal(preview28(app), expected)
    # The window shows those pixels: read them back from the frame buffer.
    frame = harness.grab(app)
    x, y, w, h = harness.rect(app.pred.preview)
    assert w == h == app.layout.preview  # the size the layout gives it (it follows the window)
    # each input's block centre (away from the faint grid on a block's last texel), on screen
    at = ((np.arange(28) * PREVIEW_SCALE + PREVIEW_SCALE // 2) * w / (28 * PREVIEW_SCALE)).astype(int)
    shown = style.coverage_from_rgba(frame[y + at][:, x + at])
    np.testing.assert_allclose(shown, expected, atol=3 / 255)
    x, y, w, h = harness.rect(app.draw.image)
    shown = at_canvas_size(style.coverage_from_rgba(frame[y : y + h, x : x + w]))
    assert np.abs(shown - app.canvas.image).mean() < 0.01  # the canvas shows at any size, filtered
    shot(app, tmp_path_factory, "preview-seven")


@NEEDS_MODEL
@pytest.mark.parametrize("digit", sorted(DIGITS))
def test_reads_drawn_digits(app: object, digit: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    import dearpygui.dearpygui as dpg

    draw(app, DIGITS[digit]())
    p = app.state.reading.prediction
    assert p is not None
    assert p.digit == digit, f"read {p.digit}, probs {np.round(p.probs, 3)}"
    assert dpg.get_value(app.pred.digit) == str(digit)
    shot(app, tmp_path_factory, f"digit-{digit}")


def test_switching_backend_kernel_and_batch_keeps_the_prediction(app: object) -> None:
    draw(app, seven())
    ref = app.state.reading.prediction
    assert ref is not None
    seen = []
    for backend, reason in app.backend_reasons.items():
        if reason:
            continue
        app.set_backend(backend)
        harness.settle(app)
        assert app.state.reading.backend == backend and app.state.kernel in app.kernel_lists[backend]
        for kernel in app.kernel_lists[backend]:
            app.set_kernel(kernel)
            harness.settle(app)
            assert (app.state.reading.backend, app.state.reading.kernel) == (backend, kernel), app.error
            assert app.state.reading.prediction is not None and not app.error
            # tf32 / fp16 kernels round the inputs: allow their error, not more.
            np.testing.assert_allclose(app.state.reading.prediction.probs, ref.probs,
                                       atol=2e-2 if "16" in kernel or "tf32" in kernel else 1e-4)
            assert app.state.reading.prediction.digit == ref.digit
            assert len(app.state.reading.history) >= 1 and app.state.reading.history[-1].batch == 1
            seen.append(kernel)
    assert "numpy" in seen and (BASE != "cpu" or any(k.startswith("cpu.") for k in seen))
    app.set_backend(BASE)
    for batch in (4, 256):
        app.set_batch(batch)
        harness.settle(app)
        p = app.state.reading.prediction
        assert p is not None and p.timing.batch == batch
        assert np.isclose(p.probs.sum(), 1.0, atol=1e-4)
        if HAVE_MODEL:  # jittered copies of a clear 7 still read 7
            assert p.digit == ref.digit
        else:  # random weights: averaging small shifts keeps the probabilities near the unshifted ones
            assert np.abs(p.probs - ref.probs).max() < 0.25
    summary = harness.summary(app)
    assert summary["batch"] == 256 and summary["kernel"] == app.state.kernel and summary["frames"] > 0


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

    assert gpu_line(status) == f"No GPU: {status.reason}; the CPU runs the network"
    assert "(" not in status.reason or status.reason == status.detail  # plain words, not CUDA's versions
    assert dpg.get_value(app.status.gpu).rstrip("…") in gpu_line(status)
    tooltip_texts = [dpg.get_value(t) for t in dpg.get_item_children(app.engine.backend_tips["cuda"], 1)]
    assert any(status.reason in t for t in tooltip_texts)
    app.set_backend("cuda")  # refused, with the reason, and the app stays on the CPU
    assert app.state.backend == BASE and status.reason in app.message
    # Hovering the greyed-out button shows the reason (tooltips of disabled items must still open).
    xt = real_input()
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


def scribble() -> list[np.ndarray]:
    """A scribble as a hand makes one: a stroke scrawled across the canvas, looping as it goes,
    no digit's shape. (A knot looping over itself in one place can read as an 8 with good reason.)"""
    t = np.linspace(0, 1, 300)
    return [np.stack([40 + 200 * t + 25 * np.sin(2 * np.pi * 9 * t),
                      140 + 50 * np.sin(2 * np.pi * 2.5 * t) + 20 * np.cos(2 * np.pi * 11 * t)], axis=1)]


@NEEDS_MODEL
def test_unsure_on_a_scribble_not_on_a_digit(app: object) -> None:
    """A scribble read as a digit at 80-99.9 % (issue 22): the window now shows "?" and the
    network's best guess; a clear 7 still shows 7."""
    import dearpygui.dearpygui as dpg

    assert app.detector is not None, app._no_detector  # the shipped model ships its detector
    draw(app, scribble())
    assert app.state.reading.prediction is not None and app.state.reading.unsure is True
    assert dpg.get_value(app.pred.digit) == "?" and dpg.get_value(app.pred.conf) == "unsure"
    assert dpg.get_value(app.pred.runner).startswith(f"best guess {app.state.reading.prediction.digit}")
    # the verdict is the detector's on what the network saw
    assert app.detector.unsure(app.worker._clf.model, preview28(app).reshape(1, -1))[0]
    app.clear()
    draw(app, seven())
    assert app.state.reading.unsure is False and dpg.get_value(app.pred.digit) == "7"
    assert dpg.get_value(app.pred.conf).endswith("%")
    app.clear()
    harness.settle(app)
    assert app.state.reading.unsure is None
    assert dpg.get_value(app.pred.digit) == "?" and dpg.get_value(app.pred.conf) == "draw a digit"


def test_a_hesitant_reading_does_not_look_like_an_answer(app: object) -> None:
    """Issue 42: a 47.5 % reading showed a big, bright, confident "4". Below SURE it is muted and
    says it is between two digits; a sure one stays bright."""
    import dearpygui.dearpygui as dpg

    from gemmpad.runtime.classifier import Prediction, Timing
    from gemmpad.ui.prediction_panel import SURE

    def shown(probs: list[float]) -> tuple[str, tuple[float, ...], str]:
        p = np.asarray(probs, np.float32)
        app.pred.show(Prediction(int(p.argmax()), float(p.max()), p, np.zeros((28, 28), np.float32),
                                 Timing(1.0, 2.0, 1)), unsure=False)
        colour = tuple(round(c, 3) for c in dpg.get_item_configuration(app.pred.digit)["color"][:3])
        return dpg.get_value(app.pred.digit), colour, dpg.get_value(app.pred.caption)

    hesitant = [0.0] * 10
    hesitant[4], hesitant[9] = 0.475, 0.465
    hesitant[1] = 0.06
    digit, colour, caption = shown(hesitant)
    assert digit == "4" and caption.startswith("not sure") and 0.475 < SURE
    sure = [0.0] * 10
    sure[4], sure[9] = 0.97, 0.03
    digit2, colour2, caption2 = shown(sure)
    assert digit2 == "4" and caption2 == "confidence" and colour2 != colour
    app.pred.show(None)


@pytest.mark.skipif(BASE != "cpu", reason="needs the native CPU kernels (a slow rung)")
def test_a_reading_in_flight_is_marked_pending(app: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: during a 1.3 s pass (cpu.01_naive at batch 4096) the canvas showed the new stroke while
    the digit and bars showed the old reading, unmarked. Now the reading is marked as the previous
    drawing's until the new one is read, then shown plainly again."""
    import time

    import dearpygui.dearpygui as dpg

    from gemmpad.ui import window

    monkeypatch.setattr(window, "PENDING_AFTER_S", 0.0)  # marked at once (the naive pass takes ~1 s)
    app.set_kernel("cpu.01_naive")
    app.set_batch(4096)
    draw(app, seven())
    assert not app.pending and dpg.get_value(app.pred.caption) != "reading your new strokes…"
    old = dpg.get_value(app.pred.digit)
    harness.replay(app, [np.array([[60.0, 200.0], [90.0, 210.0], [120.0, 205.0]])], points_per_frame=3)
    deadline = time.perf_counter() + 30
    while not app.pending and time.perf_counter() < deadline and app.worker.busy:
        app.step()
    assert app.pending, "a new stroke on a slow rung was never marked as waiting for its reading"
    app.step()
    assert dpg.get_value(app.pred.caption) == "reading your new strokes…" and app.pred.pending
    assert dpg.get_value(app.pred.digit) == old  # the last reading stays, marked, not blanked
    assert dpg.get_value(app.draw.reading).endswith("·  reading…")  # (the heading's, in one column)
    harness.settle(app)
    app.step()
    assert not app.pending and not app.pred.pending
    assert dpg.get_value(app.pred.caption) != "reading your new strokes…"
