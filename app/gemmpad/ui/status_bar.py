"""The status bar: the GPU line, a transient message, and the frame rate, each in its own
column so none runs into another.

A message (saved, refused, ...) shows for MESSAGE_S seconds, cut with "…" to the room it
has (the whole text in its tooltip); an error stays until the next action clears it.
"""

from __future__ import annotations

import time

import dearpygui.dearpygui as dpg

from gemmpad.ui import style

MESSAGE_S = 6.0


def fit(text: str, width: float, font: int | str | None = None) -> str:
    """`text`, cut at the end with "…" so that it is no wider than `width` pixels."""
    size = dpg.get_text_size(text, font=font) if font is not None else dpg.get_text_size(text)
    if not text or size is None or size[0] <= width:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits with the ellipsis
        mid = (lo + hi + 1) // 2
        w = (dpg.get_text_size(text[:mid] + "…", font=font) if font is not None else dpg.get_text_size(text[:mid] + "…"))[0]
        lo, hi = (mid, hi) if w <= width else (lo, mid - 1)
    return text[:lo] + "…"


class StatusBar:
    def __init__(self, gpu_ok: bool, gpu_line: str, scale: float) -> None:
        self.scale = scale
        self._gpu_full = gpu_line
        self._msg_full = ""
        self._msg_error = False
        self._msg_until = 0.0
        with dpg.child_window(height=round(34 * scale), border=False, no_scrollbar=True) as self.root:
            with dpg.group(horizontal=True):
                dpg.add_text("●", color=style.GOOD if gpu_ok else style.WARM)
                self.gpu = dpg.add_text(gpu_line)
                with dpg.tooltip(self.gpu):
                    dpg.add_text(gpu_line, wrap=round(600 * scale))
                self.msg = dpg.add_text("", color=style.MUTED)
                with dpg.tooltip(self.msg) as self._msg_tip:
                    self._msg_tip_text = dpg.add_text("", wrap=round(600 * scale))
            self.frame = dpg.add_text("", color=style.MUTED)  # placed at the right edge by update()
        dpg.bind_item_theme(self.root, style.panel_theme(style.PANEL, scale))

    def say(self, text: str, error: bool = False) -> None:
        """Show a message (errors in red) for MESSAGE_S seconds (errors until replaced)."""
        self._msg_full, self._msg_error = text, error
        self._msg_until = float("inf") if error else time.monotonic() + MESSAGE_S

    def clear_error(self) -> None:
        """Take an error down once its cause is gone (messages expire on their own)."""
        if self._msg_error:
            self._msg_full, self._msg_error, self._msg_until = "", False, 0.0

    @property
    def message(self) -> str:
        """The message on show now ("" once it expired)."""
        return self._msg_full if time.monotonic() < self._msg_until else ""

    def update(self, width: int, frame_ms: float | None) -> None:
        """Lay the three texts out in a window `width` pixels wide and refresh them: the
        frame rate at the right edge, the GPU line and the message cut to the room left."""
        s = self.scale
        frame_text = f"frame {frame_ms:.1f} ms  ·  {1e3 / frame_ms:.0f} fps" if frame_ms else ""
        dpg.set_value(self.frame, frame_text)
        frame_w = (dpg.get_text_size(frame_text) or (0, 0))[0] if frame_text else 0
        local_x = max(width - 2 * round(14 * s) - round(12 * s) - frame_w, 0)  # the window's and the bar's padding
        dpg.set_item_pos(self.frame, [local_x, round(5 * s)])
        frame_x = round(14 * s) + local_x  # in window pixels, like the rects below
        gpu_x = dpg.get_item_rect_min(self.gpu)[0]
        room = frame_x - gpu_x - round(16 * s)
        msg = self.message
        dpg.set_value(self.gpu, fit(self._gpu_full, room * (0.45 if msg else 1.0)))
        gpu_w = (dpg.get_text_size(dpg.get_value(self.gpu)) or (0, 0))[0]
        space_w = round(8 * s)  # the group's item spacing
        dpg.set_value(self.msg, fit(f"   {msg}", room - gpu_w - space_w) if msg else "")
        dpg.set_value(self._msg_tip_text, msg)
        dpg.configure_item(self._msg_tip, show=bool(msg))
        dpg.configure_item(self.msg, color=style.BAD if self._msg_error else style.MUTED)
