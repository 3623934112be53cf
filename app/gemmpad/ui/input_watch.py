"""Noticing input aimed at this window without drawing a frame, so an idle window can stop rendering.

Dear PyGui reads input only inside render_dearpygui_frame(), and under Mesa a frame of
this window costs ~20 ms of CPU: polling at even 10 fps keeps a fifth of a core busy
doing nothing. On X11 we ask the server instead (XQueryPointer, XQueryKeymap,
XGetInputFocus: a round trip of a few microseconds each) whether input changed, and
render only then, plus a slow heartbeat for window events.

Only input meant for us counts: the pointer while it is over the window (its rectangle
on screen, from Dear PyGui) and keys while one of our windows has the focus (the focus
window's _NET_WM_PID is this process; with no focus window, as on a bare X server, keys
go to the window under the pointer). Watching the whole screen woke the window for
every pointer move and key press in other programs (~80 % of a core while someone
typed elsewhere). Elsewhere (no X11 library, Wayland without XWayland, Windows, macOS)
`changed()` is None and the window falls back to a low idle frame rate.

Polling misses what happens between two looks: a 3-5 ms click falls between two
XQueryPointer calls 8 ms apart, and the window slept on to its next heartbeat (~1 s).
`WindowEvents` waits on the window's own X connection instead (GLFW's, inside Dear
PyGui): the server queues every press, release and key for our window there, so the
wait ends when the first one arrives, however short, and costs nothing meanwhile.
InputWatch remains for where that connection cannot be reached.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import sys
from collections.abc import Callable

Rect = tuple[int, int, int, int]  # x, y, width, height on the screen
_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_IGNORE_ERRORS = _ERROR_HANDLER(lambda display, event: 0)  # kept alive: Xlib holds the pointer


class InputWatch:
    def __init__(self, rect: Callable[[], Rect] | None = None) -> None:
        """`rect` says where the window is on the screen now (None: the whole screen counts)."""
        self._rect = rect
        self._x11: ctypes.CDLL | None = None
        self._dpy: int | None = None
        self._last: tuple[object, ...] | None = None
        self._ours: dict[int, bool] = {}  # focus window id -> whether it belongs to this process
        if sys.platform in ("win32", "darwin"):
            return
        try:
            x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        except OSError:
            return
        vp, u, i = ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int
        x11.XOpenDisplay.restype = vp
        x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        x11.XDefaultRootWindow.restype = u
        x11.XDefaultRootWindow.argtypes = [vp]
        x11.XQueryPointer.argtypes = [vp, u, ctypes.POINTER(u), ctypes.POINTER(u), ctypes.POINTER(i),
                                      ctypes.POINTER(i), ctypes.POINTER(i), ctypes.POINTER(i), ctypes.POINTER(ctypes.c_uint)]
        x11.XQueryKeymap.argtypes = [vp, ctypes.c_char * 32]
        x11.XGetInputFocus.argtypes = [vp, ctypes.POINTER(u), ctypes.POINTER(i)]
        x11.XInternAtom.restype = u
        x11.XInternAtom.argtypes = [vp, ctypes.c_char_p, i]
        x11.XGetWindowProperty.argtypes = [vp, u, u, ctypes.c_long, ctypes.c_long, i, u, ctypes.POINTER(u),
                                           ctypes.POINTER(i), ctypes.POINTER(u), ctypes.POINTER(u),
                                           ctypes.POINTER(ctypes.POINTER(ctypes.c_ubyte))]
        x11.XQueryTree.argtypes = [vp, u, ctypes.POINTER(u), ctypes.POINTER(u), ctypes.POINTER(ctypes.POINTER(u)),
                                   ctypes.POINTER(ctypes.c_uint)]
        x11.XFree.argtypes = [vp]
        x11.XSync.argtypes = [vp, i]
        x11.XSetErrorHandler.restype = vp
        x11.XSetErrorHandler.argtypes = [vp]
        x11.XCloseDisplay.argtypes = [vp]
        dpy = x11.XOpenDisplay(None)
        if not dpy:
            return
        self._x11, self._dpy = x11, dpy
        self._root = x11.XDefaultRootWindow(dpy)
        self._pid_atom = x11.XInternAtom(dpy, b"_NET_WM_PID", 0)

    @property
    def available(self) -> bool:
        return self._dpy is not None

    def _pointer(self) -> tuple[int, int, int]:
        assert self._x11 is not None
        u = ctypes.c_ulong
        root, child = u(), u()
        rx, ry, wx, wy = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        mask = ctypes.c_uint()
        self._x11.XQueryPointer(self._dpy, self._root, ctypes.byref(root), ctypes.byref(child), ctypes.byref(rx),
                                ctypes.byref(ry), ctypes.byref(wx), ctypes.byref(wy), ctypes.byref(mask))
        return rx.value, ry.value, mask.value

    def _focus_owner(self) -> str:
        """Who gets the keys: "ours" (the focus window, or a window above it, is this process's),
        "pointer" (PointerRoot: whichever window the pointer is over, as on a bare X server),
        or "other"."""
        assert self._x11 is not None
        focus, revert = ctypes.c_ulong(), ctypes.c_int()
        self._x11.XGetInputFocus(self._dpy, ctypes.byref(focus), ctypes.byref(revert))
        if focus.value <= 1:  # None (nobody) or PointerRoot
            return "pointer" if focus.value == 1 else "other"
        if focus.value not in self._ours:
            if len(self._ours) > 256:  # windows come and go; the answer for a live one is cheap to ask again
                self._ours.clear()
            self._ours[focus.value] = self._owned(focus.value)
        return "ours" if self._ours[focus.value] else "other"

    def _owned(self, window: int) -> bool:
        """_NET_WM_PID of `window` or its ancestors below the root (a window manager's frame holds
        the client window) is ours. X errors (the window went away meanwhile) mean "not ours":
        Xlib's default handler would end the process, so they are ignored for these calls only."""
        assert self._x11 is not None
        x11, pid = self._x11, os.getpid()
        previous = x11.XSetErrorHandler(ctypes.cast(_IGNORE_ERRORS, ctypes.c_void_p))
        try:
            for _ in range(8):  # a few levels at most: client, frame, decoration
                if window in (0, self._root):
                    return False
                if self._property_pid(window) == pid:
                    return True
                root, parent, children, n = ctypes.c_ulong(), ctypes.c_ulong(), ctypes.POINTER(ctypes.c_ulong)(), \
                    ctypes.c_uint()
                if not x11.XQueryTree(self._dpy, window, ctypes.byref(root), ctypes.byref(parent),
                                      ctypes.byref(children), ctypes.byref(n)):
                    return False
                if children:
                    x11.XFree(children)
                window = parent.value
            return False
        finally:
            x11.XSync(self._dpy, 0)
            x11.XSetErrorHandler(previous)

    def _property_pid(self, window: int) -> int | None:
        assert self._x11 is not None
        actual, fmt, n, after = ctypes.c_ulong(), ctypes.c_int(), ctypes.c_ulong(), ctypes.c_ulong()
        data = ctypes.POINTER(ctypes.c_ubyte)()
        ok = self._x11.XGetWindowProperty(self._dpy, window, self._pid_atom, 0, 1, 0, 0, ctypes.byref(actual),
                                          ctypes.byref(fmt), ctypes.byref(n), ctypes.byref(after), ctypes.byref(data))
        try:
            if ok != 0 or not data or n.value < 1 or fmt.value != 32:
                return None
            return int(ctypes.cast(data, ctypes.POINTER(ctypes.c_ulong))[0])  # format 32 is a C long
        finally:
            if data:
                self._x11.XFree(data)

    def _state(self) -> tuple[object, ...]:
        """What of the input could concern us: the pointer only inside our rectangle, the
        keyboard only while we have the focus; outside, a constant that never changes."""
        assert self._x11 is not None
        x, y, mask = self._pointer()
        rx, ry, rw, rh = self._rect() if self._rect is not None else (x, y, 1, 1)
        pointer = (x, y, mask) if rx <= x < rx + rw and ry <= y < ry + rh else None
        keys = None
        owner = self._focus_owner() if self._rect is not None else "ours"
        if owner == "ours" or owner == "pointer" and pointer is not None:
            buf = (ctypes.c_char * 32)()
            self._x11.XQueryKeymap(self._dpy, buf)
            keys = buf.raw
        return pointer, keys

    def changed(self) -> bool | None:
        """Whether input aimed at the window changed since the last call (the pointer moved
        over it, a button or a key it would receive went up or down); None when it cannot be
        told here."""
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


class WindowEvents:
    """Sleep until the X server has queued an event for this window (GLFW's connection)."""

    def __init__(self) -> None:
        self._x11: ctypes.CDLL | None = None
        self._dpy: int | None = None
        self._fd = -1
        if sys.platform in ("win32", "darwin"):
            return
        try:
            import dearpygui._dearpygui as core  # GLFW is linked into it and exports its X11 handle

            glfw = ctypes.CDLL(core.__file__)
            x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        except (ImportError, OSError):
            return
        glfw.glfwGetX11Display.restype = ctypes.c_void_p
        x11.XConnectionNumber.argtypes = [ctypes.c_void_p]
        x11.XEventsQueued.argtypes = [ctypes.c_void_p, ctypes.c_int]
        dpy = glfw.glfwGetX11Display() if hasattr(glfw, "glfwGetX11Display") else None
        if not dpy:  # not on X11 (Wayland), or no window yet
            return
        self._x11, self._dpy, self._fd = x11, dpy, x11.XConnectionNumber(dpy)

    @property
    def available(self) -> bool:
        return self._dpy is not None

    def wait(self, timeout: float) -> bool:
        """True as soon as an event for the window is queued (it stays queued: the next frame
        reads it), False after `timeout` seconds without one."""
        assert self._x11 is not None
        queued_after_reading = 1  # reads what the socket holds into Xlib's queue, never blocks
        if self._x11.XEventsQueued(self._dpy, queued_after_reading):
            return True
        try:
            ready, _, _ = select.select([self._fd], [], [], max(timeout, 0.0))
        except (OSError, ValueError):
            return False
        return bool(ready) and self._x11.XEventsQueued(self._dpy, queued_after_reading) > 0
