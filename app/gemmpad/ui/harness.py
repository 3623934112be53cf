"""Driving the window from a script (tests, `gemmpad app --replay`): replay strokes, wait
for the reading, read the screen and item rectangles back, summarise the run as JSON."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dearpygui.dearpygui as dpg
import numpy as np
from PIL import Image

from gemmpad.inputs.files import atomic_path
from gemmpad.inputs.strokes import Drawing

if TYPE_CHECKING:
    from gemmpad.ui.window import App

# output_frame_buffer() returns the frame before the request; render a few
# more after any change so a screenshot shows the final state.
SETTLE_FRAMES = 3


def replay(app: App, drawing: Drawing | Sequence[np.ndarray], points_per_frame: int | None = None) -> None:
    """Draw `drawing` through the pointer path. points_per_frame None: each stroke in one
    frame (fast: the painting is the same, only the frames between samples are skipped);
    a number: that many points per frame, as a hand would. A Drawing (a strokes file)
    is scaled to the canvas and each stroke drawn at its recorded width; the brush is
    then set back to what it was."""
    if isinstance(drawing, Drawing):
        d = drawing.on_canvas(app.canvas.size)
        plan = list(zip(d.strokes, d.widths))
    else:
        plan = [(s, app.canvas.brush) for s in drawing]
    brush = app.canvas.brush
    for stroke, width in plan:
        app.set_brush(width)
        pts = np.asarray(stroke, dtype=np.float64).reshape(-1, 2)
        app.feed("down", *pts[0])
        for i, (x, y) in enumerate(pts[1:], start=1):
            app.feed("move", x, y)
            if points_per_frame and i % points_per_frame == 0:
                app.step()
        app.feed("up")
        app.step()
    app.set_brush(brush)


def settle(app: App, timeout: float = 60.0) -> None:
    """Step until the worker has answered the newest drawing and the screen shows it."""
    deadline = time.perf_counter() + timeout
    app.step()  # submits whatever changed
    while not app.worker.wait_idle(0.02):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"inference did not finish within {timeout} s")
        app.step()  # keep frames coming, as the interactive loop would
    for _ in range(1 + SETTLE_FRAMES):  # the first takes the last result, the rest reach the frame buffer
        app.step()


def run_frames(app: App, frames: int) -> None:
    """Run the network every frame for `frames` frames (R on), then settle: the latency
    statistics then cover that many frames of one configuration."""
    if frames <= 0:
        return
    app.set_continuous(True)
    start = app.frames
    while app.frames - start < frames:
        app.step()
    app.set_continuous(False)
    settle(app)


def grab(app: App) -> np.ndarray:
    """The window as it is on screen: float32 RGB [H, W, 3] in [0, 1], top row first."""
    box: list[Any] = []
    for _ in range(SETTLE_FRAMES):
        app.step()
    dpg.output_frame_buffer(callback=lambda sender, data: box.append(data))
    for _ in range(SETTLE_FRAMES + 5):
        app.step()  # runs the queued callback
        if box:
            break
    if not box:
        raise RuntimeError("Dear PyGui did not deliver the frame buffer")
    buf = box[0]
    w, h = buf.get_width(), buf.get_height()
    return np.frombuffer(buf, dtype=np.float32).reshape(h, w, 4)[..., :3].copy()


def screenshot(app: App, path: str | Path) -> Path:
    """Write the window to a PNG (atomically); returns the path."""
    pixels = np.round(np.clip(grab(app), 0.0, 1.0) * 255.0).astype(np.uint8)
    out = Path(path)
    with atomic_path(out) as tmp:
        Image.fromarray(pixels, mode="RGB").save(tmp)
    return out


def rect(item: int | str) -> tuple[int, int, int, int]:
    """(x, y, width, height) of an item in window pixels, as in grab() and screenshots."""
    x, y = dpg.get_item_rect_min(item)
    w, h = dpg.get_item_rect_size(item)
    return int(x), int(y), int(w), int(h)


def summary(app: App) -> dict[str, Any]:
    """The final state as JSON-ready data (printed by --replay/--exit)."""
    p = app.state.reading.prediction
    ft = np.array(app.frame_times) * 1e3 if app.frame_times else np.array([np.nan])
    out: dict[str, Any] = {
        "digit": None if p is None else p.digit,
        "confidence": None if p is None else round(float(p.confidence), 6),
        "unsure": app.state.reading.unsure,
        "probs": None if p is None else [round(float(v), 6) for v in p.probs],
        "backend": app.state.reading.backend,
        "kernel": app.state.reading.kernel,
        "batch": app.state.batch,
        "warm": app.state.warm,
        "cpu_threads": app.cpu_threads,
        "kernel_us": None if p is None else round(p.timing.kernel_us, 3),
        "end_to_end_us": None if p is None else round(p.timing.end_to_end_us, 3),
    }
    out.update({k: round(v, 3) for k, v in app.latency_stats().items()})
    out.update(
        {
            "strokes": len(app.canvas.strokes()),
            "frames": app.frames,
            "frame_ms_median": round(float(np.median(ft)), 3),
            "frame_ms_p99": round(float(np.percentile(ft, 99)), 3),
            "work_ms_median": round(1e3 * float(np.median(app.work_times or [np.nan])), 3),
            "startup_s": None if app.startup_s is None else round(app.startup_s, 3),
            "canvas_rect": list(rect(app.draw.image)),
            "viewport": [dpg.get_viewport_client_width(), dpg.get_viewport_client_height()],
            "scale": app.scale,
            "gpu": str(app.gpu),
            "error": app.error,
            "status": app.status.message,
        }
    )
    return out
