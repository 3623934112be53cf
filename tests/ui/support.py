"""What the window's tests share: drawings, the model, XTest input, driving helpers.

Dear PyGui allows one context per process, so the in-process tests share one
session-scoped App (tests/ui/conftest.py) and reset it between tests.
Screenshots are kept under pytest's temporary directory; their paths are printed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

import numpy as np
import pytest

from gemmpad.runtime.classifier import available_backends
from gemmpad.runtime.model import Model, default_model_path, load_model
from gemmpad.inputs.strokes import CANVAS
from gemmpad.ui import harness

HAVE_MODEL = default_model_path().exists()
# The backend the tests draw on: the native CPU code when this build has it, else NumPy.
BASE = "cpu" if not available_backends()["cpu"] else "numpy"
NEEDS_MODEL = pytest.mark.skipif(not HAVE_MODEL, reason=f"no shipped model at {default_model_path()}")


# ------------------------------------------------------------------ drawings
def zero() -> list[np.ndarray]:
    t = np.linspace(0, 2 * np.pi, 49)
    return [np.stack([140 + 55 * np.sin(t), 140 - 85 * np.cos(t)], axis=1)]


def one() -> list[np.ndarray]:
    return [np.stack([np.linspace(146, 134, 19), np.linspace(50, 230, 19)], axis=1)]


def seven() -> list[np.ndarray]:
    top = np.stack([np.linspace(72, 205, 12), np.linspace(70, 64, 12)], axis=1)
    stem = np.stack([np.linspace(205, 138, 16), np.linspace(64, 236, 16)], axis=1)
    return [top, stem]


DIGITS = {0: zero, 1: one, 7: seven}


def preview28(app: object) -> np.ndarray:
    """The 28x28 input the prediction panel shows (what its preview texture is painted from)."""
    return app.pred.image28


def show_lab(app: object) -> None:
    """Open the Lab tab, as a click on it does."""
    app.show_tab(app.engine.lab_tab)


def window_model() -> Model:
    """The shipped model, or random weights when it is absent (enough for pixel/plumbing tests)."""
    if HAVE_MODEL:
        return load_model()
    rng = np.random.default_rng(1234)
    w = {
        "W1": rng.normal(0, 0.05, (784, 100)),
        "b1": rng.normal(0, 0.1, 100),
        "W2": rng.normal(0, 0.1, (100, 100)),
        "b2": rng.normal(0, 0.1, 100),
        "W3": rng.normal(0, 0.3, (100, 10)),
        "b3": rng.normal(0, 0.1, 10),
    }
    return Model({k: v.astype(np.float32) for k, v in w.items()})


def draw(app: object, drawing: list[np.ndarray]) -> None:
    """Feed the strokes through the pointer path, a few points per frame, then settle."""
    harness.replay(app, drawing, points_per_frame=4)
    harness.settle(app)


def at_canvas_size(shown: np.ndarray) -> np.ndarray:
    """The canvas as shown on screen (any size), sampled back to the canvas's pixels."""
    rows = ((np.arange(CANVAS[0]) + 0.5) * shown.shape[0] / CANVAS[0]).astype(int)
    cols = ((np.arange(CANVAS[1]) + 0.5) * shown.shape[1] / CANVAS[1]).astype(int)
    return shown[rows][:, cols]


def shot(app: object, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    path = harness.screenshot(app, tmp_path_factory.getbasetemp() / "screenshots" / f"{name}.png")
    print(f"screenshot: {path}")
    return path


class XTest:
    """Real pointer events on the X server (XTest), to check the mouse-to-canvas mapping."""

    def __init__(self) -> None:
        self.x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        self.xtst = ctypes.CDLL(ctypes.util.find_library("Xtst") or "libXtst.so.6")
        self.x11.XOpenDisplay.restype = ctypes.c_void_p
        self.x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        self.x11.XFlush.argtypes = [ctypes.c_void_p]
        self.x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
        self.xtst.XTestFakeMotionEvent.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_ulong]
        self.xtst.XTestFakeButtonEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        self.dpy = self.x11.XOpenDisplay(None)
        if not self.dpy:
            raise OSError("cannot open the display")

    def move(self, x: int, y: int) -> None:
        self.xtst.XTestFakeMotionEvent(self.dpy, -1, x, y, 0)
        self.x11.XFlush(self.dpy)

    def key(self, name: str, down: bool) -> None:
        """Press or release the key with X keysym `name` ("c", "z", "Control_L")."""
        self.x11.XStringToKeysym.restype = ctypes.c_ulong
        self.x11.XStringToKeysym.argtypes = [ctypes.c_char_p]
        self.x11.XKeysymToKeycode.restype = ctypes.c_ubyte
        self.x11.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        self.xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        code = self.x11.XKeysymToKeycode(self.dpy, self.x11.XStringToKeysym(name.encode()))
        self.xtst.XTestFakeKeyEvent(self.dpy, code, int(down), 0)
        self.x11.XFlush(self.dpy)

    def button(self, down: bool) -> None:
        self.xtst.XTestFakeButtonEvent(self.dpy, 1, int(down), 0)
        self.x11.XFlush(self.dpy)

    def other_window(self, x: int, y: int) -> int:
        """A 60x40 window of "another program" (no _NET_WM_PID) at (x, y), mapped and given the
        keyboard focus; its id."""
        x11, vp, u, i = self.x11, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int
        x11.XDefaultRootWindow.restype = u
        x11.XDefaultRootWindow.argtypes = [vp]
        x11.XCreateSimpleWindow.restype = u
        x11.XCreateSimpleWindow.argtypes = [vp, u, i, i, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, u, u]
        x11.XMapWindow.argtypes = [vp, u]
        x11.XSetInputFocus.argtypes = [vp, u, i, u]
        x11.XSync.argtypes = [vp, i]
        win = x11.XCreateSimpleWindow(self.dpy, x11.XDefaultRootWindow(self.dpy), x, y, 60, 40, 0, 0, 0)
        x11.XMapWindow(self.dpy, win)
        x11.XSync(self.dpy, 0)
        x11.XSetInputFocus(self.dpy, win, 1, 0)  # RevertToPointerRoot, CurrentTime
        x11.XSync(self.dpy, 0)
        return int(win)

    def destroy(self, window: int) -> None:
        self.x11.XDestroyWindow.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        self.x11.XDestroyWindow(self.dpy, window)
        self.x11.XFlush(self.dpy)

    def close(self) -> None:
        self.x11.XCloseDisplay(self.dpy)


def real_input() -> XTest:
    """An XTest connection for real pointer and key events, or the test skipped with why."""
    try:
        return XTest()
    except OSError as exc:
        pytest.skip(f"XTest is not available to fake mouse and key input: {exc}")


def env(display: str | None) -> dict[str, str]:
    """The environment for `python -m gemmpad`: the same gemmpad this process imported
    (the source tree in development, site-packages after `pip install .`)."""
    import gemmpad

    env = dict(os.environ)
    package_root = str(Path(gemmpad.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env.pop("DISPLAY", None)
    if display:
        env["DISPLAY"] = display
    return env
