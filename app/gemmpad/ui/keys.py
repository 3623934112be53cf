"""The keyboard map: one table drives the key handling, the help overlay and the tooltips.

A plain digit key says the drawing is that digit (a correction, learn_panel); Ctrl+digit
saves the drawing under that label.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import dearpygui.dearpygui as dpg

if TYPE_CHECKING:
    from gemmpad.ui.canvas import Canvas
    from gemmpad.ui.learn_panel import LearnPanel
    from gemmpad.ui.state import State


class App(Protocol):
    """What a key can do: the window (gemmpad.ui.window.App) provides it. Typed here rather than
    imported, so the keyboard map sits below the window and the help overlay that read it."""

    canvas: Canvas
    learn: LearnPanel
    state: State

    def clear(self) -> None: ...
    def undo(self) -> None: ...
    def redo(self) -> None: ...
    def set_brush(self, width: float) -> None: ...
    def set_batch(self, batch: int) -> None: ...
    def set_continuous(self, on: bool) -> None: ...
    def set_warm(self, on: bool) -> None: ...
    def next_backend(self) -> None: ...
    def next_kernel(self, step: int = 1) -> None: ...
    def race_toggle(self) -> None: ...
    def save(self, label: int | None = None) -> object: ...
    def toggle_help(self, show: bool | None = None) -> None: ...
    def quit(self) -> None: ...

BATCH_MAX = 4096


@dataclass(frozen=True)
class Shortcut:
    key: int
    ctrl: bool
    shift: bool
    action: Callable[[App], object]
    help: tuple[str, str] | None  # (keys, what) for the help overlay; None for aliases


def key_equal() -> int:
    """The "= +" key. Dear PyGui 2.3's mvKey_Plus is 61, a stale GLFW code rather than
    an ImGui named key (>= 512), and polling it reads garbage: presses appear out of
    nowhere. ImGui orders its keys Equal, LeftBracket, so Equal is mvKey_Open_Brace - 1."""
    return dpg.mvKey_Open_Brace - 1


def shortcuts() -> list[Shortcut]:
    """Every key the window answers, in the order the help lists them."""
    s = Shortcut

    def batch_up(a: App) -> None:
        a.set_batch(min(2 * a.state.batch, BATCH_MAX))

    def batch_down(a: App) -> None:
        a.set_batch(max(a.state.batch // 2, 1))

    keys = [
        s(dpg.mvKey_C, False, False, lambda a: a.clear(), ("C", "clear (undoable)")),
        s(dpg.mvKey_Delete, False, False, lambda a: a.clear(), None),
        s(dpg.mvKey_Back, False, False, lambda a: a.clear(), None),
        s(dpg.mvKey_Z, True, False, lambda a: a.undo(),
          ("Ctrl+Z", "undo a stroke or a clear; right after a correction, take it back")),
        s(dpg.mvKey_U, False, False, lambda a: a.undo(), None),
        s(dpg.mvKey_Z, True, True, lambda a: a.redo(), ("Ctrl+Shift+Z  Ctrl+Y", "redo")),
        s(dpg.mvKey_Y, True, False, lambda a: a.redo(), None),
        s(dpg.mvKey_Open_Brace, False, False, lambda a: a.set_brush(a.canvas.brush - 2), ("[  ]", "thinner / thicker brush")),
        s(dpg.mvKey_Close_Brace, False, False, lambda a: a.set_brush(a.canvas.brush + 2), None),
        s(dpg.mvKey_B, False, False, lambda a: a.next_backend(), ("B", "next backend")),
        s(dpg.mvKey_K, False, False, lambda a: a.next_kernel(1), ("K  Shift+K", "next / previous kernel")),
        s(dpg.mvKey_K, False, True, lambda a: a.next_kernel(-1), None),
        # "+" is Shift+= on most layouts: both forms, and the keypad's, double the batch
        s(key_equal(), False, False, batch_up, ("+  −", "double / halve the batch")),
        s(key_equal(), False, True, batch_up, None),
        s(dpg.mvKey_Add, False, False, batch_up, None),
        s(dpg.mvKey_Minus, False, False, batch_down, None),
        s(dpg.mvKey_Subtract, False, False, batch_down, None),
        s(dpg.mvKey_R, False, False, lambda a: a.set_continuous(not a.state.continuous), ("R", "run every frame")),
        s(dpg.mvKey_W, False, False, lambda a: a.set_warm(not a.state.warm), ("W", "warm timing")),
        s(dpg.mvKey_G, False, False, lambda a: a.race_toggle(), ("G", "race every kernel / cancel")),
        s(dpg.mvKey_S, True, False, lambda a: a.save(), ("Ctrl+S", "save PNG + strokes")),
        s(dpg.mvKey_F1, False, False, lambda a: a.toggle_help(), ("?  F1", "this help")),
        # "?" is Shift+/ on most layouts; a fast chord (xdotool key shift+slash) can reach the
        # frame with Shift already up, so "/" alone opens the help too (as both forms of "+")
        s(dpg.mvKey_Slash, False, True, lambda a: a.toggle_help(), None),
        s(dpg.mvKey_Slash, False, False, lambda a: a.toggle_help(), None),
        s(dpg.mvKey_Escape, False, False, lambda a: a.toggle_help(False), None),
        s(dpg.mvKey_Q, True, False, lambda a: a.quit(), ("Ctrl+Q", "quit")),
    ]
    for d in range(10):
        keys.append(s(getattr(dpg, f"mvKey_{d}"), True, False, lambda a, d=d: a.save(label=d),
                      ("Ctrl+0…9", "save under that digit") if d == 0 else None))
    for d in range(10):
        keys.append(s(getattr(dpg, f"mvKey_{d}"), False, False, lambda a, d=d: a.learn.correct(a, d),
                      ("0…9", "it is this digit: save a correction (or click its bar)") if d == 0 else None))
    keys.append(s(dpg.mvKey_L, False, False, lambda a: a.learn.learn(a), ("L", "learn from your corrections")))
    return keys
