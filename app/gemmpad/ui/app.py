"""`gemmpad app` (and plain `gemmpad`): the drawing window and its scriptable runs.

This module stays light (no Dear PyGui, no engine at import time) because
the CLI imports every command module just to build its parser.

    gemmpad app --replay strokes.json [--backend B] [--kernel K] [--batch N]
                [--size WxH] [--scale X] [--screenshot out.png] [--exit]

replays strokes through the window's own pointer path, waits for the
prediction, optionally writes a screenshot, prints one JSON line (prediction,
timings, start-up and frame times) and, with --exit, closes. --record saves
what was drawn when the window closes (Ctrl+Q, or Ctrl-C in the terminal).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from gemmpad.runtime import backends
from gemmpad.commands.args import MAX_FRAMES, MAX_THREADS, MAX_WINDOW_BATCH, integer, number, output_path
from gemmpad.errors import GemmpadError, OutputFileError, require
from gemmpad.inputs.files import check_output_file, refuse_existing
from gemmpad.terminal import printable
from gemmpad.ui.canvas import BRUSH_RANGE, Canvas

_T_IMPORT = time.perf_counter()


def default_drawings_dir() -> Path:
    from gemmpad.data.userdata import drawings_dir

    return drawings_dir()


def start_model(explicit: str | None) -> tuple[str | None, str]:
    """The model file the window starts with: --model, else the personal model of an
    earlier Learn when it exists and loads, else None (the shipped model); and why the
    personal model is not used, or "" (said on stderr and in the window's status line: a
    window started from a desktop has no terminal)."""
    if explicit:
        return explicit, ""
    from gemmpad.runtime.model import load_model
    from gemmpad.data.userdata import personal_model_path

    personal = personal_model_path()
    if not personal.exists():
        return None, ""
    try:
        load_model(personal)
    except GemmpadError as exc:
        why = f"your personal model cannot be used ({printable(str(exc))}); starting with the shipped model"
        print(f"gemmpad: {why}", file=sys.stderr)
        return None, why
    return str(personal), ""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="PATH",
                        help="model .npz (default: your personal model from Learn if there is one, else the shipped model)")
    parser.add_argument("--backend", choices=backends.NAMES,
                        help="start on this backend (default: the fastest usable: cuda, else cpu, else numpy)")
    parser.add_argument("--kernel", metavar="NAME", help="start on this kernel (default: the backend's fastest)")
    parser.add_argument("--batch", type=integer(1, MAX_WINDOW_BATCH), default=1, metavar="B",
                        help=f"run B copies of the drawing per frame: a speed knob, the answer stays the same (1..{MAX_WINDOW_BATCH}, default 1)")
    parser.add_argument("--warm", action="store_true",
                        help="warm timing: a few untimed passes before each frame's timed one (as benchmarks measure)")
    parser.add_argument("--brush", type=number(BRUSH_RANGE[0], BRUSH_RANGE[1]), metavar="PX",
                        help=f"brush diameter in canvas pixels ({BRUSH_RANGE[0]:g}-{BRUSH_RANGE[1]:g}, default 18)")
    parser.add_argument("--replay", metavar="STROKES_JSON", help="draw these strokes, then print a JSON line")
    parser.add_argument("--record", type=output_path, metavar="STROKES_JSON", help="save the drawing's strokes here on exit")
    parser.add_argument("--screenshot", type=output_path, metavar="PNG", help="write a screenshot after --replay (or at start)")
    parser.add_argument("--force", action="store_true", help="replace --screenshot and --record if they exist")
    parser.add_argument("--exit", action="store_true", help="close after --replay/--screenshot instead of staying open")
    parser.add_argument("--drawings", metavar="DIR", type=Path, default=None,
                        help="folder for saved drawings and corrections (default: $GEMMPAD_DRAWINGS, else drawings/ in "
                             "your data folder: `gemmpad info` names it)")
    parser.add_argument("--no-vsync", action="store_true", help="render as fast as possible (timing runs)")
    parser.add_argument("--threads", type=integer(1, MAX_THREADS), metavar="N", default=None,
                        help="threads for the native CPU kernels (default: the cores the window and other "
                             "programs leave free; more threads than free cores make p99 10-100x the median)")
    parser.add_argument("--frames", type=integer(0, MAX_FRAMES), metavar="N", default=0,
                        help="after --replay, run the network every frame for N more frames before the JSON "
                             "line (its median and p99 then describe N frames: a latency benchmark)")
    parser.add_argument("--scale", type=number(0.5, 4.0), metavar="X",
                        help="UI scale: text and spacing X times larger (0.5-4; default from the screen's "
                             "DPI where X11 reports it, else 1)")
    parser.add_argument("--size", type=window_size, metavar="WxH", default=None,
                        help="window size in pixels, no larger than the screen (default 1200x716 times the scale)")


def window_size(text: str) -> tuple[int, int]:
    """argparse type for --size: "WIDTHxHEIGHT", no smaller than the window's minimum."""
    from gemmpad.ui.layout import MIN_WINDOW

    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be WIDTHxHEIGHT in pixels, like 1200x716, got {text!r}") from None
    if w < MIN_WINDOW[0] or h < MIN_WINDOW[1] or max(w, h) > MAX_SIDE or w * h > MAX_AREA:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_WINDOW[0]}x{MIN_WINDOW[1]} and at most an 8K "
                                         f"screen ({MAX_SIDE}x{MAX_AREA // MAX_SIDE}, either way up), got {text}")
    return w, h


# An 8K screen, landscape or portrait. Start-up time and memory grow with the window's
# area: 16384x16384 took 90 s and 9.6 GB before anything was drawn.
MAX_SIDE, MAX_AREA = 7680, 7680 * 4320


def _x11() -> ctypes.CDLL | None:
    lib = ctypes.util.find_library("X11") or "libX11.so.6"
    try:
        x11 = ctypes.CDLL(lib)
    except OSError:
        return None
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    return x11


def default_scale() -> float:
    """The UI scale for this screen: Xft.dpi / 96 when the desktop sets it (that is what
    desktops change for high-DPI screens), rounded to quarters, within 1-3; else 1."""
    if sys.platform in ("win32", "darwin"):
        return 1.0
    x11 = _x11()
    handle = x11.XOpenDisplay(None) if x11 is not None else None
    if not handle:
        return 1.0
    try:
        x11.XResourceManagerString.restype = ctypes.c_char_p
        x11.XResourceManagerString.argtypes = [ctypes.c_void_p]
        resources = (x11.XResourceManagerString(handle) or b"").decode("utf-8", "replace")
    finally:
        x11.XCloseDisplay(handle)
    for line in resources.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Xft.dpi":
            try:
                return min(max(round(float(value) / 96 * 4) / 4, 1.0), 3.0)
            except ValueError:
                return 1.0
    return 1.0


def screen_size() -> tuple[int, int] | None:
    """The default screen's size in pixels (X11), or None where it cannot be asked."""
    if sys.platform in ("win32", "darwin"):
        return None
    x11 = _x11()
    handle = x11.XOpenDisplay(None) if x11 is not None else None
    if not handle:
        return None
    try:
        x11.XDefaultScreen.argtypes = [ctypes.c_void_p]
        x11.XDisplayWidth.argtypes = x11.XDisplayHeight.argtypes = [ctypes.c_void_p, ctypes.c_int]
        screen = x11.XDefaultScreen(handle)
        return int(x11.XDisplayWidth(handle, screen)), int(x11.XDisplayHeight(handle, screen))
    finally:
        x11.XCloseDisplay(handle)


def fit_screen(size: tuple[int, int], screen: tuple[int, int] | None) -> tuple[int, int]:
    """`size`, no larger than the screen (`--scale 2` asked for 2400x1432 on a 1600x1000 one,
    and the window opened with its right and bottom off-screen), nor smaller than the minimum."""
    from gemmpad.ui.layout import MIN_WINDOW

    if screen is None:
        return size
    return max(min(size[0], screen[0]), MIN_WINDOW[0]), max(min(size[1], screen[1]), MIN_WINDOW[1])


def display_problem() -> str:
    """Why no window can open here, or "" if one can.

    GLFW aborts the whole process when it finds no X display, so look first.
    """
    if sys.platform in ("win32", "darwin"):
        return ""
    display = os.environ.get("DISPLAY", "")
    if not display:
        return "no display (DISPLAY is not set)"
    x11 = _x11()
    if x11 is None:
        return ""  # cannot check; let the window library try
    handle = x11.XOpenDisplay(None)
    if not handle:
        return f"cannot open display {display!r}"
    x11.XCloseDisplay(handle)
    return ""


def _process_age_s() -> float | None:
    """Seconds since this process started (Linux), so start-up includes interpreter and imports."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _finite(value: Any) -> Any:
    """`value` with NaN and Inf floats as None: json.dumps would write the bare words NaN
    and Infinity, which no strict JSON reader accepts (no frame timed yet: a NaN median)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def run(args: argparse.Namespace) -> int:
    require("dearpygui", "the drawing window", "dearpygui",
            otherwise="`gemmpad predict IMAGE` reads digits from image files without it")
    problem = display_problem()
    if problem:
        raise GemmpadError(
            f"{problem}. The drawing window needs a graphical display: run it in a desktop session, or under a "
            "virtual one with `xvfb-run -a gemmpad app ...`; to read digits from image files without a window, "
            "use `gemmpad predict IMAGE`."
        )
    # before the window opens, not after a drawing session
    if args.screenshot:
        from PIL import Image

        image_types = {ext for ext, fmt in Image.registered_extensions().items() if fmt in Image.SAVE}
        check_output_file(args.screenshot, f"--screenshot {args.screenshot}", image_types)
    if args.record:
        check_output_file(args.record, f"--record {args.record}")
    for option, path in (("--screenshot", args.screenshot), ("--record", args.record)):
        if path:
            refuse_existing([path], option, force=args.force, error=OutputFileError)
    age = _process_age_s()
    started_at = time.perf_counter() - age if age is not None else _T_IMPORT

    from gemmpad.inputs import strokes
    from gemmpad.runtime.classifier import Classifier

    drawing = strokes.load_drawing(args.replay) if args.replay else None
    backend = backends.pick(args.backend, args.kernel)  # the fastest usable: the GPU, else the CPU's code, else NumPy
    model_path, not_personal = start_model(args.model)
    classifier = Classifier(model_path, backend=backend, kernel=args.kernel)

    from gemmpad.ui import harness
    from gemmpad.ui.layout import DEFAULT_WINDOW
    from gemmpad.ui.window import App

    scale = args.scale or default_scale()
    wanted = args.size or (round(DEFAULT_WINDOW[0] * scale), round(DEFAULT_WINDOW[1] * scale))
    screen = screen_size()
    size = fit_screen(wanted, screen)
    if args.size and size != tuple(args.size) and screen is not None:
        # honoured as far as the screen allows: a window larger than the screen opened with its
        # right and bottom off-screen
        print(f"gemmpad: --size {args.size[0]}x{args.size[1]} is larger than the screen "
              f"({screen[0]}x{screen[1]}): opening {size[0]}x{size[1]}", file=sys.stderr)
    app = App(
        classifier,
        drawings_dir=args.drawings or default_drawings_dir(),
        batch=args.batch,
        warm=args.warm,
        brush=args.brush,
        vsync=not args.no_vsync,
        scale=scale,
        cpu_threads=args.threads,
        size=size,
        started_at=started_at,
        notice=not_personal,
    )
    try:
        app.step()  # the first frame: start-up ends here
        if app.reading_note:  # a UI scale too large for the screen (the window's status line says it too)
            print(f"gemmpad: {app.reading_note}", file=sys.stderr)
        if drawing is not None:
            harness.replay(app, drawing)
            if app.canvas.full:  # what was drawn stays, and --record writes it: a file the loader takes
                print(f"gemmpad: {printable(args.replay)}: the canvas is full (as much as a strokes file may hold); "
                      "the rest of the drawing was not drawn", file=sys.stderr)
            harness.settle(app)
            harness.run_frames(app, args.frames)
        if args.screenshot:
            harness.screenshot(app, args.screenshot)
        if drawing is not None or args.exit:
            summary = harness.summary(app)
            if args.screenshot:
                summary["screenshot"] = str(Path(args.screenshot).resolve())
            print(json.dumps(_finite(summary), allow_nan=False), flush=True)
        if not args.exit:
            app.run()
        record(args.record, app.canvas)
    except KeyboardInterrupt:
        # Ctrl-C in the terminal ends the session as Ctrl+Q does, the drawing kept; then the
        # command says "interrupted" (exit 130)
        record(args.record, app.canvas)
        raise
    finally:
        app.close()
    return 0


def record(path: str | None, canvas: Canvas) -> None:
    """--record: the canvas's strokes, their widths and its size to `path` (atomically; None: not asked)."""
    if path:
        from gemmpad.inputs import strokes

        strokes.save(path, canvas.strokes(), canvas.widths(), canvas.size)
