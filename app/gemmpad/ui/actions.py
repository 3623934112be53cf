"""What a button or a key can ask the window to do, as plain callbacks handed to each panel
and to the keyboard map when they are built.

Issue 41: the Learn panel's methods took the window and called back into it, and the
keyboard map typed the window as a Protocol; the panels and the window could only be read
(or tested) together. With these, no panel imports or types the window: it gets the state to
read (gemmpad.ui.state) and the few actions it triggers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Actions:
    """The window's actions (gemmpad.ui.window.App builds this from its methods)."""

    clear: Callable[[], None]  # wipe the canvas (undoable)
    undo: Callable[[], None]  # the last correction (right after it), else the last stroke or clear
    redo: Callable[[], None]
    brush: Callable[[float], None]  # the brush width in canvas pixels
    save: Callable[[int | None], Path | None]  # the drawing, under a digit or the label picked
    backend: Callable[[str], None]
    kernel: Callable[[str], None]
    next_backend: Callable[[], None]
    next_kernel: Callable[[int], None]  # +1 the next, -1 the previous
    batch: Callable[[int], None]
    continuous: Callable[[bool], None]  # run every frame
    warm: Callable[[bool], None]  # warm timing
    race: Callable[[], None]  # start a race of every kernel, or cancel it
    lab_rung: Callable[[str | None], None]  # the rung the Lab tab shows
    help: Callable[[bool | None], None]  # show, hide (or toggle: None) the help
    correct: Callable[[int], None]  # the drawing is this digit: save a correction
    learn: Callable[[], None]  # fine-tune on the corrections
    quit: Callable[[], None]
