"""The race's chart: one row per kernel, kernel time and end-to-end time as bars on a log
scale (they differ by 1000x across the ladder), the fastest marked, cold or warm."""

from __future__ import annotations

import dearpygui.dearpygui as dpg
import numpy as np

from gemmpad.ui import style
from gemmpad.ui.actions import Actions
from gemmpad.ui.draw_panel import tip
from gemmpad.ui.workers.race import Lap, Race, fastest
from gemmpad.ui.style import Fonts
from gemmpad.ui.text import fmt_us

MEASURES = ("Cold: medians of a few calls a frame apart, each made as the window makes a frame's (the drawing "
            "prepared, then one pass), so they compare with the Latency tab's median. Warm: back to back after "
            "untimed passes, as gemmpad bench measures.")
ROW_H = 34  # two bars and a gap, unscaled
NAME_W = 150


class RacePanel:
    def __init__(self, fonts: Fonts, scale: float, actions: Actions) -> None:
        self.fonts, self.scale = fonts, scale
        self._drawn: tuple[object, ...] | None = None
        self._width = 300
        s = scale
        with dpg.group(horizontal=True):
            self.button = dpg.add_button(label="Race every kernel  (G)", callback=lambda: actions.race())
            tip(self.button, "Run the current drawing through every kernel this machine can run, at the current "
                             "batch: a few cold calls a frame apart, then warm calls back to back. Drawing goes "
                             "on meanwhile; press again (or G) to cancel.")
            self.mode = dpg.add_radio_button(["cold", "warm"], default_value="cold", horizontal=True,
                                             callback=lambda: self._redraw_soon())
            tip(self.mode, "Cold: one call after a frame's pause, as the window calls it. Warm: back to back "
                           "after untimed passes, as `gemmpad bench` measures.")
        self.status = dpg.add_text("Draw a digit, then race the kernels on it.", color=style.MUTED, wrap=0)
        dpg.bind_item_font(self.status, fonts.small)
        self.chart = dpg.add_drawlist(width=self._width, height=round(40 * s))
        # the race's figures beside the Latency tab's (they differed, 75-190 µs against 43, unexplained)
        self.note = dpg.add_text(MEASURES, color=style.MUTED, wrap=0)
        dpg.bind_item_font(self.note, fonts.small)

    @property
    def warm(self) -> bool:
        return dpg.get_value(self.mode) == "warm"

    def _redraw_soon(self) -> None:
        self._drawn = None

    def layout(self, width: int) -> None:
        self._width = max(width, round(200 * self.scale))
        dpg.configure_item(self.status, wrap=self._width)
        dpg.configure_item(self.note, wrap=self._width)
        self._drawn = None

    def show(self, race: Race | None) -> None:
        """Refresh the button, the status line and (when something changed) the chart."""
        running = race is not None and race.running
        dpg.configure_item(self.button, label="Cancel race  (G)" if running else "Race every kernel  (G)")
        if race is None:
            return
        laps = race.laps
        n = len(race.entrants)
        if running:
            status = f"racing {len(laps) + 1}/{n}: {race.current or '…'} at batch {race.batch}"
        elif race.cancelled:
            status = f"cancelled after {len(laps)} of {n} kernels (batch {race.batch})"
        else:
            status = f"{n} kernels at batch {race.batch}, medians; the fastest end to end in green"
        dpg.set_value(self.status, status)
        key = (len(laps), self.warm, self._width, race)
        if key != self._drawn:
            self._draw(laps, self.warm)
            self._drawn = key

    def _draw(self, laps: list[Lap], warm: bool) -> None:
        s = self.scale
        row_h, name_w = round(ROW_H * s), round(NAME_W * s)
        bar_h = round(11 * s)
        value_w = round(130 * s)  # the figure and "fastest"
        bar_w = max(self._width - name_w - value_w, round(40 * s))
        height = max(len(laps), 1) * row_h + round(22 * s)
        dpg.delete_item(self.chart, children_only=True)
        dpg.configure_item(self.chart, width=self._width, height=height)
        times = [t for lap in laps for t in lap.times(warm) if np.isfinite(t) and t > 0]
        if not times:
            return
        lo, hi = min(times) / 1.5, max(times) * 1.5
        span = np.log10(hi / lo)
        best = fastest(laps, warm)
        font_h = round(13 * s)
        # legend
        dpg.draw_rectangle((0, 4 * s), (10 * s, 14 * s), fill=style.rgba(style.ACCENT), color=style.rgba(style.ACCENT),
                           parent=self.chart)
        dpg.draw_text((14 * s, 2 * s), "kernel", size=font_h, color=style.rgba(style.MUTED), parent=self.chart)
        dpg.draw_rectangle((70 * s, 4 * s), (80 * s, 14 * s), fill=style.rgba(style.WARM), color=style.rgba(style.WARM),
                           parent=self.chart)
        dpg.draw_text((84 * s, 2 * s), "end-to-end (log scale)", size=font_h, color=style.rgba(style.MUTED),
                      parent=self.chart)
        for i, lap in enumerate(laps):
            y = round(22 * s) + i * row_h
            is_best = lap is best
            dpg.draw_text((0, y + 2 * s), lap.kernel, size=font_h, color=style.rgba(style.GOOD if is_best else style.TEXT),
                          parent=self.chart)
            if lap.error:
                dpg.draw_text((name_w, y + 2 * s), lap.error[:60], size=font_h, color=style.rgba(style.BAD),
                              parent=self.chart)
                continue
            for j, (t, colour) in enumerate(zip(lap.times(warm), (style.ACCENT, style.WARM))):
                if not np.isfinite(t):
                    continue
                yb = y + j * (bar_h + 2 * s)
                length = max(bar_w * np.log10(t / lo) / span, 2.0)
                dpg.draw_rectangle((name_w, yb), (name_w + length, yb + bar_h), fill=style.rgba(colour),
                                   color=style.rgba(colour), parent=self.chart)
                label = fmt_us(t) + ("   fastest" if is_best and j == 1 else "")
                dpg.draw_text((name_w + length + 4 * s, yb - 1 * s), label, size=round(12 * s),
                              color=style.rgba(style.GOOD if is_best and j == 1 else style.MUTED), parent=self.chart)
