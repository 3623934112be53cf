"""The window: actions and the frame loop; the panels draw themselves, from the state (ui/state:
what the user chose and what the window shows, stored once), which only the window changes.

Everything runs on the main thread with `manual_callback_management`: each frame polls
the mouse and keyboard, runs the queued widget callbacks, paints new stroke segments
into the canvas array, uploads it as a texture when it changed, hands the drawing to the
inference worker and shows the newest result. Nothing in a frame waits for the network,
so drawing stays smooth on the slowest kernel. When nothing moves, the window stops
drawing until input arrives (it waits on the window's X connection, or input_watch asks
the X server), with a slow heartbeat, so an idle window costs next to nothing; a click
however short wakes it at once, and the frame reads the press from Dear PyGui's queued
events even when the button is already up again.

Panels: draw_panel (with learn_panel, its last section), prediction_panel, engine_panel,
status_bar, help_overlay; where they go: layout; scripted runs (replay, screenshots, the
JSON summary): harness.

Dear PyGui has one context per process: an App owns it from __init__ to close(), and
only one App may exist at a time.
"""

from __future__ import annotations

import datetime as _dt
import time
from pathlib import Path

import dearpygui.dearpygui as dpg
import numpy as np
from PIL import Image

from gemmpad.runtime import native, unsure
from gemmpad.inputs import strokes
from gemmpad.data import userdata
from gemmpad.runtime.classifier import Classifier, available_backends, timing_stats
from gemmpad.inputs.files import atomic_paths
from gemmpad.runtime.model import Model
from gemmpad.inputs.preprocess import preprocess
from gemmpad.ui import keys, layout, style
from gemmpad.ui.actions import Actions
from gemmpad.ui.canvas import Canvas
from gemmpad.ui.cores import window_threads
from gemmpad.ui.draw_panel import DrawPanel
from gemmpad.ui.engine_panel import BACKEND_LABELS, BATCHES, EnginePanel
from gemmpad.ui.help_overlay import HelpOverlay
from gemmpad.ui.workers.inference import HISTORY, InferenceWorker, Result
from gemmpad.ui.input_watch import InputWatch, WindowEvents
from gemmpad.ui.lab_panel import lab_view
from gemmpad.ui.learn_panel import LearnPanel
from gemmpad.ui.workers.learner import Learner
from gemmpad.ui.prediction_panel import PredictionPanel
from gemmpad.ui.workers.race import Race
from gemmpad.ui.state import Reading, State
from gemmpad.ui.status_bar import StatusBar
from gemmpad.ui.text import gpu_line, unsure_note

# A new drawing not read after this long: the reading shown is marked as the previous one's
# (sooner, a fast rung's reading would flicker between marked and not every stroke)
PENDING_AFTER_S = 0.15
# New live figures refresh the Lab tab at most this often (a refresh takes ~4 ms: every frame of
# "Run every frame" would cost a tenth of a core); a new rung or batch shows at once
LAB_REFRESH_S = 0.25
IDLE_AFTER_S = 0.5  # no input, no new result and nothing running for this long: idle
# While idle: frames per second where the X server tells us about input between frames
# (input_watch), and where it cannot (then input is read only in frames).
IDLE_FPS_WATCHED, IDLE_FPS_BLIND = 1.0, 10.0
WATCH_S = 1 / 120  # how often an idle window asks the X server about input


def _viewport_rect() -> tuple[int, int, int, int]:
    """Where the window is on the screen: the input that counts as ours (input_watch)."""
    x, y = dpg.get_viewport_pos()
    return int(x), int(y), int(dpg.get_viewport_width()), int(dpg.get_viewport_height())


class App:
    """The window. Drive it with run(), or frame by frame with step() (tests, --replay)."""

    def __init__(
        self,
        classifier: Classifier,
        *,
        drawings_dir: Path,
        batch: int = 1,
        warm: bool = False,
        brush: float | None = None,
        vsync: bool = True,
        scale: float = 1.0,
        cpu_threads: int | None = None,
        size: tuple[int, int] = layout.DEFAULT_WINDOW,
        started_at: float | None = None,
        notice: str = "",
    ) -> None:
        """`notice`: a problem found before the window opened (the personal model could not be
        used), said in the status line in red until the next message."""
        self._t_start = time.perf_counter() if started_at is None else started_at
        self.startup_s: float | None = None
        self.scale = float(scale)
        self.canvas = Canvas() if brush is None else Canvas(brush=brush)
        self.drawings_dir = drawings_dir
        # what the user chose and what the window shows, stored once; the panels read it
        self.state = State(classifier.backend, classifier.kernel, batch, warm=warm)
        self.gpu = native.cuda_status()
        self.backend_reasons = available_backends()
        # Kernel lists are read once, before the worker thread takes the classifier over.
        self.kernel_lists = {
            b: (classifier.kernels(b) if not reason else []) for b, reason in self.backend_reasons.items()
        }
        self.cpu_threads = cpu_threads or window_threads()
        if hasattr(native.cpu, "set_thread_cap"):
            native.cpu.set_thread_cap(self.cpu_threads)
        # request -> (its batch, the canvas version, when it was sent), for the requests in flight
        self._sent: dict[int, tuple[int, int, float]] = {}
        self._shown_version = -1  # the canvas version the reading shown was made from
        self._stale_since: float | None = None  # when the oldest drawing not yet read was sent
        self._lab_key: tuple[object, ...] | None = None
        self._lab_at = 0.0  # when the Lab tab was last refreshed
        self._want_tab: int | str | None = None  # a tab asked for and not yet seen open (show_tab)
        self.error = ""
        self.frames = 0
        self.frame_times: list[float] = []  # seconds between frame starts
        self.work_times: list[float] = []  # seconds of our own work per frame (all but rendering)
        self._last_frame_start: float | None = None
        self._last_active = time.perf_counter()
        self._last_mouse: tuple[float, float] = (-1.0, -1.0)
        self._pointer: list[tuple[str, float, float]] = []
        self._mouse_down = False
        self._mouse_stroke = False
        self._submitted_version = -1
        self._submitted_config: tuple[str, str | None, int, bool] | None = None
        self._last_seq = 0
        self._quit = False
        self._layout: layout.Layout | None = None
        self.race: Race | None = None
        self._viewport_size = (0, 0)

        self._model = classifier.model
        self.detector, self._no_detector = unsure.for_model(classifier.model)
        self.worker = InferenceWorker(classifier, self.detector)
        dpg.create_context()
        dpg.configure_app(manual_callback_management=True)
        self.fonts = style.load_fonts(self.scale)
        self._build()
        dpg.create_viewport(
            title="gemmpad — draw a digit",
            width=size[0],
            height=size[1],
            min_width=layout.MIN_WINDOW[0],
            min_height=layout.MIN_WINDOW[1],
            vsync=vsync,
            clear_color=style.rgba(style.BG),
        )
        dpg.setup_dearpygui()
        dpg.show_viewport()
        dpg.set_primary_window(self._root, True)
        self._refresh_controls()
        if notice:
            self.status.say(notice[0].upper() + notice[1:], error=True)

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        dpg.bind_theme(style.global_theme(self.scale))
        # what the panels and keys may ask of the window: they get these, never the window
        actions = Actions(
            clear=self.clear, undo=self.undo, redo=self.redo, brush=self.set_brush, save=self.save,
            backend=self.set_backend, kernel=self.set_kernel, next_backend=self.next_backend,
            next_kernel=self.next_kernel, batch=self.set_batch, continuous=self.set_continuous,
            warm=self.set_warm, race=self.race_toggle, lab_rung=self.set_lab_rung, help=self.toggle_help,
            correct=lambda digit: self.learn.correct(digit), learn=lambda: self.learn.learn(), quit=self.quit,
        )
        self.shortcuts = keys.shortcuts(actions, self.state, self.canvas)
        with dpg.window(no_scrollbar=False) as self._root:
            # row: drawing | right; right: prediction and engine, side by side or stacked
            with dpg.group(horizontal=True, horizontal_spacing=round(layout.GAP * self.scale)) as self._row:
                self.draw = DrawPanel(self.canvas, self.fonts, self.scale, str(self.drawings_dir), actions)
                with dpg.child_window(border=False) as self._right:
                    with dpg.group(horizontal=True, horizontal_spacing=round(layout.GAP * self.scale)) as self._pair:
                        note = unsure_note(self.detector, self._no_detector)
                        self.pred = PredictionPanel(self.fonts, self.scale, note, on_bar_click=actions.correct,
                                                    to_engine=self.show_engine)
                        self.engine = EnginePanel(self.fonts, self.scale, self._model_line(), self.gpu,
                                                  self.backend_reasons, self.kernel_lists, self.state, actions)
            self.status = StatusBar(self.gpu.available, gpu_line(self.gpu), self.scale)
        dpg.bind_item_theme(self._right, style.flush_theme())
        self.help = HelpOverlay(self.fonts, self.scale, self.shortcuts)
        self.learn = LearnPanel(self.fonts, self.scale, Learner(self.drawings_dir), userdata.personal_model_path(),
                                self.draw.root, state=self.state, canvas=self.canvas, drawings_dir=self.drawings_dir,
                                base=self._model, status=self.status, save=self.save, use_model=self.use_model)
        with dpg.handler_registry():
            # Input marks the window active (full frame rate); see step().
            for add in (dpg.add_key_press_handler, dpg.add_mouse_click_handler, dpg.add_mouse_wheel_handler):
                add(callback=self._touch)

    def _touch(self) -> None:
        self._last_active = time.perf_counter()

    def relayout(self) -> None:
        """Fit the panels to the viewport (called when its size changes)."""
        w, h = dpg.get_viewport_client_width(), dpg.get_viewport_client_height()
        self._viewport_size = (w, h)
        L = layout.plan(w, h, self.scale)
        fitted = self._layout is None or self._layout.reading_fits
        if self._layout is not None and L.mode != self._layout.mode:
            # a new arrangement gives the tab bar a new identity in Dear PyGui, which opens its
            # first tab: the one open stays open
            self._want_tab = self._want_tab or dpg.get_value(self.engine.tabs)
        self._layout = L
        dpg.configure_item(self._row, horizontal=L.mode != "one")
        dpg.configure_item(self._pair, horizontal=L.mode == "wide")
        dpg.configure_item(self._right, width=L.right_w, height=L.right_h if L.mode != "one" else 0,
                           auto_resize_y=L.mode == "one", no_scrollbar=L.mode != "two")
        dpg.configure_item(self._root, no_scrollbar=L.mode != "one")
        self.draw.layout(L)
        self.pred.layout(L)
        self.engine.layout(L)
        self.engine.show_model(self._model_line())
        self.learn.layout(L)
        self.help.layout(w, h)
        if fitted and not L.reading_fits:  # said when it stops fitting
            note = self.reading_note
            self.status.say(note[0].upper() + note[1:])

    def show_engine(self) -> None:
        """Scroll the right column to the engine panel (two columns: it is below the prediction)."""
        dpg.set_y_scroll(self._right, float(dpg.get_item_pos(self.engine.root)[1]))

    @property
    def layout(self) -> layout.Layout | None:
        return self._layout

    @property
    def reading_note(self) -> str:
        """"" while the digit read and its probabilities fit the window together (Layout.reading_fits), else
        the one line that says they do not and what to do (the status line says it when it happens, and
        `gemmpad app` on the terminal at start): at too large a UI scale for the screen the window scrolled
        them out of sight, saying nothing."""
        L = self._layout
        if L is None or L.reading_fits:
            return ""
        w, h = self._viewport_size
        fits = layout.fitting_scale(w, h, self.scale)
        return (f"at UI scale {self.scale:g} the digit read and its ten probabilities cannot show together in a "
                f"window {h} px high: " + (f"start gemmpad with --scale {fits:g} (or make the window taller)"
                                           if fits is not None else "make the window taller"))

    @property
    def model(self) -> Model:
        """The weights reading now."""
        return self._model

    def _model_line(self) -> str:
        """The weights in use and what they scored (from the model card, when there is one)."""
        model = self._model
        name = model.path.name if model.path is not None else "weights given in memory"
        return "  ·  ".join([name, *model.scores()])

    # -------------------------------------------------------------- the frame
    def step(self) -> None:
        """One frame: input, canvas, inference hand-off, results, render."""
        now = time.perf_counter()
        if self._last_frame_start is not None:
            self.frame_times.append(now - self._last_frame_start)
            del self.frame_times[:-HISTORY]
        self._last_frame_start = now

        # (and at the second frame: text sizes, which fit the model line, are known from the first on)
        if (dpg.get_viewport_client_width(), dpg.get_viewport_client_height()) != self._viewport_size \
                or self.frames == 1:
            self.relayout()
            self._touch()
        self._poll_mouse()
        self._poll_keys()
        queue = dpg.get_callback_queue()
        if queue:
            dpg.run_callbacks(queue)
        self._apply_pointer()
        self._submit()
        result = self.worker.take()
        if result is not None:
            self._apply(result)
            self._touch()
        if self.race is not None:
            self.engine.race.show(self.race)
        self._keep_tab()
        self._show_lab()
        pending = self.pending
        self.pred.show_pending(pending)
        self.draw.show_pending(pending)
        if self.learn.poll() or self.state.continuous or self.worker.busy or (
                self.race is not None and self.race.running):
            self._touch()
        self.status.update(self._viewport_size[0], self._frame_ms())
        self.draw.place_hint(self.canvas.empty and self.frames > 0)
        self.work_times.append(time.perf_counter() - now)
        del self.work_times[:-HISTORY]
        dpg.render_dearpygui_frame()
        self._keep_tab(rendered=True)
        self.frames += 1
        if self.startup_s is None:
            self.startup_s = time.perf_counter() - self._t_start

    @property
    def pending(self) -> bool:
        """A reading is shown, but of an earlier drawing, and the new one has been on its way a while."""
        return (self.state.reading.prediction is not None and not self.canvas.empty and self._stale_since is not None
                and self._shown_version != self.canvas.version
                and time.perf_counter() - self._stale_since > PENDING_AFTER_S)

    def _show_lab(self) -> None:
        """Refresh the Lab tab while it is open, when the kernel, batch or figures changed."""
        shown = self.state.reading
        if (self._want_tab or dpg.get_value(self.engine.tabs)) != self.engine.lab_tab or not shown.kernel:
            return
        rung = self.state.lab_rung or shown.kernel
        running = rung == shown.kernel  # live figures only for the kernel that produced them
        layer_us, history = (shown.layer_us, shown.history) if running else ((), [])
        key = (rung, shown.batch, layer_us, len(history), history[-1] if history else None)
        now = time.perf_counter()
        if key == self._lab_key or (self._lab_key is not None and key[:2] == self._lab_key[:2]
                                    and now - self._lab_at < LAB_REFRESH_S):
            return
        self._lab_key, self._lab_at = key, now
        self.engine.lab.show(lab_view(rung, shown.batch, self.gpu, layer_us, history, sizes=self._model.layers), rung)

    def show_tab(self, tab: int | str) -> None:
        """Open one of the engine's tabs. Dear PyGui writes the tab bar's drawn choice back into
        its value, so a tab set while the bar is scrolled out of sight was undone: asked for
        again each frame (_keep_tab) until the bar shows it."""
        self._want_tab = tab
        dpg.set_value(self.engine.tabs, tab)

    def _keep_tab(self, rendered: bool = False) -> None:
        """Before a frame's render: ask for the wanted tab again. After it: done once the bar was
        drawn with that tab open (the value read before a render is our own, not the bar's)."""
        if self._want_tab is None:
            return
        if not rendered:
            dpg.set_value(self.engine.tabs, self._want_tab)
        elif dpg.get_value(self.engine.tabs) == self._want_tab and dpg.is_item_visible(self.engine.tabs):
            self._want_tab = None

    def set_lab_rung(self, rung: str | None) -> None:
        """Show `rung` in the Lab tab (any registered kernel, runnable here or not); None: the running one."""
        self.state.show_rung(rung)

    def _frame_ms(self) -> float | None:
        """The median frame time of the last 60 frames while active (idle frames are slow on purpose)."""
        if not self.frame_times or self.idle:
            return None
        return 1e3 * float(np.median(self.frame_times[-60:]))

    @property
    def idle(self) -> bool:
        """Nothing happened for IDLE_AFTER_S: run() slows the frames to IDLE_FPS."""
        return time.perf_counter() - self._last_active > IDLE_AFTER_S

    def run(self) -> None:
        """The interactive loop, until the window is closed or Ctrl+Q."""
        events = WindowEvents()
        watch = InputWatch(rect=_viewport_rect) if not events.available else None
        fps = IDLE_FPS_WATCHED if events.available or (watch is not None and watch.available) else IDLE_FPS_BLIND
        try:
            while dpg.is_dearpygui_running() and not self._quit:
                t0 = time.perf_counter()
                self.step()
                if self.idle:
                    self._wait_for_input(events, watch, t0 + 1.0 / fps)
        finally:
            if watch is not None:
                watch.close()

    def _wait_for_input(self, events: WindowEvents, watch: InputWatch | None, deadline: float) -> None:
        """Sleep until `deadline`, or until input arrives (then go active): an event queued for
        the window, or (where that cannot be waited on) a change the X server reports."""
        self._last_frame_start = None  # a wait is no frame time: "frame 377 ms · 3 fps" after waking
        if watch is None:
            while (left := deadline - time.perf_counter()) > 0:
                if events.wait(left):
                    self._touch()
                    return
            return
        watch.changed()  # the state after the frame is the reference
        while (left := deadline - time.perf_counter()) > 0:
            time.sleep(min(WATCH_S, left))
            if watch.changed():
                self._touch()
                return

    def close(self) -> None:
        if self.race is not None:
            self.race.cancel()
        self.learn.learner.cancel()
        self.worker.close()
        dpg.destroy_context()

    # ------------------------------------------------------------------ input
    def feed(self, kind: str, x: float = 0.0, y: float = 0.0) -> None:
        """A pointer event in canvas pixels ("down", "move", "up"), applied next frame.

        The mouse goes through here too, so tests and --replay exercise the
        same path as a hand.
        """
        if kind not in ("down", "move", "up"):
            raise ValueError(f"pointer event must be down, move or up, got {kind!r}")
        self._pointer.append((kind, float(x), float(y)))

    def _poll_mouse(self) -> None:
        # A click both pressed and released since the last frame reads as "clicked", not "down":
        # it still starts (and the next frame ends) a stroke, so a 5 ms tap leaves a dot.
        down = dpg.is_mouse_button_down(dpg.mvMouseButton_Left) or dpg.is_mouse_button_clicked(dpg.mvMouseButton_Left)
        mx, my = dpg.get_mouse_pos(local=False)
        if (mx, my) != self._last_mouse or down:
            self._touch()
            self._last_mouse = (mx, my)
        cx, cy = self.draw.to_canvas(mx, my)
        ch, cw = self.canvas.size
        over = dpg.is_item_hovered(self.draw.image) and 0 <= cx < cw and 0 <= cy < ch
        self.draw.show_ring(mx, my, over or self._mouse_stroke)
        if down and not self._mouse_down:
            # A stroke starts only on the canvas (and not under an open popup).
            if over:
                self.feed("down", cx, cy)
                self._mouse_stroke = True
        elif down and self._mouse_stroke:
            self.feed("move", cx, cy)
        elif not down and self._mouse_stroke:
            self.feed("up")
            self._mouse_stroke = False
        self._mouse_down = down

    def _poll_keys(self) -> None:
        ctrl = dpg.is_key_down(dpg.mvKey_LControl) or dpg.is_key_down(dpg.mvKey_RControl)
        shift = dpg.is_key_down(dpg.mvKey_LShift) or dpg.is_key_down(dpg.mvKey_RShift)
        for key in dict.fromkeys(s.key for s in self.shortcuts):  # each key once, in order
            if dpg.is_key_pressed(key):
                self.shortcut(key, ctrl=ctrl, shift=shift)

    def shortcut(self, key: int, ctrl: bool = False, shift: bool = False) -> bool:
        """Run the action bound to a key press; False if none is bound."""
        for s in self.shortcuts:
            if s.key == key and s.ctrl == ctrl and s.shift == shift:
                s.action()
                return True
        return False

    def _apply_pointer(self) -> None:
        events, self._pointer = self._pointer, []
        for kind, x, y in events:
            if kind == "down":
                self.canvas.press(x, y)
            elif kind == "move":
                self.canvas.move(x, y)
            else:
                self.canvas.release()
        if events:
            self.draw.upload()

    # ---------------------------------------------------------------- actions
    @property
    def message(self) -> str:
        """The status bar's message on show now."""
        return self.status.message

    def say(self, text: str) -> None:
        self.status.say(text)

    def clear(self) -> None:
        """Wipe the canvas (undoable); the save label belongs to the drawing, so it resets."""
        self.canvas.clear()
        self.draw.reset_label()
        self.draw.upload()

    def undo(self) -> None:
        """Take back the last correction (when nothing was drawn since), else the last stroke or clear."""
        if self.learn.undo_correction():
            return
        if self.canvas.undo():
            self.draw.upload()

    def redo(self) -> None:
        if self.canvas.redo():
            self.draw.upload()

    def set_brush(self, width: float) -> None:
        self.canvas.brush = width
        dpg.set_value(self.draw.brush, self.canvas.brush)

    def set_backend(self, backend: str) -> None:
        reason = self.backend_reasons.get(backend)
        if reason is None:
            raise ValueError(f"unknown backend {backend!r}")
        if reason:
            self.say(f"{BACKEND_LABELS[backend]} unavailable: {reason}")
            return
        if backend != self.state.backend:
            self.state.choose(backend=backend)  # the worker names the backend's default kernel
            self._refresh_controls()

    def set_kernel(self, kernel: str) -> None:
        """Run `kernel`; one of another usable backend (picked in the menu, which lists them all)
        switches to that backend first. The Lab tab follows it again."""
        if kernel not in self.kernel_lists.get(self.state.backend, []):
            owner = next((b for b, ks in self.kernel_lists.items() if kernel in ks), None)
            if owner is None:
                raise ValueError(f"kernel {kernel!r} is not offered on any usable backend")
            self.set_backend(owner)
        self.state.choose(kernel=kernel)
        self._refresh_controls()

    def set_batch(self, batch: int) -> None:
        if not 1 <= batch <= BATCHES[-1]:
            raise ValueError(f"batch must be in 1..{BATCHES[-1]}, got {batch}")
        self.state.choose(batch=batch)
        self._refresh_controls()

    def set_continuous(self, on: bool) -> None:
        self.state.choose(continuous=on)
        dpg.set_value(self.engine.continuous_box, on)

    def set_warm(self, on: bool) -> None:
        self.state.choose(warm=on)
        dpg.set_value(self.engine.warm_box, on)

    def next_backend(self) -> None:
        usable = [b for b, r in self.backend_reasons.items() if not r]
        self.set_backend(usable[(usable.index(self.state.backend) + 1) % len(usable)])

    def next_kernel(self, step: int = 1) -> None:
        ks = self.kernel_lists[self.state.backend]
        kernel = self.state.kernel
        cur = ks.index(kernel) if kernel in ks else len(ks) - 1
        self.set_kernel(ks[(cur + step) % len(ks)])

    def race_toggle(self) -> None:
        """Start a race of every kernel on the drawing at the current batch, or cancel the
        one running. It runs on its own thread: drawing and reading go on meanwhile."""
        if self.race is not None and self.race.running:
            self.race.cancel()
            return
        if preprocess(self.canvas.image) is None:
            self.say("Draw a digit first: the race runs the kernels on it")
            return
        entrants = [(b, k) for b, reason in self.backend_reasons.items() if not reason for k in self.kernel_lists[b]]
        self.race = Race(self._model, entrants, self.canvas.image, self.state.batch).start()
        self.show_tab(self.engine.race_tab)

    def toggle_help(self, show: bool | None = None) -> None:
        self.help.toggle(show)

    def quit(self) -> None:
        self._quit = True

    def save(self, label: int | None = None) -> Path | None:
        """Write the drawing as a PNG (ink white on black, like MNIST) plus its strokes.

        Unlabelled drawings go to <drawings>/unlabelled/, labelled ones to
        <drawings>/<digit>/ (an ImageFolder layout, ready for fine-tuning). `label`
        None takes the label chosen in the panel; either way the choice resets after
        the save, so the next drawing is not filed under this one's digit.
        """
        if self.canvas.empty:
            self.say("Nothing to save: the canvas is empty")
            return None
        if label is None:
            label = self.draw.chosen_label()
        folder = self.drawings_dir / (str(label) if label is not None else "unlabelled")
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")[:-3]
        png = folder / f"{stamp}.png"
        pixels = np.round(np.clip(self.canvas.image, 0.0, 1.0) * 255.0).astype(np.uint8)
        try:
            # one unit (gemmpad.inputs.files): a full disk leaves neither, never a PNG without its strokes,
            # which Learn would take as a picture; the PNG is named last, as the drawing's arrival
            with atomic_paths(png.with_suffix(".json"), png) as (json_tmp, png_tmp):
                json_tmp.write_text(strokes.dumps(self.canvas.strokes(), self.canvas.widths(), self.canvas.size),
                                    encoding="utf-8")
                Image.fromarray(pixels, mode="L").save(png_tmp)
        except OSError as exc:  # a full disk or a folder we may not write: say so, keep the drawing
            self.error = f"Not saved: {exc}"
            self.status.say(self.error, error=True)
            return None
        self.draw.reset_label()
        self.say(f"Saved {png.relative_to(self.drawings_dir)} in {self.drawings_dir}")
        self.learn.refresh()  # a labelled drawing is one Learn trains on: the list shows it
        self.learn.learner.prefetch()  # painted now, in the background, not when L is pressed
        return png

    def use_model(self, model: Model, found: tuple[unsure.Detector | None, str] | None = None) -> None:
        """Read with `model` from the next frame on (Learn's new weights, or Reset's), with its unsure
        detector: `found` (Learn's carried one, and why there is none) or the one beside the model (a
        detector belongs to one set of weights: the old one's stays with the old weights)."""
        self.detector, self._no_detector = found if found is not None else unsure.for_model(model)
        shown = self.state.reading
        self.worker.use(Classifier(model, backend=shown.backend, kernel=shown.kernel), self.detector)
        self.pred.show_unsure_note(unsure_note(self.detector, self._no_detector))
        self._model = model
        self.engine.show_model(self._model_line())
        self._submitted_version = -1  # the drawing on the canvas is read again by the new weights

    # ---------------------------------------------------- inference hand-off
    def _submit(self) -> None:
        config = self.state.request()
        changed = self.canvas.version != self._submitted_version or config != self._submitted_config
        if self.canvas.empty and self.canvas.version != self._submitted_version:
            # Just cleared: blank the reading now rather than after the worker's current job.
            self.state.blank()
            self.pred.show(None)
            self.draw.show_reading(None)
            self.pred.show_hidden(None, ())
        # An empty canvas is still sent on a change: the worker switches backend or
        # kernel and reports what it resolved, and classify() returns None cheaply.
        if changed or (self.state.continuous and not self.canvas.empty and not self.worker.busy):
            self._last_seq = self.worker.submit(self.canvas.image, *config)
            self._sent = {seq: v for seq, v in self._sent.items() if seq > self._last_seq - 8}
            self._sent[self._last_seq] = (self.state.batch, self.canvas.version, time.perf_counter())
            if self.canvas.version != self._shown_version and self._stale_since is None:
                self._stale_since = self._sent[self._last_seq][2]
            self._submitted_version, self._submitted_config = self.canvas.version, config

    def _apply(self, r: Result) -> None:
        self.error = r.error
        batch, self._shown_version, _ = self._sent.get(r.seq, (self.state.batch, -1, 0.0))
        # still behind the canvas: the drawing is late by as long as the oldest request after this one
        later = [sent for seq, (_, _, sent) in self._sent.items() if seq > r.seq]
        self._stale_since = None if self._shown_version == self.canvas.version else min(later, default=None)
        prediction = None if self.canvas.empty else r.prediction
        chosen = self.state.backend, self.state.kernel
        # Only the newest request's answer speaks for the choice: an older one describes an older choice.
        newest = r.seq == self._last_seq
        self.state.show(Reading(r.backend, r.kernel, batch, prediction,
                                r.unsure if prediction is not None else None, r.history, r.layer_us,
                                r.hidden if prediction is not None else None, r.hidden_us),
                        refused=newest and bool(r.error))
        if (self.state.backend, self.state.kernel) != chosen:  # a default named, or a choice withdrawn
            self._submitted_config = self.state.request()  # (a withdrawn choice is not asked for again)
            self._refresh_controls()
        self.pred.show(prediction, self.state.reading.unsure)
        self.draw.show_reading(prediction, self.state.reading.unsure)
        self.pred.show_hidden(self.state.reading.hidden, r.layer_us, r.kernel, r.hidden_us)
        self.engine.show_latency()
        if self.error:
            self.status.say(self.error, error=True)
        else:
            self.status.clear_error()

    def latency_stats(self) -> dict[str, float]:
        """Median and p99 of kernel and end-to-end time over this configuration's frames."""
        history = self.state.reading.history
        return timing_stats(history) if history else {}

    def _refresh_controls(self) -> None:
        self.engine.show_controls()
