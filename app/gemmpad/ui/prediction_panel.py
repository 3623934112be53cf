"""The prediction column: the digit read, how sure, the ten probabilities, the 28x28
input the network saw and the hidden layers. When the unsure detector (gemmpad.runtime.unsure)
says the drawing is not one digit, the big number gives way to "?" and a best guess."""

from __future__ import annotations

import math
from collections.abc import Callable

import dearpygui.dearpygui as dpg
import numpy as np

from gemmpad.runtime.classifier import HIDDEN_SECOND_PASS_MAX_US, Prediction
from gemmpad.ui import layout, style
from gemmpad.ui.draw_panel import heading, set_shown, tip
from gemmpad.ui.layout import Layout
from gemmpad.ui.style import Fonts
from gemmpad.ui.text import fmt_us, hidden_source

PREVIEW_SCALE = 8  # the 28x28 input drawn as 8x8 blocks: 224 px, crisp (nearest neighbour by hand)
# Below this confidence a reading is shown muted and called "not sure": a 47.5 % "4" drawn as
# big and bright as a 99.9 % one reads as an answer it is not
SURE = 0.8
BAR_LIMITS = (-0.6, 9.6)  # the bar chart's x range: digits 0..9 with a margin
# Each hidden layer's texture side: the shipped model's 100 units as a 10x10 map of 9x9 blocks
HIDDEN_PX = 90


def hidden_map(values: np.ndarray, out: np.ndarray) -> None:
    """Paint one hidden layer's activations into the square texture `out` [P, P, 4] as a grid of
    ceil(sqrt(n)) x ceil(sqrt(n)) square cells filled row by row, the cells past the last unit
    transparent. An imported network's layers may have any width from 1 to 4096 units (not only
    the shipped 100, a 10x10 map), and a padded cell must not pass for a silent unit."""
    v = np.asarray(values, np.float32).ravel()
    side = math.ceil(math.sqrt(v.size))
    cells = np.zeros((side * side, 4), np.float32)
    style.heat(v, cells[: v.size])
    at = np.arange(out.shape[0]) * side // out.shape[0]  # each pixel's cell (nearest neighbour: crisp)
    out[:] = cells.reshape(side, side, 4)[at][:, at]


class PredictionPanel:
    def __init__(self, fonts: Fonts, scale: float, unsure_note: str, *, on_bar_click: Callable[[int], None],
                 to_engine: Callable[[], None]) -> None:
        """`on_bar_click(digit)`: a probability bar was clicked (a correction); `to_engine`: the
        "Engine below" button (two columns: bring the engine panel into view)."""
        self.scale = scale
        self.on_bar_click = on_bar_click
        p = 28 * PREVIEW_SCALE
        self._preview_rgba = np.zeros((p, p, 4), dtype=np.float32)
        style.colourise(np.zeros((p, p), np.float32), self._preview_rgba)
        with dpg.texture_registry():
            self.preview_tex = dpg.add_raw_texture(p, p, self._preview_rgba, format=dpg.mvFormat_Float_rgba)
        # the 28x28 input the preview shows: show() sets it and paints the texture from it
        self.image28 = np.zeros((28, 28), dtype=np.float32)
        self.pending = False  # the reading shown is the previous drawing's (show_pending)
        self._shown: tuple[Prediction | None, bool | None] = (None, None)
        s = scale
        with dpg.child_window() as self.root:
            dpg.bind_item_theme(self.root, style.padded_theme(scale))
            # (a plot cannot hold a tooltip: the heading explains the bars)
            with dpg.group(horizontal=True, horizontal_spacing=round(12 * s)):
                tip(heading("Prediction", fonts), "The digit read, how sure, and the network's probability for "
                                                  "each digit (the highest in blue).")
                # In two columns the engine panel is below this one, out of sight: say so, and go there
                self.to_engine = dpg.add_button(label="Engine below ↓", small=True, show=False,
                                                callback=lambda: to_engine())
                tip(self.to_engine, "The engine panel (backend, kernel, latency, race) is below the prediction in "
                                    "this window size: scroll down, or click here.")
                set_shown(self.to_engine, False)  # (layout() shows it in two columns)
            with dpg.group(horizontal=True, horizontal_spacing=round(18 * s)):
                with dpg.group():
                    self.digit = dpg.add_text("?", color=style.FRAME_ACTIVE)
                    dpg.bind_item_font(self.digit, fonts.digit)
                with dpg.group():
                    dpg.add_spacer(height=round(20 * s))
                    self.conf = dpg.add_text("draw a digit")
                    dpg.bind_item_font(self.conf, fonts.figure)
                    self.caption = dpg.add_text("", color=style.MUTED)
                    self.runner = dpg.add_text("", color=style.MUTED)
            self._digit_tip = tip(self.digit, self._digit_text(unsure_note))
            with dpg.plot(height=round(layout.BARS_H * s), width=-1, no_title=True, no_menus=True, no_box_select=True,
                          no_mouse_pos=True, no_inputs=True) as self.bars_plot:
                x = dpg.add_plot_axis(dpg.mvXAxis, no_gridlines=True, no_tick_marks=True, no_menus=True)
                dpg.set_axis_limits(x, *BAR_LIMITS)
                dpg.set_axis_ticks(x, tuple((str(i), float(i)) for i in range(10)))
                y = dpg.add_plot_axis(dpg.mvYAxis, no_tick_labels=True, no_tick_marks=True, no_menus=True)
                dpg.set_axis_limits(y, 0.0, 1.04)
                xs = [float(i) for i in range(10)]
                self.bars = dpg.add_bar_series(xs, [0.0] * 10, weight=0.68, parent=y)
                self.bar_top = dpg.add_bar_series([0.0], [0.0], weight=0.68, parent=y)
                dpg.bind_item_theme(self.bars, style.series_theme(dpg.mvBarSeries, style.BAR))
                dpg.bind_item_theme(self.bar_top, style.series_theme(dpg.mvBarSeries, style.ACCENT))
            with dpg.item_handler_registry() as handlers:
                dpg.add_item_clicked_handler(dpg.mvMouseButton_Left, callback=lambda: self._clicked())
            dpg.bind_item_handler_registry(self.bars_plot, handlers)
            # The input and, beside it, the two hidden layers stacked: one block whose size the
            # layout sets from the height left (layout.pictures), so all of it shows at once.
            tip(heading("What the network sees", fonts),
                "Left: the 784 inputs, the drawing cropped, scaled into a 20 px box and centred by mass, as "
                "MNIST digits are. Right: the two hidden layers' units after ReLU (the shipped model's 100 + 100 "
                "as 10 x 10 maps; other widths as near-square grids, row by row), bright = strongly "
                "active (each map scaled to its own maximum). Per-layer times show where the kernel runs the "
                "network layer by layer and reports them (the CPU's GEMM kernels).")
            hp = HIDDEN_PX
            self._hidden_rgba = [np.zeros((hp, hp, 4), dtype=np.float32) for _ in range(2)]
            with dpg.texture_registry():
                self.hidden_tex = [dpg.add_raw_texture(hp, hp, rgba, format=dpg.mvFormat_Float_rgba)
                                   for rgba in self._hidden_rgba]
            with dpg.group(horizontal=True, horizontal_spacing=round(layout.HIDDEN_GAP * s)):
                self.preview = dpg.add_image(self.preview_tex, width=p, height=p)
                tip(self.preview, "The 784 inputs: the drawing cropped, scaled into a 20 px box and centred by "
                                  "mass, as MNIST digits are (28 x 28).")
                with dpg.group():
                    self.hidden_img = []
                    for i, tex in enumerate(self.hidden_tex):
                        label = dpg.add_text(f"hidden {i + 1}", color=style.MUTED)
                        dpg.bind_item_font(label, fonts.small)
                        self.hidden_img.append(dpg.add_image(tex, width=hp, height=hp))
            # which kernel wrote the maps and what that cost (issue 42: they were NumPy's recomputation)
            self.source_text = dpg.add_text("", color=style.MUTED, wrap=0)
            self._small = fonts.small
            dpg.bind_item_font(self.source_text, fonts.small)
            tip(self.source_text, "The hidden layers shown are the selected kernel's own activations: after the "
                                  "timed pass, one more pass of the same kernel writes h1 and h2 out, and the extra "
                                  "end-to-end time it takes is their cost (the latency figures stay the plain "
                                  f"pass's). Where a pass takes over {fmt_us(HIDDEN_SECOND_PASS_MAX_US)}, the timed "
                                  "pass writes them itself and the cost is not measured.")
            self.layer_text = dpg.add_text("", color=style.MUTED, wrap=0)
            dpg.bind_item_font(self.layer_text, fonts.small)
            self.show_hidden(None, ())

    def layout(self, L: Layout) -> None:
        set_shown(self.to_engine, L.mode == "two")
        # never a scrollbar: the picture block is sized to fit (layout.pictures)
        dpg.configure_item(self.root, width=L.prediction_w, height=L.right_h if L.mode == "wide" else 0,
                           auto_resize_y=L.mode != "wide", no_scrollbar=True)
        dpg.configure_item(self.preview, width=L.preview, height=L.preview)
        dpg.configure_item(self.bars_plot, height=L.bars)  # (in one column, what fits the window's height)
        for img in self.hidden_img:
            dpg.configure_item(img, width=L.hidden, height=L.hidden)
        for t in (self.source_text, self.layer_text):
            dpg.configure_item(t, wrap=L.prediction_w - 2 * round(layout.INNER * self.scale))

    def show_hidden(self, hidden: tuple[np.ndarray, np.ndarray] | None, layer_us: tuple[float, ...],
                    kernel: str = "", hidden_us: float = float("nan")) -> None:
        """The hidden activations as heat maps, the kernel that wrote them and what writing them cost
        (`hidden_us`, NaN: not measured), and the per-layer times when there are some."""
        for rgba, tex, i in zip(self._hidden_rgba, self.hidden_tex, range(2)):
            hidden_map(np.zeros(1, np.float32) if hidden is None else hidden[i], rgba)
            dpg.set_value(tex, rgba)
        dpg.set_value(self.source_text, self._source(kernel, hidden_us, bool(layer_us))
                      if hidden is not None and kernel else "")
        if layer_us:
            total = sum(layer_us)
            parts = "  ·  ".join(f"L{i + 1} {fmt_us(t)}" for i, t in enumerate(layer_us))
            dpg.set_value(self.layer_text, f"per layer: {parts}" + (f"  (L1 {100 * layer_us[0] / total:.0f} %)" if total > 0 else ""))
        else:  # (which kernels report them: the block heading's tooltip)
            dpg.set_value(self.layer_text, "")

    def _source(self, kernel: str, hidden_us: float, one_line: bool) -> str:
        """hidden_source, in the room the layout gives the lines under the maps (three): with
        per-layer times (two lines) on one line, its short form where the long one would wrap."""
        text = hidden_source(kernel, hidden_us)
        if not one_line:
            return text
        room = dpg.get_item_configuration(self.source_text)["wrap"]
        size = dpg.get_text_size(text, font=self._small)
        return hidden_source(kernel, hidden_us, short=True) if room > 0 and size and size[0] > room else text

    def digit_at(self, mx: float) -> int | None:
        """The digit whose bar is under window x-coordinate `mx` (None between bars)."""
        x0 = dpg.get_item_rect_min(self.bars_plot)[0]
        w = dpg.get_item_rect_size(self.bars_plot)[0]
        pad = 6 * self.scale  # the plot's padding (style.global_theme's PlotPadding)
        lo, hi = BAR_LIMITS
        v = lo + (mx - x0 - pad) / max(w - 2 * pad, 1) * (hi - lo)
        d = round(v)
        return d if 0 <= d <= 9 and abs(v - d) <= 0.34 else None

    def _clicked(self) -> None:
        d = self.digit_at(dpg.get_mouse_pos(local=False)[0])
        if d is not None:
            self.on_bar_click(d)

    def show_pending(self, pending: bool) -> None:
        """Mark the reading shown as the previous drawing's while the new one is read (a slow rung
        at a large batch takes seconds: the canvas showed the new stroke, the bars the old reading,
        unmarked); unmarked again by the next show()."""
        if pending == self.pending:
            return
        self.pending = pending
        if pending:
            dpg.configure_item(self.digit, color=style.FRAME_ACTIVE)
            dpg.set_value(self.caption, "reading your new strokes…")
            dpg.configure_item(self.caption, color=style.WARM)
        else:
            self.show(*self._shown)

    @staticmethod
    def _digit_text(unsure_note: str) -> str:
        return ("The digit with the highest probability (the mean over the batch's copies), or ? when the drawing "
                f"does not look like one digit. {unsure_note}")

    def show_unsure_note(self, unsure_note: str) -> None:
        """What the digit's tooltip says of the unsure detector, for a new model (Learn, Reset)."""
        dpg.set_value(self._digit_tip, self._digit_text(unsure_note))

    def show(self, p: Prediction | None, unsure: bool | None = None) -> None:
        """A reading (None: nothing drawn); `unsure` True shows it as a guess, not an answer."""
        self._shown, self.pending = (p, unsure), False
        dpg.configure_item(self.caption, color=style.MUTED)
        if p is None:
            dpg.set_value(self.digit, "?")
            dpg.configure_item(self.digit, color=style.FRAME_ACTIVE)
            dpg.set_value(self.conf, "draw a digit")
            dpg.set_value(self.caption, "")
            dpg.set_value(self.runner, "")
            dpg.set_value(self.bars, [[float(i) for i in range(10)], [0.0] * 10])
            dpg.set_value(self.bar_top, [[0.0], [0.0]])
            self.image28 = np.zeros((28, 28), dtype=np.float32)
        else:
            probs = np.asarray(p.probs, dtype=np.float64)
            order = np.argsort(probs)[::-1]
            if unsure:
                dpg.set_value(self.digit, "?")
                dpg.configure_item(self.digit, color=style.WARM)
                dpg.set_value(self.conf, "unsure")
                dpg.set_value(self.caption, "not like one digit")
                dpg.set_value(self.runner, f"best guess {p.digit}  ({100 * p.confidence:.1f} %)")
            else:
                hesitant = p.confidence < SURE
                dpg.set_value(self.digit, str(p.digit))
                dpg.configure_item(self.digit, color=style.MUTED if hesitant else style.TEXT)
                dpg.set_value(self.conf, f"{100 * p.confidence:.1f} %")
                dpg.set_value(self.caption, "not sure: between two digits" if hesitant else "confidence")
                dpg.set_value(self.runner, f"runner-up {order[1]}  ({100 * probs[order[1]]:.1f} %)")
            dpg.set_value(self.bars, [[float(i) for i in range(10)], [float(v) for v in probs]])
            dpg.set_value(self.bar_top, [[float(p.digit)], [float(probs[p.digit])]])
            self.image28 = np.asarray(p.image28, dtype=np.float32)
        # Colour the 784 inputs, then blow each up to an 8x8 block (nearest neighbour: crisp).
        small = np.empty((28, 28, 4), dtype=np.float32)
        style.colourise(self.image28, small)
        s = PREVIEW_SCALE
        self._preview_rgba[:] = small.repeat(s, axis=0).repeat(s, axis=1)
        # A faint grid between the inputs, drawn on the last row/column of each block.
        self._preview_rgba[s - 1 :: s, :, :3] *= 0.8
        self._preview_rgba[:, s - 1 :: s, :3] *= 0.8
        dpg.set_value(self.preview_tex, self._preview_rgba)
