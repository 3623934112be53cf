"""The engine column: model, backend, kernel, batch, timing mode; below, in tabs, the
latency of every frame (table and plot) and the race of every kernel."""

from __future__ import annotations

from collections.abc import Callable

import dearpygui.dearpygui as dpg

from gemmpad import backends
from gemmpad.engine import Timing, timing_stats
from gemmpad.native import CudaStatus
from gemmpad.ui import style
from gemmpad.ui.draw_panel import heading, tip
from gemmpad.ui.inference import HISTORY, WARMUP_PASSES
from gemmpad.ui.layout import Layout
from gemmpad.ui.race_panel import RacePanel
from gemmpad.ui.style import Fonts
from gemmpad.ui.text import fmt_us, frames_caption, kernel_summary, log_ticks

BACKEND_LABELS = {b.name: b.label for b in backends.BACKENDS}
BATCHES = tuple(2**i for i in range(13))  # 1 ... 4096 copies of the drawing
SUMMARY_LINES = 2  # the kernel's description always takes this many lines (the rows below stay put)
LATENCY_PLOT_H = 220  # when the column is not as tall as the window


class EnginePanel:
    def __init__(self, fonts: Fonts, scale: float, model_line: str, gpu: CudaStatus,
                 backend_reasons: dict[str, str], warm: bool, actions: dict[str, Callable[..., object]]) -> None:
        self.fonts, self.scale = fonts, scale
        self._accent = style.button_theme(style.ACCENT, style.ACCENT_HOVER)
        self._plain = style.button_theme(style.FRAME, style.FRAME_HOVER, style.TEXT)
        s = scale
        label_w = round(64 * s)
        with dpg.child_window() as self.root:
            dpg.bind_item_theme(self.root, style.padded_theme(scale))
            heading("Engine", fonts)
            with dpg.group(horizontal=True):
                dpg.add_text("Model", color=style.MUTED)
                dpg.add_spacer(width=label_w - (dpg.get_text_size("Model") or (40, 0))[0])
                self.model_text = dpg.add_text(model_line, wrap=0)
                tip(self.model_text, "The weights in use and their accuracy (from the model card).")
            with dpg.group(horizontal=True):
                dpg.add_text("Backend", color=style.MUTED)
                dpg.add_spacer(width=label_w - (dpg.get_text_size("Backend") or (40, 0))[0])
                self.backend_buttons: dict[str, int | str] = {}
                self.backend_tips: dict[str, int | str] = {}
                for b in backends.NAMES:
                    if b not in backend_reasons:
                        continue
                    reason = backend_reasons[b]
                    btn = dpg.add_button(label=BACKEND_LABELS[b], width=round(78 * s), enabled=not reason,
                                         callback=lambda sender, a, u: actions["backend"](u), user_data=b)
                    where = f" ({gpu.device})" if b == "cuda" and gpu.device else ""
                    with dpg.tooltip(btn) as t:
                        self.backend_tips[b] = t
                        dpg.add_text(f"{BACKEND_LABELS[b]} unavailable: {reason}" if reason else
                                     f"{backends.BY_NAME[b].summary}{where} (B cycles backends)", wrap=round(420 * s))
                    self.backend_buttons[b] = btn
            with dpg.group(horizontal=True):
                dpg.add_text("Kernel", color=style.MUTED)
                dpg.add_spacer(width=label_w - (dpg.get_text_size("Kernel") or (40, 0))[0])
                self.kernel_combo = dpg.add_combo([], width=-1, callback=lambda sender, v: actions["kernel"](str(v)))
                tip(self.kernel_combo, "The kernel the forward pass runs on: GEMM rungs run the network layer "
                                       "by layer, mlp_ kernels all of it in one call (K / Shift+K step through).")
            line_h = (dpg.get_text_size("Ag", font=fonts.small) or (0, 13 * s))[1] + round(3 * s)
            with dpg.child_window(height=round(SUMMARY_LINES * line_h + 2), border=False, no_scrollbar=True) as box:
                self.summary = dpg.add_text("", color=style.MUTED, wrap=0)
                dpg.bind_item_font(self.summary, fonts.small)
            dpg.bind_item_theme(box, style.flush_theme())
            with dpg.group(horizontal=True):
                dpg.add_text("Batch", color=style.MUTED)
                dpg.add_spacer(width=label_w - (dpg.get_text_size("Batch") or (40, 0))[0])
                self.batch_combo = dpg.add_combo([str(b) for b in BATCHES], width=round(90 * s),
                                                 callback=lambda sender, v: actions["batch"](int(v)))
                tip(self.batch_combo, "Test-time augmentation: the drawing runs as B slightly shifted copies in "
                                      "one batch and their probabilities are averaged. Larger batches make the "
                                      "kernels' differences visible in the latency plot (+ and − double and halve).")
                self.batch_caption = dpg.add_text("", color=style.MUTED)
            self.continuous_box = dpg.add_checkbox(label="Run every frame  (R)",
                                                   callback=lambda sender, v: actions["continuous"](bool(v)))
            tip(self.continuous_box, "Run the network every frame, not only when the drawing changes: keeps "
                                     "the latency plot moving and its median and p99 steady while you compare "
                                     "kernels on the same drawing.")
            self.warm_box = dpg.add_checkbox(label=f"Warm timing: {WARMUP_PASSES} untimed passes first  (W)",
                                             default_value=warm, callback=lambda sender, v: actions["warm"](bool(v)))
            tip(self.warm_box, "One call per frame finds the caches cold, the clock low and the GPU idle after the "
                               "frame's wait, and can take 10-35x longer than the same call repeated. Warm timing "
                               "shows the steady state that `gemmpad bench` measures; off, you see what an "
                               "interactive app really waits. (Skipped for calls over 10 ms.)")
            dpg.add_spacer(height=round(4 * s))
            with dpg.tab_bar() as self.tabs:
                with dpg.tab(label="Latency per frame") as self.latency_tab:
                    with dpg.table(header_row=True, policy=dpg.mvTable_SizingStretchProp, borders_innerH=False,
                                   borders_outerH=False, borders_innerV=False, borders_outerV=False):
                        dpg.add_table_column(label="", init_width_or_weight=1.2)
                        dpg.add_table_column(label="last", init_width_or_weight=1.3)
                        dpg.add_table_column(label="median", init_width_or_weight=1.0)
                        dpg.add_table_column(label="p99", init_width_or_weight=1.0)
                        self.cells: dict[str, list[int | str]] = {}
                        for key, name, colour, meaning in (
                            ("kernel", "kernel", style.ACCENT,
                             "Compute only: CUDA events around the kernels on the GPU, the C++ steady clock around the "
                             "forward pass on the CPU, the three matmuls for NumPy."),
                            ("e2e", "end-to-end", style.WARM,
                             "Wall clock from the input array to probabilities in host memory: adds the copies, launches "
                             "and Python around the kernel. Batch 1 on a GPU is mostly this."),
                        ):
                            with dpg.table_row():
                                label = dpg.add_text(f"● {name}", color=colour)
                                tip(label, meaning)
                                last = dpg.add_text("–")
                                dpg.bind_item_font(last, fonts.figure)
                                med = dpg.add_text("–")
                                p99 = dpg.add_text("–")
                                self.cells[key] = [last, med, p99]
                    with dpg.plot(height=-40, width=-1, no_title=True, no_menus=True, no_box_select=True,
                                  no_mouse_pos=True, no_inputs=True) as self.plot:
                        dpg.add_plot_legend(location=dpg.mvPlot_Location_North, horizontal=True, outside=True, no_buttons=True)
                        self.x_axis = dpg.add_plot_axis(dpg.mvXAxis, label="frame", no_menus=True, no_gridlines=True)
                        dpg.set_axis_limits(self.x_axis, 0, HISTORY)
                        # Log scale: kernel and end-to-end time differ by up to 100x, the ladder by more,
                        # and a one-off spike stays on the plot without flattening everything else.
                        self.y_axis = dpg.add_plot_axis(dpg.mvYAxis, label="time (log)", no_menus=True, scale=dpg.mvPlotScale_Log10)
                        self.line_kernel = dpg.add_line_series([], [], label="kernel", parent=self.y_axis)
                        self.line_e2e = dpg.add_line_series([], [], label="end-to-end", parent=self.y_axis)
                        dpg.bind_item_theme(self.line_kernel, style.series_theme(dpg.mvLineSeries, style.ACCENT))
                        dpg.bind_item_theme(self.line_e2e, style.series_theme(dpg.mvLineSeries, style.WARM))
                    self.caption = dpg.add_text("", color=style.MUTED, wrap=0)
                    tip(self.caption, f"The plot: kernel and end-to-end time of the last {HISTORY} frames, log scale.")
                    dpg.bind_item_font(self.caption, fonts.small)
                with dpg.tab(label="Race") as self.race_tab:
                    self.race = RacePanel(fonts, scale, actions)
                tip(self.latency_tab, "Kernel and end-to-end time of each frame's forward pass on the setting above.")
                tip(self.race_tab, "Every kernel this machine runs, timed on your drawing at the current batch, "
                                   "cold and warm, side by side (G starts and cancels).")
        self.show_latency([], "", 1, warm)

    def layout(self, L: Layout) -> None:
        wide = L.mode == "wide"
        dpg.configure_item(self.root, width=L.engine_w, height=L.right_h if wide else 0,
                           auto_resize_y=not wide, no_scrollbar=not wide)
        dpg.configure_item(self.plot, height=round(-44 * self.scale) if wide else round(LATENCY_PLOT_H * self.scale))
        content = L.engine_w - 2 * round(12 * self.scale)  # the panel's padding (style.padded_theme)
        dpg.configure_item(self.summary, wrap=content)
        dpg.configure_item(self.caption, wrap=content)
        dpg.configure_item(self.model_text, wrap=content - round(64 * self.scale) - round(8 * self.scale))
        self.race.layout(content)

    def show_controls(self, backend: str, kernel: str | None, kernels: list[str], batch: int) -> None:
        for b, btn in self.backend_buttons.items():
            dpg.bind_item_theme(btn, self._accent if b == backend else self._plain)
        dpg.configure_item(self.kernel_combo, items=kernels)
        dpg.set_value(self.kernel_combo, kernel or "")
        summary = kernel_summary(kernel) if kernel else ""
        dpg.set_value(self.summary, summary)
        dpg.set_value(self.batch_combo, str(batch))
        dpg.set_value(self.batch_caption, "copy" if batch == 1 else "copies: same answer, more work")

    def show_latency(self, history: list[Timing], kernel: str, batch: int, warm: bool) -> None:
        st = timing_stats(history) if history else {}
        last = history[-1] if history else None
        rows = {
            "kernel": (last.kernel_us if last else None, st.get("kernel_median_us"), st.get("kernel_p99_us")),
            "e2e": (last.end_to_end_us if last else None, st.get("e2e_median_us"), st.get("e2e_p99_us")),
        }
        for key, values in rows.items():
            for cell, v in zip(self.cells[key], values):
                dpg.set_value(cell, fmt_us(v))
        xs = [float(i) for i in range(len(history))]
        dpg.set_value(self.line_kernel, [xs, [t.kernel_us for t in history]])
        dpg.set_value(self.line_e2e, [xs, [t.end_to_end_us for t in history]])
        dpg.set_axis_limits(self.x_axis, 0, max(HISTORY, len(xs)))
        if history:
            lo = min(min(t.kernel_us for t in history), min(t.end_to_end_us for t in history))
            hi = max(t.end_to_end_us for t in history)
            lo, hi = max(lo, 1e-3) / 1.6, max(hi, 1e-3) * 1.6
        else:
            lo, hi = 1.0, 1000.0
        dpg.set_axis_limits(self.y_axis, lo, hi)
        dpg.set_axis_ticks(self.y_axis, log_ticks(lo, hi))
        dpg.set_value(self.caption, frames_caption(len(history), kernel, batch, warm) if kernel else "")
