"""Noticing input without drawing a frame, so an idle window can stop rendering.

Dear PyGui reads input only inside render_dearpygui_frame(), and under Mesa a frame of
this window costs ~20 ms of CPU: polling at even 10 fps keeps a fifth of a core busy
doing nothing. On X11 we ask the server instead (XQueryPointer, XQueryKeymap: a round
trip of a few microseconds each) whether the pointer, its buttons or any key changed,
and render only then, plus a slow heartbeat for window events. Elsewhere (no X11
library, Wayland without XWayland, Windows, macOS) `changed()` is None and the window
falls back to a low idle frame rate.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys


class InputWatch:
    def __init__(self) -> None:
        self._x11: ctypes.CDLL | None = None
        self._dpy: int | None = None
        self._last: tuple[object, ...] | None = None
        if sys.platform in ("win32", "darwin"):
            return
        try:
            x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        except OSError:
            return
        x11.XOpenDisplay.restype = ctypes.c_void_p
        x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        x11.XDefaultRootWindow.restype = ctypes.c_ulong
        x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        u, i = ctypes.c_ulong, ctypes.c_int
        x11.XQueryPointer.argtypes = [ctypes.c_void_p, u, ctypes.POINTER(u), ctypes.POINTER(u), ctypes.POINTER(i),
                                      ctypes.POINTER(i), ctypes.POINTER(i), ctypes.POINTER(i), ctypes.POINTER(ctypes.c_uint)]
        x11.XQueryKeymap.argtypes = [ctypes.c_void_p, ctypes.c_char * 32]
        x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
        dpy = x11.XOpenDisplay(None)
        if not dpy:
            return
        self._x11, self._dpy = x11, dpy
        self._root = x11.XDefaultRootWindow(dpy)

    @property
    def available(self) -> bool:
        return self._dpy is not None

    def _state(self) -> tuple[object, ...]:
        assert self._x11 is not None
        u = ctypes.c_ulong
        root, child = u(), u()
        rx, ry, wx, wy = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        mask = ctypes.c_uint()
        self._x11.XQueryPointer(self._dpy, self._root, ctypes.byref(root), ctypes.byref(child), ctypes.byref(rx),
                                ctypes.byref(ry), ctypes.byref(wx), ctypes.byref(wy), ctypes.byref(mask))
        keys = (ctypes.c_char * 32)()
        self._x11.XQueryKeymap(self._dpy, keys)
        return rx.value, ry.value, mask.value, keys.raw

    def changed(self) -> bool | None:
        """Whether the pointer moved, a button or a key went up or down since the last
        call; None when it cannot be told here."""
        if self._dpy is None:
            return None
        state = self._state()
        moved = self._last is not None and state != self._last
        self._last = state
        return moved

    def close(self) -> None:
        if self._x11 is not None and self._dpy is not None:
            self._x11.XCloseDisplay(self._dpy)
        self._dpy = None
