"""The Dear PyGui window: layout, the frame loop, input, and screenshots.

Everything runs on the main thread with `manual_callback_management`: each
frame polls the mouse and keyboard, runs the queued widget callbacks, paints
new stroke segments into the canvas array, uploads it as a texture when it
changed, hands the drawing to the inference worker and shows the newest
result. Nothing in a frame waits for the network, so drawing stays smooth on
the slowest kernel.

Dear PyGui has one context per process: an App owns it from __init__ to
close(), and only one App may exist at a time.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dearpygui.dearpygui as dpg
import numpy as np
from PIL import Image

from gemmpad import native, registry, strokes
from gemmpad.engine import Classifier, Prediction, Timing, available_backends, timing_stats
from gemmpad.errors import GemmpadError
from gemmpad.files import atomic_path
from gemmpad.ui import style
from gemmpad.ui.canvas import BRUSH_RANGE, Canvas
from gemmpad.ui.inference import HISTORY, WARMUP_PASSES, InferenceWorker, Result

BACKEND_LABELS = {"numpy": "NumPy", "cpu": "CPU", "cuda": "GPU"}
BATCHES = tuple(2**i for i in range(13))  # 1 ... 4096 jittered copies
PREVIEW_SCALE = 8  # the 28x28 input drawn as 8x8 blocks: 224 px, crisp (nearest neighbour by hand)
SIDE = 312  # width of the drawing and prediction columns
STATUS_H = 34
HINT = "draw here with the mouse or a pen"
STATUS_CHARS = 100  # longer GPU reasons are cut (the whole text is in the tooltip)
VIEWPORT = (1200, 716)
# output_frame_buffer() returns the frame before the request; render a few
# more after any change so a screenshot shows the final state.
SETTLE_FRAMES = 3


@dataclass(frozen=True)
class Shortcut:
    key: int
    ctrl: bool
    shift: bool
    action: Callable[[App], object]
    help: tuple[str, str] | None  # (keys, what) shown under the canvas; None for aliases


def _key_equal() -> int:
    """The "= +" key. Dear PyGui 2.3's mvKey_Plus is 61, a stale GLFW code rather than
    an ImGui named key (>= 512), and polling it reads garbage: presses appear out of
    nowhere. ImGui orders its keys Equal, LeftBracket, so Equal is mvKey_Open_Brace - 1."""
    return dpg.mvKey_Open_Brace - 1


def _shortcuts() -> list[Shortcut]:
    """The keyboard map; the help lines under the canvas are generated from it."""
    s = Shortcut
    keys = [
        s(dpg.mvKey_C, False, False, lambda a: a.clear(), ("C", "clear")),
        s(dpg.mvKey_Delete, False, False, lambda a: a.clear(), None),
        s(dpg.mvKey_Back, False, False, lambda a: a.clear(), None),
        s(dpg.mvKey_Z, True, False, lambda a: a.undo(), ("Ctrl+Z", "undo")),
        s(dpg.mvKey_U, False, False, lambda a: a.undo(), None),
        s(dpg.mvKey_Open_Brace, False, False, lambda a: a.set_brush(a.canvas.brush - 2), ("[  ]", "brush")),
        s(dpg.mvKey_Close_Brace, False, False, lambda a: a.set_brush(a.canvas.brush + 2), None),
        s(dpg.mvKey_B, False, False, lambda a: a.next_backend(), ("B", "backend")),
        s(dpg.mvKey_K, False, False, lambda a: a.next_kernel(1), ("K  Shift+K", "kernel")),
        s(dpg.mvKey_K, False, True, lambda a: a.next_kernel(-1), None),
        s(_key_equal(), False, False, lambda a: a.set_batch(min(2 * a.batch, BATCHES[-1])), ("+  −", "batch")),
        s(dpg.mvKey_Add, False, False, lambda a: a.set_batch(min(2 * a.batch, BATCHES[-1])), None),
        s(dpg.mvKey_Minus, False, False, lambda a: a.set_batch(max(a.batch // 2, 1)), None),
        s(dpg.mvKey_Subtract, False, False, lambda a: a.set_batch(max(a.batch // 2, 1)), None),
        # R and W: named on their check boxes, not in the list
        s(dpg.mvKey_R, False, False, lambda a: a.set_continuous(not a.continuous), None),
        s(dpg.mvKey_W, False, False, lambda a: a.set_warm(not a.warm), None),
        s(dpg.mvKey_S, True, False, lambda a: a.save(), ("Ctrl+S", "save PNG")),
        s(dpg.mvKey_Q, True, False, lambda a: a.quit(), ("Ctrl+Q", "quit")),
    ]
    for d in range(10):
        keys.append(s(getattr(dpg, f"mvKey_{d}"), True, False, lambda a, d=d: a.save(label=d),
                      ("Ctrl+0…9", "save as digit") if d == 0 else None))
    return keys


def _fmt_us(v: float | None) -> str:
    if v is None or not np.isfinite(v):
        return "–"
    if v < 10:
        return f"{v:.2f} µs"
    if v < 1000:
        return f"{v:.1f} µs"
    return f"{v:,.0f} µs"


def _log_ticks(lo: float, hi: float) -> tuple[tuple[str, float], ...]:
    """1-2-5 ticks between lo and hi (the default log axis labels only whole decades), or
    decades alone when the range spans more than 2.5 of them (the labels would overlap)."""
    ticks = []
    digits = (1, 2, 5) if np.log10(hi / lo) <= 2.5 else (1,)
    for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1):
        for d in digits:
            v = d * 10.0**e
            if lo <= v <= hi:
                ticks.append((f"{v / 1000:g}k" if v >= 1000 else f"{v:g}", v))
    return tuple(ticks)


def _kernel_summary(name: str) -> str:
    if name == "numpy":
        return "NumPy's matmul (BLAS) in Python: the reference the native kernels must match."
    try:
        spec = registry.get(name)
    except GemmpadError:  # a kernel the registry does not describe: no summary rather than a failure
        return ""
    return f"{spec.summary}  [{spec.precision}, {spec.kind}]  {spec.source}"


class App:
    """The window. Drive it with run(), or frame by frame with step() (tests, --replay)."""

    def __init__(
        self,
        classifier: Classifier,
        *,
        drawings_dir: Path,
        batch: int = 1,
        warm: bool = False,
        brush: float | None = None,
        vsync: bool = True,
        started_at: float | None = None,
    ) -> None:
        self._t_start = time.perf_counter() if started_at is None else started_at
        self.startup_s: float | None = None
        self.canvas = Canvas() if brush is None else Canvas(brush=brush)
        self.drawings_dir = drawings_dir
        self.clf_backend, self.clf_kernel = classifier.backend, classifier.kernel
        self.backend, self.kernel = classifier.backend, classifier.kernel
        self.batch = batch
        self.warm = warm
        self.continuous = False
        self.gpu = native.cuda_status()
        self.backend_reasons = available_backends()
        # Kernel lists are read once, before the worker thread takes the classifier over.
        self.kernel_lists = {
            b: (classifier.kernels(b) if not reason else []) for b, reason in self.backend_reasons.items()
        }
        self.prediction: Prediction | None = None
        self.preview28 = np.zeros((28, 28), dtype=np.float32)
        self.history: list[Timing] = []
        self.error = ""
        self.message = ""
        self.frames = 0
        self.frame_times: list[float] = []  # seconds between frame starts
        self.work_times: list[float] = []  # seconds of our own work per frame (all but rendering)
        self._last_frame_start: float | None = None
        self._pointer: list[tuple[str, float, float]] = []
        self._mouse_down = False
        self._mouse_stroke = False
        self._submitted_version = -1
        self._submitted_config: tuple[str, str | None, int, bool] | None = None
        self._last_seq = 0
        self._quit = False
        self._shortcuts = _shortcuts()
        self._screenshot_buffer: Any = None

        self._model = classifier.model
        self.worker = InferenceWorker(classifier)
        dpg.create_context()
        dpg.configure_app(manual_callback_management=True)
        self.fonts = style.load_fonts()
        self._build()
        dpg.create_viewport(
            title="gemmpad — draw a digit",
            width=VIEWPORT[0],
            height=VIEWPORT[1],
            min_width=1120,
            min_height=700,
            vsync=vsync,
            clear_color=style.rgba(style.BG),
        )
        dpg.setup_dearpygui()
        dpg.show_viewport()
        dpg.set_primary_window(self._root, True)
        self._refresh_controls()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        h, w = self.canvas.size
        self._canvas_rgba = np.zeros((h, w, 4), dtype=np.float32)
        style.colourise(self.canvas.image, self._canvas_rgba)
        p = 28 * PREVIEW_SCALE
        self._preview_rgba = np.zeros((p, p, 4), dtype=np.float32)
        style.colourise(np.zeros((p, p), np.float32), self._preview_rgba)
        with dpg.texture_registry():
            self._canvas_tex = dpg.add_raw_texture(w, h, self._canvas_rgba, format=dpg.mvFormat_Float_rgba)
            self._preview_tex = dpg.add_raw_texture(p, p, self._preview_rgba, format=dpg.mvFormat_Float_rgba)

        self._accent_button = style.button_theme(style.ACCENT, style.ACCENT_HOVER)
        self._plain_button = style.button_theme(style.FRAME, style.FRAME_HOVER, style.TEXT)
        dpg.bind_theme(style.global_theme())

        with dpg.window(no_scrollbar=True) as self._root:
            with dpg.group(horizontal=True, horizontal_spacing=10):
                self._build_draw_panel()
                self._build_prediction_panel()
                self._build_engine_panel()
            with dpg.child_window(height=STATUS_H, border=False, no_scrollbar=True) as status:
                with dpg.table(header_row=False, policy=dpg.mvTable_SizingStretchProp):
                    dpg.add_table_column(init_width_or_weight=4.0)
                    dpg.add_table_column(init_width_or_weight=1.0)
                    with dpg.table_row():
                        with dpg.group(horizontal=True):
                            dpg.add_text("●", color=style.GOOD if self.gpu.available else style.WARM)
                            line = self._gpu_line()
                            short = line if len(line) <= STATUS_CHARS else line[: STATUS_CHARS - 1] + "…"
                            self._status_gpu = dpg.add_text(short)
                            if short != line:
                                with dpg.tooltip(self._status_gpu):
                                    dpg.add_text(line, wrap=600)
                            self._status_msg = dpg.add_text("", color=style.MUTED)
                        self._status_frame = dpg.add_text("", color=style.MUTED)
            dpg.bind_item_theme(status, style.panel_theme(style.PANEL))

    def _heading(self, text: str) -> None:
        t = dpg.add_text(text.upper(), color=style.MUTED)
        dpg.bind_item_font(t, self.fonts.heading)

    def _build_draw_panel(self) -> None:
        h, w = self.canvas.size
        with dpg.child_window(width=SIDE, height=-STATUS_H - 8, no_scrollbar=True):
            self._heading("Draw a digit")
            self._canvas_img = dpg.add_image(self._canvas_tex, width=w, height=h)
            # Shown over the empty canvas; placed once the layout is known (_place_hint).
            self._hint = dpg.add_text(HINT, color=style.MUTED, show=False)
            dpg.bind_item_font(self._hint, self.fonts.small)
            with dpg.group(horizontal=True):
                dpg.add_button(label="Clear", width=88, callback=lambda: self.clear())
                dpg.add_button(label="Undo", width=88, callback=lambda: self.undo())
            self._brush_slider = dpg.add_slider_float(
                label="brush",
                width=w - 48,
                min_value=BRUSH_RANGE[0],
                max_value=BRUSH_RANGE[1],
                default_value=self.canvas.brush,
                format="%.0f px",
                callback=lambda s, v: self.set_brush(float(v)),
            )
            dpg.add_spacer(height=2)
            self._heading("Save the drawing")
            with dpg.group(horizontal=True):
                self._label_combo = dpg.add_combo(
                    ["no label"] + [str(d) for d in range(10)], default_value="no label", width=100
                )
                with dpg.tooltip(self._label_combo):
                    dpg.add_text("With a true label the drawing is filed under\n"
                                 f"{self.drawings_dir}/<label>/ for fine-tuning later.")
                dpg.add_button(label="Save PNG", width=-1, callback=lambda: self.save())
            dpg.add_spacer(height=2)
            self._heading("Keys")
            helps = [s.help for s in self._shortcuts if s.help]
            with dpg.table(header_row=False, policy=dpg.mvTable_SizingFixedFit) as key_table:
                for _ in range(4):
                    dpg.add_table_column()
                for i in range(0, len(helps), 2):
                    with dpg.table_row():
                        for keys, what in helps[i : i + 2]:
                            dpg.bind_item_font(dpg.add_text(keys), self.fonts.small)
                            dpg.bind_item_font(dpg.add_text(what, color=style.MUTED), self.fonts.small)
            dpg.bind_item_theme(key_table, style.compact_theme())

    def _build_prediction_panel(self) -> None:
        with dpg.child_window(width=SIDE, height=-STATUS_H - 8, no_scrollbar=True):
            self._heading("Prediction")
            with dpg.group(horizontal=True, horizontal_spacing=18):
                with dpg.group():
                    self._digit_text = dpg.add_text("?", color=style.FRAME_ACTIVE)
                    dpg.bind_item_font(self._digit_text, self.fonts.digit)
                with dpg.group():
                    dpg.add_spacer(height=20)
                    self._conf_text = dpg.add_text("draw a digit")
                    dpg.bind_item_font(self._conf_text, self.fonts.figure)
                    self._conf_caption = dpg.add_text("", color=style.MUTED)
                    self._runner_text = dpg.add_text("", color=style.MUTED)
            with dpg.plot(height=150, width=-1, no_title=True, no_menus=True, no_box_select=True,
                          no_mouse_pos=True, no_inputs=True):
                x = dpg.add_plot_axis(dpg.mvXAxis, no_gridlines=True, no_tick_marks=True, no_menus=True)
                dpg.set_axis_limits(x, -0.6, 9.6)
                dpg.set_axis_ticks(x, tuple((str(i), float(i)) for i in range(10)))
                y = dpg.add_plot_axis(dpg.mvYAxis, no_tick_labels=True, no_tick_marks=True, no_menus=True)
                dpg.set_axis_limits(y, 0.0, 1.04)
                xs = [float(i) for i in range(10)]
                self._bars = dpg.add_bar_series(xs, [0.0] * 10, weight=0.68, parent=y)
                self._bar_top = dpg.add_bar_series([0.0], [0.0], weight=0.68, parent=y)
                dpg.bind_item_theme(self._bars, style.series_theme(dpg.mvBarSeries, style.BAR))
                dpg.bind_item_theme(self._bar_top, style.series_theme(dpg.mvBarSeries, style.ACCENT))
            self._heading("What the network sees")
            p = 28 * PREVIEW_SCALE
            with dpg.group(horizontal=True):
                dpg.add_spacer(width=(SIDE - 28 - p) // 2 - 4)
                self._preview_img = dpg.add_image(self._preview_tex, width=p, height=p)
            t = dpg.add_text("28 × 28 input: cropped, scaled into a 20 px box,\ncentred by mass (MNIST style)",
                             color=style.MUTED)
            dpg.bind_item_font(t, self.fonts.small)

    def _build_engine_panel(self) -> None:
        with dpg.child_window(width=-1, height=-STATUS_H - 8, no_scrollbar=True):
            self._heading("Engine")
            with dpg.group(horizontal=True):
                dpg.add_text("Model   ", color=style.MUTED)
                self._model_text = dpg.add_text(self._model_line())
            with dpg.group(horizontal=True):
                dpg.add_text("Backend", color=style.MUTED)
                dpg.add_spacer(width=6)
                self._backend_buttons: dict[str, int | str] = {}
                self._backend_tips: dict[str, int | str] = {}
                for b in ("numpy", "cpu", "cuda"):
                    if b not in self.backend_reasons:
                        continue
                    reason = self.backend_reasons[b]
                    btn = dpg.add_button(label=BACKEND_LABELS[b], width=82, enabled=not reason,
                                         callback=lambda s, a, u: self.set_backend(u), user_data=b)
                    with dpg.tooltip(btn) as tip:
                        self._backend_tips[b] = tip
                        dpg.add_text(f"{BACKEND_LABELS[b]} unavailable: {reason}" if reason else
                                     {"numpy": "NumPy reference (BLAS matmul)",
                                      "cpu": "C++ kernels on the CPU",
                                      "cuda": f"CUDA kernels on {self.gpu.device}"}[b], wrap=420)
                    self._backend_buttons[b] = btn
            with dpg.group(horizontal=True):
                dpg.add_text("Kernel  ", color=style.MUTED)
                self._kernel_combo = dpg.add_combo([], width=-1, callback=lambda s, v: self.set_kernel(str(v)))
            self._kernel_summary = dpg.add_text("", color=style.MUTED, wrap=0)
            dpg.bind_item_font(self._kernel_summary, self.fonts.small)
            with dpg.group(horizontal=True):
                dpg.add_text("Batch   ", color=style.MUTED)
                self._batch_combo = dpg.add_combo([str(b) for b in BATCHES], default_value=str(self.batch), width=90,
                                                  callback=lambda s, v: self.set_batch(int(v)))
                with dpg.tooltip(self._batch_combo):
                    dpg.add_text("Test-time augmentation: the drawing runs as B slightly shifted copies in one\n"
                                 "batch and their probabilities are averaged. Larger batches make the kernels'\n"
                                 "differences visible in the latency plot.")
                self._batch_caption = dpg.add_text("", color=style.MUTED)
            self._continuous_box = dpg.add_checkbox(
                label="Run every frame, not only when the drawing changes  (R)",
                callback=lambda s, v: self.set_continuous(bool(v)),
            )
            with dpg.tooltip(self._continuous_box):
                dpg.add_text("Keeps the latency plot moving and its median and p99 steady\n"
                             "while you compare kernels on the same drawing.")
            self._warm_box = dpg.add_checkbox(
                label=f"Warm timing: {WARMUP_PASSES} untimed passes before the timed one  (W)",
                default_value=self.warm,
                callback=lambda s, v: self.set_warm(bool(v)),
            )
            with dpg.tooltip(self._warm_box):
                dpg.add_text("One call per frame finds the caches cold, the clock low and the GPU idle after\n"
                             "the frame's wait, and can take 10-35x longer than the same call repeated.\n"
                             "Warm timing shows the steady state that `gemmpad bench` measures; off, you see\n"
                             "what an interactive app really waits. (Skipped for calls over 10 ms.)")
            dpg.add_spacer(height=4)
            self._heading("Latency per frame")
            with dpg.table(header_row=True, policy=dpg.mvTable_SizingStretchProp, borders_innerH=False,
                           borders_outerH=False, borders_innerV=False, borders_outerV=False):
                dpg.add_table_column(label="", init_width_or_weight=1.0)
                dpg.add_table_column(label="last", init_width_or_weight=1.3)
                dpg.add_table_column(label="median", init_width_or_weight=1.0)
                dpg.add_table_column(label="p99", init_width_or_weight=1.0)
                self._lat_cells: dict[str, list[int | str]] = {}
                for key, name, colour, meaning in (
                    ("kernel", "kernel", style.ACCENT,
                     "Compute only: CUDA events around the kernels on the GPU, the C++ steady clock\n"
                     "around the forward pass on the CPU, the three matmuls for NumPy."),
                    ("e2e", "end-to-end", style.WARM,
                     "Wall clock from the input array to probabilities in host memory: adds the\n"
                     "copies, launches and Python around the kernel. Batch 1 on a GPU is mostly this."),
                ):
                    with dpg.table_row():
                        label = dpg.add_text(f"● {name}", color=colour)
                        with dpg.tooltip(label):
                            dpg.add_text(meaning)
                        last = dpg.add_text("–")
                        dpg.bind_item_font(last, self.fonts.figure)
                        med = dpg.add_text("–")
                        p99 = dpg.add_text("–")
                        self._lat_cells[key] = [last, med, p99]
            with dpg.plot(height=-40, width=-1, no_title=True, no_menus=True, no_box_select=True,
                          no_mouse_pos=True, no_inputs=True):
                dpg.add_plot_legend(location=dpg.mvPlot_Location_North, horizontal=True, outside=True, no_buttons=True)
                self._lat_x = dpg.add_plot_axis(dpg.mvXAxis, label="frame", no_menus=True, no_gridlines=True)
                dpg.set_axis_limits(self._lat_x, 0, HISTORY)
                # Log scale: kernel and end-to-end time differ by up to 100x, the ladder by more,
                # and a one-off spike stays on the plot without flattening everything else.
                self._lat_y = dpg.add_plot_axis(dpg.mvYAxis, label="µs (log)", no_menus=True, scale=dpg.mvPlotScale_Log10)
                dpg.set_axis_limits(self._lat_y, 1.0, 1000.0)
                dpg.set_axis_ticks(self._lat_y, _log_ticks(1.0, 1000.0))
                self._line_kernel = dpg.add_line_series([], [], label="kernel", parent=self._lat_y)
                self._line_e2e = dpg.add_line_series([], [], label="end-to-end", parent=self._lat_y)
                dpg.bind_item_theme(self._line_kernel, style.series_theme(dpg.mvLineSeries, style.ACCENT))
                dpg.bind_item_theme(self._line_e2e, style.series_theme(dpg.mvLineSeries, style.WARM))
            self._lat_caption = dpg.add_text("", color=style.MUTED, wrap=0)
            dpg.bind_item_font(self._lat_caption, self.fonts.small)

    def _model_line(self) -> str:
        """The weights in use and what they scored (from the model card, when there is one)."""
        model = self._model
        name = model.path.name if model.path is not None else "weights given in memory"
        return "  ·  ".join([name, *model.scores()])

    def _gpu_line(self) -> str:
        if self.gpu.available:
            return f"GPU: {self.gpu.device}"
        return f"GPU unavailable: {self.gpu.reason}"

    # -------------------------------------------------------------- the frame
    def step(self) -> None:
        """One frame: input, canvas, inference hand-off, results, render."""
        now = time.perf_counter()
        if self._last_frame_start is not None:
            self.frame_times.append(now - self._last_frame_start)
            del self.frame_times[:-HISTORY]
        self._last_frame_start = now

        self._poll_mouse()
        self._poll_keys()
        queue = dpg.get_callback_queue()
        if queue:
            dpg.run_callbacks(queue)
        self._apply_pointer()
        self._submit()
        result = self.worker.take()
        if result is not None:
            self._apply(result)
        self._update_status()
        self._place_hint()
        self.work_times.append(time.perf_counter() - now)
        del self.work_times[:-HISTORY]
        dpg.render_dearpygui_frame()
        self.frames += 1
        if self.startup_s is None:
            self.startup_s = time.perf_counter() - self._t_start

    def _place_hint(self) -> None:
        show = self.canvas.empty
        if show and self.frames > 0:
            x, y = dpg.get_item_pos(self._canvas_img)
            w, h = dpg.get_item_rect_size(self._canvas_img)
            tw, th = dpg.get_text_size(HINT, font=self.fonts.small) or (0, 0)
            dpg.set_item_pos(self._hint, [int(x + (w - tw) / 2), int(y + (h - th) / 2)])
        dpg.configure_item(self._hint, show=show and self.frames > 0)

    def run(self) -> None:
        """The interactive loop, until the window is closed or Ctrl+Q."""
        while dpg.is_dearpygui_running() and not self._quit:
            self.step()

    def close(self) -> None:
        self.worker.close()
        dpg.destroy_context()

    # ------------------------------------------------------------------ input
    def feed(self, kind: str, x: float = 0.0, y: float = 0.0) -> None:
        """A pointer event in canvas pixels ("down", "move", "up"), applied next frame.

        The mouse goes through here too, so tests and --replay exercise the
        same path as a hand.
        """
        if kind not in ("down", "move", "up"):
            raise ValueError(f"pointer event must be down, move or up, got {kind!r}")
        self._pointer.append((kind, float(x), float(y)))

    def _poll_mouse(self) -> None:
        down = dpg.is_mouse_button_down(dpg.mvMouseButton_Left)
        mx, my = dpg.get_mouse_pos(local=False)
        x0, y0 = dpg.get_item_rect_min(self._canvas_img)
        w, h = dpg.get_item_rect_size(self._canvas_img)
        ch, cw = self.canvas.size
        cx, cy = (mx - x0) * cw / max(w, 1), (my - y0) * ch / max(h, 1)
        if down and not self._mouse_down:
            # A stroke starts only on the canvas (and not under an open popup).
            if dpg.is_item_hovered(self._canvas_img) and 0 <= cx < cw and 0 <= cy < ch:
                self.feed("down", cx, cy)
                self._mouse_stroke = True
        elif down and self._mouse_stroke:
            self.feed("move", cx, cy)
        elif not down and self._mouse_stroke:
            self.feed("up")
            self._mouse_stroke = False
        self._mouse_down = down

    def _poll_keys(self) -> None:
        ctrl = dpg.is_key_down(dpg.mvKey_LControl) or dpg.is_key_down(dpg.mvKey_RControl)
        shift = dpg.is_key_down(dpg.mvKey_LShift) or dpg.is_key_down(dpg.mvKey_RShift)
        for key in dict.fromkeys(s.key for s in self._shortcuts):  # each key once, in order
            if dpg.is_key_pressed(key):
                self.shortcut(key, ctrl=ctrl, shift=shift)

    def shortcut(self, key: int, ctrl: bool = False, shift: bool = False) -> bool:
        """Run the action bound to a key press; False if none is bound."""
        for s in self._shortcuts:
            if s.key == key and s.ctrl == ctrl and s.shift == shift:
                s.action(self)
                return True
        return False

    def _apply_pointer(self) -> None:
        events, self._pointer = self._pointer, []
        for kind, x, y in events:
            if kind == "down":
                self.canvas.press(x, y)
            elif kind == "move":
                self.canvas.move(x, y)
            else:
                self.canvas.release()
        if events:
            self._upload_canvas()

    def _upload_canvas(self) -> None:
        region = self.canvas.take_dirty()
        if region is None:
            return
        style.colourise(self.canvas.image[region], self._canvas_rgba[region])
        dpg.set_value(self._canvas_tex, self._canvas_rgba)

    # ---------------------------------------------------------------- actions
    def clear(self) -> None:
        self.canvas.clear()
        self._upload_canvas()

    def undo(self) -> None:
        if self.canvas.undo():
            self._upload_canvas()

    def set_brush(self, width: float) -> None:
        self.canvas.brush = width
        dpg.set_value(self._brush_slider, self.canvas.brush)

    def set_backend(self, backend: str) -> None:
        reason = self.backend_reasons.get(backend)
        if reason is None:
            raise ValueError(f"unknown backend {backend!r}")
        if reason:
            self.message = f"{BACKEND_LABELS[backend]} unavailable: {reason}"
            return
        if backend != self.backend:
            self.backend, self.kernel = backend, None  # the worker resolves the default
            self._refresh_controls()

    def set_kernel(self, kernel: str) -> None:
        if kernel not in self.kernel_lists.get(self.backend, []):
            raise ValueError(f"kernel {kernel!r} is not offered for backend {self.backend!r}")
        self.kernel = kernel
        self._refresh_controls()

    def set_batch(self, batch: int) -> None:
        if not 1 <= batch <= BATCHES[-1]:
            raise ValueError(f"batch must be in 1..{BATCHES[-1]}, got {batch}")
        self.batch = int(batch)
        self._refresh_controls()

    def set_continuous(self, on: bool) -> None:
        self.continuous = on
        dpg.set_value(self._continuous_box, on)

    def set_warm(self, on: bool) -> None:
        self.warm = on
        dpg.set_value(self._warm_box, on)

    def next_backend(self) -> None:
        usable = [b for b, r in self.backend_reasons.items() if not r]
        self.set_backend(usable[(usable.index(self.backend) + 1) % len(usable)])

    def next_kernel(self, step: int = 1) -> None:
        ks = self.kernel_lists[self.backend]
        cur = ks.index(self.kernel) if self.kernel in ks else len(ks) - 1
        self.set_kernel(ks[(cur + step) % len(ks)])

    def quit(self) -> None:
        self._quit = True

    def save(self, label: int | None = None) -> Path | None:
        """Write the drawing as a PNG (ink white on black, like MNIST) plus its strokes.

        Unlabelled drawings go to <drawings>/unlabelled/, labelled ones to
        <drawings>/<digit>/ (an ImageFolder layout, ready for fine-tuning).
        """
        if self.canvas.empty:
            self.message = "Nothing to save: the canvas is empty"
            return None
        if label is None:
            chosen = dpg.get_value(self._label_combo)
            label = int(chosen) if chosen.isdigit() else None
        folder = self.drawings_dir / (str(label) if label is not None else "unlabelled")
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")[:-3]
        png = folder / f"{stamp}.png"
        pixels = np.round(np.clip(self.canvas.image, 0.0, 1.0) * 255.0).astype(np.uint8)
        try:
            with atomic_path(png) as tmp:
                Image.fromarray(pixels, mode="L").save(tmp)
            strokes.save(png.with_suffix(".json"), self.canvas.strokes())
        except OSError as exc:  # a full disk or a folder we may not write: say so, keep the drawing
            self.error = f"Not saved: {exc}"
            return None
        self.message = f"Saved {png}"
        return png

    # ---------------------------------------------------- inference hand-off
    def _config(self) -> tuple[str, str | None, int, bool]:
        """What a request runs with; a change is a new request even for the same drawing."""
        return self.backend, self.kernel, self.batch, self.warm

    def _submit(self) -> None:
        config = self._config()
        changed = self.canvas.version != self._submitted_version or config != self._submitted_config
        if self.canvas.empty and self.canvas.version != self._submitted_version:
            # Just cleared: blank the reading now rather than after the worker's current job.
            self.prediction = None
            self._show_prediction()
        # An empty canvas is still sent on a change: the worker switches backend or
        # kernel and reports what it resolved, and classify() returns None cheaply.
        if changed or (self.continuous and not self.canvas.empty and not self.worker.busy):
            self._last_seq = self.worker.submit(self.canvas.image, self.backend, self.kernel, self.batch, self.warm)
            self._submitted_version, self._submitted_config = self.canvas.version, config

    def _apply(self, r: Result) -> None:
        self.error = r.error
        self.clf_backend, self.clf_kernel = r.backend, r.kernel
        if r.seq == self._last_seq and (self.kernel is None or r.error):
            # The worker resolved the default kernel, or refused a switch: show what really
            # runs. (Only for the newest request: an older one describes an older choice.)
            self.backend, self.kernel = r.backend, r.kernel
            self._submitted_config = self._config()
            self._refresh_controls()
        self.history = r.history
        self.prediction = None if self.canvas.empty else r.prediction
        self._show_prediction()
        self._show_latency()

    def _show_prediction(self) -> None:
        p = self.prediction
        if p is None:
            dpg.set_value(self._digit_text, "?")
            dpg.configure_item(self._digit_text, color=style.FRAME_ACTIVE)
            dpg.set_value(self._conf_text, "draw a digit")
            dpg.set_value(self._conf_caption, "")
            dpg.set_value(self._runner_text, "")
            dpg.set_value(self._bars, [[float(i) for i in range(10)], [0.0] * 10])
            dpg.set_value(self._bar_top, [[0.0], [0.0]])
            self.preview28 = np.zeros((28, 28), dtype=np.float32)
        else:
            probs = np.asarray(p.probs, dtype=np.float64)
            order = np.argsort(probs)[::-1]
            dpg.set_value(self._digit_text, str(p.digit))
            dpg.configure_item(self._digit_text, color=style.TEXT)
            dpg.set_value(self._conf_text, f"{100 * p.confidence:.1f} %")
            dpg.set_value(self._conf_caption, "confidence" + (f", mean of {p.timing.batch}" if p.timing.batch > 1 else ""))
            dpg.set_value(self._runner_text, f"runner-up {order[1]}  ({100 * probs[order[1]]:.1f} %)")
            dpg.set_value(self._bars, [[float(i) for i in range(10)], [float(v) for v in probs]])
            dpg.set_value(self._bar_top, [[float(p.digit)], [float(probs[p.digit])]])
            self.preview28 = np.asarray(p.image28, dtype=np.float32)
        # Colour the 784 inputs, then blow each up to an 8x8 block (nearest neighbour: crisp).
        small = np.empty((28, 28, 4), dtype=np.float32)
        style.colourise(self.preview28, small)
        s = PREVIEW_SCALE
        self._preview_rgba[:] = small.repeat(s, axis=0).repeat(s, axis=1)
        # A faint grid between the inputs, drawn on the last row/column of each block.
        self._preview_rgba[s - 1 :: s, :, :3] *= 0.8
        self._preview_rgba[:, s - 1 :: s, :3] *= 0.8
        dpg.set_value(self._preview_tex, self._preview_rgba)

    def latency_stats(self) -> dict[str, float]:
        """Median and p99 of kernel and end-to-end time over this configuration's frames."""
        return timing_stats(self.history) if self.history else {}

    def _show_latency(self) -> None:
        st = self.latency_stats()
        last = self.history[-1] if self.history else None
        rows = {
            "kernel": (last.kernel_us if last else None, st.get("kernel_median_us"), st.get("kernel_p99_us")),
            "e2e": (last.end_to_end_us if last else None, st.get("e2e_median_us"), st.get("e2e_p99_us")),
        }
        for key, values in rows.items():
            for cell, v in zip(self._lat_cells[key], values):
                dpg.set_value(cell, _fmt_us(v))
        xs = [float(i) for i in range(len(self.history))]
        dpg.set_value(self._line_kernel, [xs, [t.kernel_us for t in self.history]])
        dpg.set_value(self._line_e2e, [xs, [t.end_to_end_us for t in self.history]])
        dpg.set_axis_limits(self._lat_x, 0, max(HISTORY, len(xs)))
        if not self.history:
            dpg.set_axis_limits(self._lat_y, 1.0, 1000.0)
            dpg.set_axis_ticks(self._lat_y, _log_ticks(1.0, 1000.0))
        else:
            lo = min(min(t.kernel_us for t in self.history), min(t.end_to_end_us for t in self.history))
            hi = max(t.end_to_end_us for t in self.history)
            lo, hi = max(lo, 1e-3) / 1.6, max(hi, 1e-3) * 1.6
            dpg.set_axis_limits(self._lat_y, lo, hi)
            dpg.set_axis_ticks(self._lat_y, _log_ticks(lo, hi))
        dpg.set_value(
            self._lat_caption,
            f"{len(self.history)} frames of {self.clf_kernel} at batch {self.batch}{', warm' if self.warm else ''} "
            "(the plot restarts when the setting changes)",
        )

    def _refresh_controls(self) -> None:
        for b, btn in self._backend_buttons.items():
            dpg.bind_item_theme(btn, self._accent_button if b == self.backend else self._plain_button)
        ks = self.kernel_lists.get(self.backend, [])
        dpg.configure_item(self._kernel_combo, items=ks)
        dpg.set_value(self._kernel_combo, self.kernel or "")
        dpg.set_value(self._kernel_summary, _kernel_summary(self.kernel) if self.kernel else "")
        dpg.set_value(self._batch_combo, str(self.batch))
        dpg.set_value(self._batch_caption, "copy" if self.batch == 1 else f"jittered copies, averaged")

    def _update_status(self) -> None:
        note = self.error or self.message
        dpg.set_value(self._status_msg, f"   {note}" if note else "")
        dpg.configure_item(self._status_msg, color=style.BAD if self.error else style.MUTED)
        if self.frame_times:
            ft = 1e3 * float(np.median(self.frame_times[-60:]))
            dpg.set_value(self._status_frame, f"frame {ft:.1f} ms  ·  {1e3 / ft:.0f} fps")

    # --------------------------------------------------- scripted operation
    def replay(self, drawing: Sequence[np.ndarray], points_per_frame: int = 2) -> None:
        """Draw `drawing` through the pointer path, a few points per frame, like a hand."""
        for stroke in drawing:
            pts = np.asarray(stroke, dtype=np.float64).reshape(-1, 2)
            self.feed("down", *pts[0])
            for i, (x, y) in enumerate(pts[1:], start=1):
                self.feed("move", x, y)
                if i % points_per_frame == 0:
                    self.step()
            self.feed("up")
            self.step()

    def settle(self, timeout: float = 60.0) -> None:
        """Step until the worker has answered the newest drawing and the screen shows it."""
        deadline = time.perf_counter() + timeout
        self.step()  # submits whatever changed
        while not self.worker.wait_idle(0.02):
            if time.perf_counter() > deadline:
                raise TimeoutError(f"inference did not finish within {timeout} s")
            self.step()  # keep frames coming, as the interactive loop would
        for _ in range(1 + SETTLE_FRAMES):  # the first takes the last result, the rest reach the frame buffer
            self.step()

    def grab(self) -> np.ndarray:
        """The window as it is on screen: float32 RGB [H, W, 3] in [0, 1], top row first."""
        self._screenshot_buffer = None

        def deliver(sender: Any, data: Any) -> None:
            self._screenshot_buffer = data

        for _ in range(SETTLE_FRAMES):
            self.step()
        dpg.output_frame_buffer(callback=deliver)
        for _ in range(SETTLE_FRAMES + 5):
            self.step()  # runs the queued callback
            if self._screenshot_buffer is not None:
                break
        buf = self._screenshot_buffer
        if buf is None:
            raise RuntimeError("Dear PyGui did not deliver the frame buffer")
        w, h = buf.get_width(), buf.get_height()
        return np.frombuffer(buf, dtype=np.float32).reshape(h, w, 4)[..., :3].copy()

    def screenshot(self, path: str | Path) -> Path:
        """Write the window to a PNG (atomically); returns the path."""
        pixels = np.round(np.clip(self.grab(), 0.0, 1.0) * 255.0).astype(np.uint8)
        out = Path(path)
        with atomic_path(out) as tmp:
            Image.fromarray(pixels, mode="RGB").save(tmp)
        return out

    def rect(self, item: int | str) -> tuple[int, int, int, int]:
        """(x, y, width, height) of an item in window pixels, as in grab() and screenshots."""
        x, y = dpg.get_item_rect_min(item)
        w, h = dpg.get_item_rect_size(item)
        return int(x), int(y), int(w), int(h)

    def summary(self) -> dict[str, Any]:
        """The final state as JSON-ready data (printed by --replay/--exit)."""
        p = self.prediction
        ft = np.array(self.frame_times) * 1e3 if self.frame_times else np.array([np.nan])
        out: dict[str, Any] = {
            "digit": None if p is None else p.digit,
            "confidence": None if p is None else round(float(p.confidence), 6),
            "probs": None if p is None else [round(float(v), 6) for v in p.probs],
            "backend": self.clf_backend,
            "kernel": self.clf_kernel,
            "batch": self.batch,
            "warm": self.warm,
            "kernel_us": None if p is None else round(p.timing.kernel_us, 3),
            "end_to_end_us": None if p is None else round(p.timing.end_to_end_us, 3),
        }
        out.update({k: round(v, 3) for k, v in self.latency_stats().items()})
        out.update(
            {
                "strokes": len(self.canvas.strokes()),
                "frames": self.frames,
                "frame_ms_median": round(float(np.median(ft)), 3),
                "frame_ms_p99": round(float(np.percentile(ft, 99)), 3),
                "work_ms_median": round(1e3 * float(np.median(self.work_times or [np.nan])), 3),
                "startup_s": None if self.startup_s is None else round(self.startup_s, 3),
                "canvas_rect": list(self.rect(self._canvas_img)),
                "gpu": str(self.gpu),
                "error": self.error,
            }
        )
        return out
