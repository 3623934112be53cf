"""The drawing column: the canvas (shown at any size, drawn at 280x280), its brush ring,
Clear / Undo / Redo, the brush size and saving with a label."""

from __future__ import annotations

import dearpygui.dearpygui as dpg
import numpy as np

from gemmpad.runtime.classifier import Prediction
from gemmpad.ui import style
from gemmpad.ui.actions import Actions
from gemmpad.ui.canvas import BRUSH_RANGE, Canvas
from gemmpad.ui.layout import Layout
from gemmpad.ui.style import Fonts

HINT = "draw here with the mouse or a pen"
NO_LABEL = "no label"


def heading(text: str, fonts: Fonts) -> int | str:
    t = dpg.add_text(text.upper(), color=style.MUTED)
    dpg.bind_item_font(t, fonts.heading)
    return t


_TOOLTIPS: dict[int | str, int | str] = {}  # item -> its tooltip (tip), for set_shown()


def tip(item: int | str, text: str, wrap: int = 420) -> int | str:
    """A tooltip on `item`: every control says what it does when hovered. Returns its text item
    (for a tooltip whose words change: dpg.set_value)."""
    with dpg.tooltip(item) as tooltip:
        _TOOLTIPS[item] = tooltip
        return dpg.add_text(text, wrap=wrap)


def set_shown(item: int | str, shown: bool) -> None:
    """Show or hide `item` with its tooltip: Dear PyGui draws a tooltip when the item drawn last is
    hovered, so a hidden button's tooltip popped up over the text before it ("Use it anyway" over the
    Learn section's hint)."""
    dpg.configure_item(item, show=shown)
    if item in _TOOLTIPS:
        dpg.configure_item(_TOOLTIPS[item], show=shown)


class DrawPanel:
    def __init__(self, canvas: Canvas, fonts: Fonts, scale: float, drawings_dir: str,
                 actions: Actions) -> None:
        self.canvas, self.fonts, self.scale = canvas, fonts, scale
        h, w = canvas.size
        self._rgba = np.zeros((h, w, 4), dtype=np.float32)
        style.colourise(canvas.image, self._rgba)
        with dpg.texture_registry():
            self.texture = dpg.add_raw_texture(w, h, self._rgba, format=dpg.mvFormat_Float_rgba)
        s = scale
        self._one = False  # the one-column layout: the reading replaces the heading
        with dpg.child_window(no_scrollbar=True) as self.root:
            dpg.bind_item_theme(self.root, style.padded_theme(scale))
            with dpg.group(horizontal=True):
                self.heading = heading("Draw a digit", fonts)
                # In one column the prediction panel is below the fold: the reading shows here instead
                # of the heading (beside it, it did not fit at scale 2).
                self.reading = dpg.add_text("", color=style.TEXT, show=False)
                self._reading_text = ""
            self.image = dpg.add_image(self.texture, width=w, height=h)
            # Shown over the empty canvas; placed once the layout is known (place_hint).
            self.hint = dpg.add_text(HINT, color=style.MUTED, show=False)
            dpg.bind_item_font(self.hint, fonts.small)
            with dpg.group(horizontal=True) as self.buttons:
                self.clear_btn = dpg.add_button(label="Clear", callback=lambda: actions.clear())
                tip(self.clear_btn, "Wipe the canvas (C). Undo brings the drawing back.")
                self.undo_btn = dpg.add_button(label="Undo", callback=lambda: actions.undo())
                tip(self.undo_btn, "Take back the last stroke or clear (Ctrl+Z).")
                self.redo_btn = dpg.add_button(label="Redo", callback=lambda: actions.redo())
                tip(self.redo_btn, "Do again what Undo took back (Ctrl+Shift+Z or Ctrl+Y).")
                self.help_btn = dpg.add_button(label="?", width=round(30 * s), callback=lambda: actions.help(None))
                tip(self.help_btn, "What the panels show, what the times mean, every key (? or F1).")
            self.brush = dpg.add_slider_float(
                label="brush", min_value=BRUSH_RANGE[0], max_value=BRUSH_RANGE[1], default_value=canvas.brush,
                format="%.0f px", callback=lambda sender, v: actions.brush(float(v)),
            )
            tip(self.brush, "Brush diameter in canvas pixels ([ and ] change it); the ring under the "
                            "pointer shows it. 18 px is what the training drawings use.")
            with dpg.group(horizontal=True):
                self.label = dpg.add_combo([NO_LABEL] + [str(d) for d in range(10)], default_value=NO_LABEL,
                                           width=round(96 * s))
                tip(self.label, "The true digit, for this drawing only: a labelled drawing is filed under "
                                f"{drawings_dir}/<label>/ for fine-tuning later; the choice resets after each "
                                "save and on Clear. Ctrl+0…9 saves under that digit at once.")
                self.save_btn = dpg.add_button(label="Save PNG", width=-1, callback=lambda: actions.save(None))
                tip(self.save_btn, "Write the drawing (PNG, ink white on black like MNIST) and its strokes "
                                   "(JSON, replayable with --replay) (Ctrl+S).")
        # The brush ring: drawn over everything, where the pointer is, when it is over the canvas.
        with dpg.viewport_drawlist(front=True):
            self.ring = dpg.draw_circle((0, 0), 1, color=(*style.ACCENT, 200), thickness=1.5 * s, show=False)

    def layout(self, L: Layout) -> None:
        s = self.scale
        self._one = L.mode == "one"
        self._show_heading()
        dpg.configure_item(self.root, width=L.draw_w, height=L.draw_h)
        dpg.configure_item(self.image, width=L.canvas, height=L.canvas)
        content = L.draw_w - 2 * round(12 * s)  # the panel's padding (style.padded_theme)
        bw = (content - round(30 * s) - 3 * round(8 * s)) // 3
        for b in (self.clear_btn, self.undo_btn, self.redo_btn):
            dpg.configure_item(b, width=bw)
        label_w = (dpg.get_text_size("brush") or (40, 0))[0] + round(8 * s)
        dpg.configure_item(self.brush, width=content - label_w)

    def show_reading(self, p: Prediction | None, unsure: bool | None = None) -> None:
        """The reading in the heading ("reads 3 · 99.2 %"), for the one-column layout."""
        text = "" if p is None else (f"reads ? (best guess {p.digit})" if unsure
                                     else f"reads {p.digit}  ·  {100 * p.confidence:.1f} %")
        self._reading_text = text
        dpg.set_value(self.reading, text)
        dpg.configure_item(self.reading, color=style.TEXT)
        self._show_heading()

    def show_pending(self, pending: bool) -> None:
        """The heading's reading marked as the previous drawing's while the new one is read."""
        text = f"{self._reading_text}  ·  reading…" if pending and self._reading_text else self._reading_text
        if text != dpg.get_value(self.reading):
            dpg.set_value(self.reading, text)
            dpg.configure_item(self.reading, color=style.MUTED if pending else style.TEXT)

    def _show_heading(self) -> None:
        reading = self._one and bool(dpg.get_value(self.reading))
        dpg.configure_item(self.reading, show=reading)
        dpg.configure_item(self.heading, show=not reading)

    def upload(self) -> None:
        """Recolour what changed on the canvas and send it to the GPU texture."""
        region = self.canvas.take_dirty()
        if region is None:
            return
        style.colourise(self.canvas.image[region], self._rgba[region])
        dpg.set_value(self.texture, self._rgba)

    def to_canvas(self, mx: float, my: float) -> tuple[float, float]:
        """Window pixels -> canvas pixels."""
        x0, y0 = dpg.get_item_rect_min(self.image)
        w, h = dpg.get_item_rect_size(self.image)
        ch, cw = self.canvas.size
        return (mx - x0) * cw / max(w, 1), (my - y0) * ch / max(h, 1)

    def show_ring(self, mx: float, my: float, over: bool) -> None:
        """The brush's size as a ring under the pointer while it is over the canvas."""
        if over:
            w = dpg.get_item_rect_size(self.image)[0]
            r = self.canvas.brush / 2 * w / self.canvas.size[1]
            dpg.configure_item(self.ring, center=(mx, my), radius=max(r, 1.0), show=True)
        else:
            dpg.configure_item(self.ring, show=False)

    def place_hint(self, show: bool) -> None:
        if show:
            x, y = dpg.get_item_pos(self.image)
            w, h = dpg.get_item_rect_size(self.image)
            # wrapped to the canvas: one line was wider than a 178 px canvas
            wrap = max(w - round(16 * self.scale), 1)
            dpg.configure_item(self.hint, wrap=wrap)
            tw, th = dpg.get_text_size(HINT, wrap_width=wrap, font=self.fonts.small) or (0, 0)
            dpg.set_item_pos(self.hint, [int(x + (w - tw) / 2), int(y + (h - th) / 2)])
        dpg.configure_item(self.hint, show=show)

    def chosen_label(self) -> int | None:
        v = dpg.get_value(self.label)
        return int(v) if v.isdigit() else None

    def reset_label(self) -> None:
        dpg.set_value(self.label, NO_LABEL)
