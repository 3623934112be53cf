"""The keyboard map: one table drives the key handling, the help overlay and the tooltips.

A plain digit key says the drawing is that digit (a correction, learn_panel); Ctrl+digit
saves the drawing under that label.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import dearpygui.dearpygui as dpg

from gemmpad.ui.actions import Actions
from gemmpad.ui.canvas import Canvas
from gemmpad.ui.state import State

BATCH_MAX = 4096


@dataclass(frozen=True)
class Shortcut:
    key: int
    ctrl: bool
    shift: bool
    action: Callable[[], object]
    help: tuple[str, str] | None  # (keys, what) for the help overlay; None for aliases


def key_equal() -> int:
    """The "= +" key. Dear PyGui 2.3's mvKey_Plus is 61, a stale GLFW code rather than
    an ImGui named key (>= 512), and polling it reads garbage: presses appear out of
    nowhere. ImGui orders its keys Equal, LeftBracket, so Equal is mvKey_Open_Brace - 1."""
    return dpg.mvKey_Open_Brace - 1


def shortcuts(do: Actions, state: State, canvas: Canvas) -> list[Shortcut]:
    """Every key the window answers, in the order the help lists them: each runs one of the
    window's actions, reading the state (and the canvas's brush) at the press."""
    s = Shortcut

    def batch_up() -> None:
        do.batch(min(2 * state.batch, BATCH_MAX))

    def batch_down() -> None:
        do.batch(max(state.batch // 2, 1))

    keys = [
        s(dpg.mvKey_C, False, False, do.clear, ("C", "clear (undoable)")),
        s(dpg.mvKey_Delete, False, False, do.clear, None),
        s(dpg.mvKey_Back, False, False, do.clear, None),
        s(dpg.mvKey_Z, True, False, do.undo,
          ("Ctrl+Z", "undo a stroke or a clear; right after a correction, take it back")),
        s(dpg.mvKey_U, False, False, do.undo, None),
        s(dpg.mvKey_Z, True, True, do.redo, ("Ctrl+Shift+Z  Ctrl+Y", "redo")),
        s(dpg.mvKey_Y, True, False, do.redo, None),
        s(dpg.mvKey_Open_Brace, False, False, lambda: do.brush(canvas.brush - 2), ("[  ]", "thinner / thicker brush")),
        s(dpg.mvKey_Close_Brace, False, False, lambda: do.brush(canvas.brush + 2), None),
        s(dpg.mvKey_B, False, False, do.next_backend, ("B", "next backend")),
        s(dpg.mvKey_K, False, False, lambda: do.next_kernel(1), ("K  Shift+K", "next / previous kernel")),
        s(dpg.mvKey_K, False, True, lambda: do.next_kernel(-1), None),
        # "+" is Shift+= on most layouts: both forms, and the keypad's, double the batch
        s(key_equal(), False, False, batch_up, ("+  −", "double / halve the batch")),
        s(key_equal(), False, True, batch_up, None),
        s(dpg.mvKey_Add, False, False, batch_up, None),
        s(dpg.mvKey_Minus, False, False, batch_down, None),
        s(dpg.mvKey_Subtract, False, False, batch_down, None),
        s(dpg.mvKey_R, False, False, lambda: do.continuous(not state.continuous), ("R", "run every frame")),
        s(dpg.mvKey_W, False, False, lambda: do.warm(not state.warm), ("W", "warm timing")),
        s(dpg.mvKey_G, False, False, do.race, ("G", "race every kernel / cancel")),
        s(dpg.mvKey_S, True, False, lambda: do.save(None), ("Ctrl+S", "save PNG + strokes")),
        s(dpg.mvKey_F1, False, False, lambda: do.help(None), ("?  F1", "this help")),
        # "?" is Shift+/ on most layouts; a fast chord (xdotool key shift+slash) can reach the
        # frame with Shift already up, so "/" alone opens the help too (as both forms of "+")
        s(dpg.mvKey_Slash, False, True, lambda: do.help(None), None),
        s(dpg.mvKey_Slash, False, False, lambda: do.help(None), None),
        s(dpg.mvKey_Escape, False, False, lambda: do.help(False), None),
        s(dpg.mvKey_Q, True, False, do.quit, ("Ctrl+Q", "quit")),
    ]
    for d in range(10):
        keys.append(s(getattr(dpg, f"mvKey_{d}"), True, False, lambda d=d: do.save(d),
                      ("Ctrl+0…9", "save under that digit") if d == 0 else None))
    for d in range(10):
        keys.append(s(getattr(dpg, f"mvKey_{d}"), False, False, lambda d=d: do.correct(d),
                      ("0…9", "it is this digit: save a correction (or click its bar)") if d == 0 else None))
    keys.append(s(dpg.mvKey_L, False, False, do.learn, ("L", "learn from your corrections")))
    return keys
