"""The engine column: model, backend, kernel, batch, timing mode; below, in tabs, the
latency of every frame (table and plot), the race of every kernel and the lab (lab_panel:
the selected kernel's roofline and anatomy).

The kernel menu lists the whole ladder, whatever this machine runs: the kernels of every
usable backend to pick, the rest greyed under the reason they cannot run here, each with
its source file and committed benchmark figure, so a student on a laptop can still read
and compare the rungs."""

from __future__ import annotations

from dataclasses import dataclass

import dearpygui.dearpygui as dpg

from gemmpad.runtime import backends, registry
from gemmpad.runtime.classifier import timing_stats
from gemmpad.runtime.native import CudaStatus
from gemmpad.ui import style
from gemmpad.ui.actions import Actions
from gemmpad.ui.draw_panel import heading, tip
from gemmpad.ui.workers.inference import HISTORY, WARMUP_PASSES
from gemmpad.ui.lab_panel import LabPanel
from gemmpad.ui.layout import Layout
from gemmpad.ui.race_panel import RacePanel
from gemmpad.ui.state import State
from gemmpad.ui.style import Fonts
from gemmpad.ui.text import fmt_us, frames_caption, kernel_summary, log_ticks

BACKEND_LABELS = {b.name: b.label for b in backends.BACKENDS}
BATCHES = tuple(2**i for i in range(13))  # 1 ... 4096 copies of the drawing
SUMMARY_LINES = 2  # the kernel's description always takes this many lines (the rows below stay put)
FEW_FRAMES = 20  # up to this many frames on the latency plot, each point is drawn as a dot
LATENCY_PLOT_H = 220  # when the column is not as tall as the window


@dataclass(frozen=True)
class MenuRow:
    """One kernel in the menu: picked when `backend` is set, greyed when it is ""."""

    name: str
    backend: str
    precision: str
    source: str
    figures: str  # the committed figures ("H100 677.8, H200 694.9 TFLOP/s at 4096x4096x4096"), or ""
    about: str  # the tooltip: summary, every committed figure


def figures_line(figures: list[registry.Figure]) -> str:
    """The committed figures in one short line: one unit and shape said once where they agree."""
    if not figures:
        return ""
    alike = {(f.rate()[1], f.shape) for f in figures}
    if len(alike) > 1:
        return "; ".join(f.short() for f in figures)
    unit, shape = alike.pop()
    return ", ".join(f"{f.where} {f.rate()[0]:.1f}" for f in figures) + f" {unit} at {'x'.join(map(str, shape))}"


def kernel_menu(lists: dict[str, list[str]]) -> list[tuple[str, list[MenuRow]]]:
    """The menu's sections, (heading, rows): each usable backend's kernels in its order, then
    every other registered kernel under the reason it cannot run here (one section a reason)."""
    specs = {s.name: s for s in registry.kernels()}
    offered = {name for names in lists.values() for name in names}

    def row(name: str, backend: str) -> MenuRow:
        spec = specs.get(name)
        if spec is None:  # "numpy": a backend, not a registered kernel
            return MenuRow(name, backend, "fp32", "", "", "NumPy's matmul (BLAS) in Python: the reference.")
        figures = registry.figures(name)
        about = "\n".join([spec.summary, *(f"Measured: {f}" for f in figures)])
        return MenuRow(name, backend, spec.precision, spec.source, figures_line(figures), about)

    sections = [(BACKEND_LABELS[b], [row(n, b) for n in names]) for b, names in lists.items() if names]
    greyed: dict[str, list[MenuRow]] = {}
    for spec in specs.values():
        if spec.name not in offered:
            reason = spec.unavailable_reason or "not offered on this backend"
            greyed.setdefault(f"Cannot run here: {reason}", []).append(row(spec.name, ""))
    return sections + list(greyed.items())


class EnginePanel:
    def __init__(self, fonts: Fonts, scale: float, model_line: str, gpu: CudaStatus,
                 backend_reasons: dict[str, str], kernel_lists: dict[str, list[str]], state: State,
                 actions: Actions) -> None:
        self.fonts, self.scale = fonts, scale
        self.state = state  # read, never written: the window is its one writer
        self._actions = actions
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
                # two lines always (show_model): a line that wrapped to two pushed every row below down
                self.model_text = dpg.add_text(model_line, wrap=-1)
                with dpg.tooltip(self.model_text):
                    self.model_tip = dpg.add_text(model_line, wrap=round(420 * s))
                self._model_w = round(300 * s)
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
                                         callback=lambda sender, a, u: actions.backend(u), user_data=b)
                    where = f" ({gpu.device})" if b == "cuda" and gpu.device else ""
                    with dpg.tooltip(btn) as t:
                        self.backend_tips[b] = t
                        dpg.add_text(f"{BACKEND_LABELS[b]} unavailable: {reason}" if reason else
                                     f"{backends.BY_NAME[b].summary}{where} (B cycles backends)", wrap=round(420 * s))
                    self.backend_buttons[b] = btn
            with dpg.group(horizontal=True):
                dpg.add_text("Kernel", color=style.MUTED)
                dpg.add_spacer(width=label_w - (dpg.get_text_size("Kernel") or (40, 0))[0])
                # A button that opens a menu, not a combo: a combo's items cannot be greyed one by one.
                self.kernel_button = dpg.add_button(label="", width=-1)
                dpg.bind_item_theme(self.kernel_button, style.menu_button_theme())
                tip(self.kernel_button, "The kernel the forward pass runs on: GEMM rungs run the network layer "
                                       "by layer, mlp_ kernels all of it in one call (K / Shift+K step through). "
                                       "The menu lists every kernel; those this machine cannot run are greyed, "
                                       "with the reason, their source file and a committed benchmark figure.")
                self.kernel_menu, self.menu_items = self._build_menu(kernel_lists)
            line_h = (dpg.get_text_size("Ag", font=fonts.small) or (0, 13 * s))[1] + round(3 * s)
            with dpg.child_window(height=round(SUMMARY_LINES * line_h + 2), border=False, no_scrollbar=True) as box:
                self.summary = dpg.add_text("", color=style.MUTED, wrap=0)
                dpg.bind_item_font(self.summary, fonts.small)
                with dpg.tooltip(self.summary):
                    self.summary_tip = dpg.add_text("", wrap=round(420 * s))
            dpg.bind_item_theme(box, style.flush_theme())
            self._summary_full, self._summary_w = "", round(300 * s)
            with dpg.group(horizontal=True):
                dpg.add_text("Batch", color=style.MUTED)
                dpg.add_spacer(width=label_w - (dpg.get_text_size("Batch") or (40, 0))[0])
                self.batch_combo = dpg.add_combo([str(b) for b in BATCHES], width=round(90 * s),
                                                 callback=lambda sender, v: actions.batch(int(v)))
                tip(self.batch_combo, "A speed knob: the drawing runs as B identical copies in one call, so the "
                                      "answer never changes and the work grows B times. Larger batches make the "
                                      "kernels' differences visible in the latency plot (+ and − double and halve).")
                self.batch_caption = dpg.add_text("", color=style.MUTED)
            self.continuous_box = dpg.add_checkbox(label="Run every frame  (R)",
                                                   callback=lambda sender, v: actions.continuous(bool(v)))
            tip(self.continuous_box, "Run the network every frame, not only when the drawing changes: keeps "
                                     "the latency plot moving and its median and p99 steady while you compare "
                                     "kernels on the same drawing.")
            self.warm_box = dpg.add_checkbox(label=f"Warm timing: {WARMUP_PASSES} untimed passes first  (W)",
                                             default_value=state.warm, callback=lambda sender, v: actions.warm(bool(v)))
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
                        # (plain lines, and with dots while there are few frames: show_latency)
                        self._line_themes = {few: (style.series_theme(dpg.mvLineSeries, style.ACCENT, markers=few),
                                                   style.series_theme(dpg.mvLineSeries, style.WARM, markers=few))
                                             for few in (False, True)}
                        self._few = False
                        for line, theme in zip((self.line_kernel, self.line_e2e), self._line_themes[False]):
                            dpg.bind_item_theme(line, theme)
                    self.caption = dpg.add_text("", color=style.MUTED, wrap=0)
                    tip(self.caption, f"The plot: kernel and end-to-end time of the last {HISTORY} frames, log scale.")
                    dpg.bind_item_font(self.caption, fonts.small)
                with dpg.tab(label="Race") as self.race_tab:
                    self.race = RacePanel(fonts, scale, actions)
                with dpg.tab(label="Lab") as self.lab_tab:
                    # its own scrolling region: the roofline and two tables are taller than the tab
                    with dpg.child_window(border=False, height=-1) as self.lab_region:
                        rungs = ["numpy"] + [k.name for k in registry.kernels()]
                        self.lab = LabPanel(fonts, scale, rungs, actions.lab_rung)
                    dpg.bind_item_theme(self.lab_region, style.flush_theme())
                tip(self.latency_tab, "Kernel and end-to-end time of each frame's forward pass on the setting above.")
                tip(self.race_tab, "Every kernel this machine runs, timed on your drawing at the current batch, "
                                   "cold and warm, side by side (G starts and cancels).")
                tip(self.lab_tab, "Why this kernel is as fast as it is: a roofline of its FLOP/s against the bytes it "
                                  "must move, beside the device's ceilings and the other rungs, and its anatomy "
                                  "(tiles, threads, registers, shared memory, occupancy).")
        self.show_latency()

    def _build_menu(self, lists: dict[str, list[str]]) -> tuple[int | str, dict[str, int | str]]:
        """The kernel menu's popup and its selectables by kernel name (greyed: enabled=False)."""
        s = self.scale
        items: dict[str, int | str] = {}
        with dpg.popup(self.kernel_button, mousebutton=dpg.mvMouseButton_Left,
                       max_size=[round(1000 * s), round(620 * s)]) as menu:
            for heading_text, rows in kernel_menu(lists):
                dpg.add_text(heading_text, color=style.MUTED if rows[0].backend else style.WARM, wrap=round(800 * s))
                # one table a section, its columns fixed: the sections line up with each other
                with dpg.table(header_row=False, policy=dpg.mvTable_SizingFixedFit, borders_innerH=False,
                               borders_outerH=False, borders_innerV=False, borders_outerV=False):
                    for width in (210, 44, 270, 330):
                        dpg.add_table_column(width_fixed=True, init_width_or_weight=round(width * s))
                    for r in rows:
                        with dpg.table_row():
                            sel = dpg.add_selectable(label=r.name, span_columns=True, enabled=bool(r.backend),
                                                     callback=self._picked, user_data=r.name)
                            for text in (r.precision, r.source, r.figures):
                                dpg.bind_item_font(dpg.add_text(text, color=style.MUTED), self.fonts.small)
                        tip(sel, r.about)
                        items[r.name] = sel
                dpg.add_spacer(height=round(4 * s))
        dpg.bind_item_theme(menu, style.menu_theme())
        return menu, items

    def _picked(self, sender: int | str, value: object, name: str) -> None:
        dpg.configure_item(self.kernel_menu, show=False)
        self._actions.kernel(name)

    def layout(self, L: Layout) -> None:
        wide = L.mode == "wide"
        dpg.configure_item(self.root, width=L.engine_w, height=L.right_h if wide else 0,
                           auto_resize_y=not wide, no_scrollbar=not wide)
        dpg.configure_item(self.plot, height=round(-44 * self.scale) if wide else round(LATENCY_PLOT_H * self.scale))
        content = L.engine_w - 2 * round(12 * self.scale)  # the panel's padding (style.padded_theme)
        dpg.configure_item(self.summary, wrap=content)
        self._summary_w = content
        self._fit_summary()
        dpg.configure_item(self.caption, wrap=content)
        self._model_w = content - round(64 * self.scale) - round(8 * self.scale)
        self.race.layout(content)
        # wide: the region fills the panel's height and scrolls; stacked, the window scrolls instead
        dpg.configure_item(self.lab_region, height=-1 if wide else 0, auto_resize_y=not wide)
        self.lab.layout(content - (round(16 * self.scale) if wide else 0))  # (its scrollbar)

    def show_model(self, line: str) -> None:
        """The model line in exactly two lines of the panel, broken between its "  ·  " parts
        (ImGui's wrap broke "99.07" after the dot), the second cut with "…" when too long and
        empty when not needed, so the rows below never move; the whole of it in the tooltip."""
        dpg.set_value(self.model_tip, f"The weights in use and their accuracy (from the model card): {line}")

        def width(text: str) -> float:
            return (dpg.get_text_size(text) or (0, 0))[0]

        sep = "  ·  "
        lines = [""]
        for part in line.split(sep):
            joined = f"{lines[-1]}{sep}{part}" if lines[-1] else part
            if width(joined) <= self._model_w or not lines[-1] or len(lines) == 2:
                lines[-1] = joined
            else:
                lines.append(part)
        for i, text in enumerate(lines):
            if width(text) > self._model_w:
                while text and width(text + "…") > self._model_w:
                    text = text[:-1]
                lines[i] = text.rstrip() + "…"
        dpg.set_value(self.model_text, "\n".join(lines) if len(lines) == 2 else f"{lines[0]}\n ")

    def _fit_summary(self) -> None:
        """The kernel's description in its SUMMARY_LINES lines, cut with "…" where longer (the third
        line of cpu.01_naive's was clipped mid-sentence: "agrees with fp32 on"), whole in the tooltip."""
        text, font = self._summary_full, self.fonts.small
        dpg.set_value(self.summary_tip, text)

        def height(t: str) -> float:
            return (dpg.get_text_size(t, wrap_width=self._summary_w, font=font) or (0, 0))[1]

        limit = height("\n".join(["Ag"] * SUMMARY_LINES))
        if not text or not limit or height(text) <= limit:  # (sizes are known from the first frame on)
            dpg.set_value(self.summary, text)
            return
        lo, hi = 0, len(text)  # the longest cut that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if height(text[:mid].rstrip() + "…") <= limit:
                lo = mid
            else:
                hi = mid - 1
        # at the end of a part (parts are joined by two spaces: a figure is never cut from its unit,
        # "100.00…" read as a number), else at a word
        cut = text[:lo]
        part, word = cut.rfind("  "), cut.rfind(" ")
        cut = cut[:part] if part > len(cut) // 2 else cut[:word] if word > 0 else cut
        dpg.set_value(self.summary, cut.rstrip(" ,;") + " …")

    def show_controls(self) -> None:
        """The choice: backend, kernel (and its summary), batch."""
        backend, kernel, batch = self.state.backend, self.state.kernel, self.state.batch
        for b, btn in self.backend_buttons.items():
            dpg.bind_item_theme(btn, self._accent if b == backend else self._plain)
        dpg.configure_item(self.kernel_button, label=kernel or "")
        for name, sel in self.menu_items.items():
            dpg.set_value(sel, name == kernel)
        self._summary_full = kernel_summary(kernel) if kernel else ""
        self._fit_summary()
        dpg.set_value(self.batch_combo, str(batch))
        dpg.set_value(self.batch_caption, "copy" if batch == 1 else "copies: same answer, more work")

    def show_latency(self) -> None:
        """The newest reading's frames: table, plot and caption."""
        history, kernel = self.state.reading.history, self.state.reading.kernel
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
        dpg.set_axis_limits(self.x_axis, -HISTORY // 100, max(HISTORY, len(xs)))  # a dot at frame 0 whole
        few = len(history) <= FEW_FRAMES  # a one-frame line is a point: invisible without a dot
        if few != self._few:
            self._few = few
            for line, theme in zip((self.line_kernel, self.line_e2e), self._line_themes[few]):
                dpg.bind_item_theme(line, theme)
        if history:
            lo = min(min(t.kernel_us for t in history), min(t.end_to_end_us for t in history))
            hi = max(t.end_to_end_us for t in history)
            lo, hi = max(lo, 1e-3) / 1.6, max(hi, 1e-3) * 1.6
        else:
            lo, hi = 1.0, 1000.0
        dpg.set_axis_limits(self.y_axis, lo, hi)
        dpg.set_axis_ticks(self.y_axis, log_ticks(lo, hi))
        dpg.set_value(self.caption, frames_caption(len(history), kernel, self.state.batch, self.state.warm)
                      if kernel else "")
