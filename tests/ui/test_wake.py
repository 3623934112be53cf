"""An idle window wakes for a click however short, and the click draws (issue 42).

The idle loop sleeps between heartbeats; it polled the X server at 120 Hz, so a press
and release between two looks went unseen until the next heartbeat (~1 s, up to 2 s
with the frame after it), and the canvas read only "is the button down now", so a
click that had already ended drew nothing at all.
"""

from __future__ import annotations

import threading
import time

import pytest

from gemmpad.ui import harness, window
from tests.ui.support import real_input

HEARTBEAT_S = 100.0  # idle frames this far apart: only input can wake the window within the test


@pytest.mark.parametrize("hold_s", [0.0, 0.005])
def test_a_short_click_on_an_idle_window_draws_at_once(app: object, hold_s: float,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import dearpygui.dearpygui as dpg

    monkeypatch.setattr(window, "IDLE_FPS_WATCHED", 1 / HEARTBEAT_S)
    monkeypatch.setattr(window, "IDLE_FPS_BLIND", 1 / HEARTBEAT_S)
    x, y, w, h = harness.rect(app.draw.image)
    vx, vy = dpg.get_viewport_pos()
    xt = real_input()
    pressed: list[float] = []
    outcome: dict[str, object] = {}

    def click() -> None:
        try:
            xt.move(int(vx + x + w // 2), int(vy + y + h // 2))
            give_up = time.perf_counter() + 5.0
            while not app.idle or time.perf_counter() < give_up - 4.0:  # idle, and asleep a while
                time.sleep(0.05)
            pressed.append(app.frames)
            xt.button(True)
            time.sleep(hold_s)
            xt.button(False)
            while app.canvas.empty and time.perf_counter() < give_up:
                time.sleep(0.005)
            outcome["frames"] = app.frames - pressed[0]
            outcome["drawn"] = not app.canvas.empty
        finally:
            app.quit()

    driver = threading.Thread(target=click, daemon=True)
    driver.start()
    try:
        app.run()
    finally:
        driver.join(10)
        app._quit = False
        xt.close()
    # drawn: the click woke the window long before its heartbeat, and the press that had
    # ended by the frame still made a dot; within the frame that reads the events and the next
    assert outcome.get("drawn"), outcome
    assert outcome["frames"] <= 2, outcome
