"""Teach it your handwriting: correct a wrong answer, Learn, and (one click) go back.

- A correction: the person says the right digit (a click on its bar in the probability
  chart, or its key); the drawing is saved under that digit in the drawings folder
  (strokes with brush widths and canvas size, and a PNG: the window's save, handed to the
  panel). The section, under the canvas, lists the corrections as Learn reads them
  (`corrections`), each relabelled or deleted with a click, and lists the files Learn skips
  (it cannot read them, or they hold no ink), each deleted with a click; Ctrl+Z right after a
  correction takes it back.
- Learn (button or L): `Learner` fine-tunes in a background thread, always from the
  base model (the shipped one, or --model) on every correction so far, so Learns do not
  compound each other's drift; the window keeps drawing and reading meanwhile and shows
  the progress. A fifth of each digit's drawings (where it has five or more) are held
  out, and the panel shows before/after on them and on MNIST test (the figure the new
  model's card records; the model line shows the card's figures, the one source of them).
  An accepted model is saved atomically as the personal model (gemmpad.data.userdata), with
  the base's unsure detector carried over to it (gemmpad.runtime.unsure.carried), and
  reads the next frame; one the 0.3-point MNIST rule refuses is shown with the reason and
  a "Use it anyway" button.
- A Learn that fails says why and what to do in the panel, in red, until dismissed (or the
  next Learn); the time it shows runs from the key press, the first Learn's loading of the
  sets it compares with (gemmpad.learn.rehearsal) included, unless the window loaded them at start.
- Reset: the base model reads again, and the personal model file is moved aside
  (personal-model.previous.npz; one that cannot be read goes to personal-model.broken.npz
  instead, so that it never replaces a good one kept by the Reset before), so the next start
  uses the base model too; nothing is deleted, and the last Learn's figures and time are
  taken down.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import dearpygui.dearpygui as dpg
import numpy as np
from PIL import Image

from gemmpad.data import drawings, userdata
from gemmpad.learn import finetune
from gemmpad.errors import GemmpadError
from gemmpad.inputs.files import claim
from gemmpad.inputs.images import SUFFIXES
from gemmpad.runtime import unsure
from gemmpad.runtime.model import Model, default_model_path, load_model
from gemmpad.terminal import counted, printable
from gemmpad.ui import style
from gemmpad.ui.canvas import Canvas
from gemmpad.ui.draw_panel import heading, set_shown, tip
from gemmpad.ui.layout import INNER, SCROLLBAR, Layout
from gemmpad.ui.state import State
from gemmpad.ui.status_bar import StatusBar
from gemmpad.ui.style import Fonts
from gemmpad.ui.workers.learner import SETTINGS, Learner

# The window's use_model: read with this model from the next frame, with its unsure detector and
# why there is none (None: the one found beside the model, gemmpad.runtime.unsure.for_model).
UseModel = Callable[[Model, tuple[unsure.Detector | None, str] | None], None]


def help_section() -> tuple[str, str]:
    """The help overlay's paragraph on corrections, naming this person's data folder."""
    return ("Teach it your handwriting",
            "When a reading is wrong, click the right digit's bar in the chart or press its key: the drawing is "
            f"kept as a correction in {userdata.drawings_dir()}. Learn (L) fine-tunes the model on your "
            "corrections in a second or two and shows what it reads before and after; the personal model is "
            f"saved as {userdata.personal_model_path()} and used at the next start. Reset goes back to the "
            "shipped model. `gemmpad info` names the folder too.")


THUMB = 36  # a correction's thumbnail on screen, at scale 1
THUMB_PX = 28  # its texture: the drawing as small as MNIST's
LABEL_W = 10  # the digit it is filed as, beside it (small font), at scale 1
REVEAL_FRAMES = 4  # frames to bring a Learn's outcome into view in (it is laid out within two)
ACTION_W = 112  # "Use it anyway" and Dismiss, beside the bar, at scale 1
# why Learn skips a file (Skipped's second half), in the panel's words
UNREADABLE, NO_INK = "cannot be read", "has no ink"
Skipped = tuple[Path, str]  # a file Learn skips, and why (UNREADABLE or NO_INK)


def corrections(folder: Path, read: Callable[[Path], object]) -> tuple[list[tuple[int, Path]], list[Skipped]]:
    """The labelled drawings Learn reads (gemmpad.data.drawings.read_folder), in its order, and the
    files it skips. Per digit folder, one file a name: the strokes file where `read` can use it,
    else the picture (`read` raises drawings.NoInk for a file that holds no ink, OSError or
    GemmpadError for one it cannot read: Learn's own tests, as `thumbnail` makes them); a name
    none of whose files can be used is skipped, named by its file with no ink where it has one
    (the drawing is there, but blank), else by its first. Listed without reading, a corrupt file
    was counted as a correction that Learn then skipped; read without Learn's ink test, so was a
    blank one."""
    out: list[tuple[int, Path]] = []
    skipped: list[Skipped] = []
    for digit in range(10):
        sub = folder / str(digit)
        try:
            files = sorted(f for f in sub.iterdir() if not f.name.startswith(".")) if sub.is_dir() else []
        except OSError:
            continue
        by_stem: dict[str, list[Path]] = {}
        for f in files:
            if f.suffix.lower() == ".json" or f.suffix.lower() in SUFFIXES:
                by_stem.setdefault(f.stem, []).append(f)
        for stem in sorted(by_stem):
            tries = sorted(by_stem[stem], key=lambda p: p.suffix.lower() != ".json")
            blank: Path | None = None
            for f in tries:
                try:
                    read(f)
                except drawings.NoInk:
                    blank = blank or f
                    continue
                except (OSError, GemmpadError):
                    continue
                out.append((digit, f))
                break
            else:
                skipped.append((blank, NO_INK) if blank is not None else (tries[0], UNREADABLE))
    return out, skipped


def in_folder(note: str, folder: Path) -> str:
    """A reader's note ("skipped /home/.../drawings/4/x.png: ...") with the files named within `folder`,
    as the panel's count and list name them ("skipped 4/x.png: ...")."""
    return note.replace(f"{folder}{os.sep}", "")


def _siblings(path: Path) -> list[Path]:
    """A correction's files: its strokes and its picture (the same name, another suffix)."""
    return [f for f in path.parent.glob(f"{path.stem}.*") if f.stem == path.stem]


def thumbnail(path: Path) -> list[float]:
    """A drawing as Learn reads it (gemmpad.data.drawings.pixels), THUMB_PX x THUMB_PX RGBA floats
    coloured as the canvas is; raises where Learn skips it, by Learn's own tests: drawings.NoInk
    where it holds no ink (drawings.inked), OSError or GemmpadError where it cannot be read."""
    pixels, _ = drawings.pixels(path)
    drawings.inked(pixels)
    image = pixels / 255.0 if pixels.dtype == np.uint8 else pixels
    ink = Image.fromarray(np.uint8(np.round(np.clip(image, 0.0, 1.0) * 255)))
    small = np.asarray(ink.resize((THUMB_PX, THUMB_PX), Image.BILINEAR), np.float32)
    rgba = np.empty((THUMB_PX, THUMB_PX, 4), np.float32)
    style.colourise(small / 255.0, rgba)
    return rgba.ravel().tolist()


def _reason(exc: Exception) -> str:
    """What went wrong, for a status line: an OSError's words without its errno and paths."""
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


class LearnPanel:
    """The widgets, a section at the bottom of the drawing column (`parent`), and what their
    buttons do. It was a window of its own over the engine panel: opened, it hid the latency
    plot, and at small sizes the canvas's buttons.

    It reads the reading shown (`state`) and the canvas, and asks the window for two things,
    given here rather than the window itself (issue 41): `save` files the drawing under a
    digit, `use_model` reads with new weights from the next frame. What it says goes to the
    status bar. `base` is the model the window started with: what Learn fine-tunes."""

    def __init__(self, fonts: Fonts, scale: float, learner: Learner, personal_path: Path, parent: int | str, *,
                 state: State, canvas: Canvas, drawings_dir: Path, base: Model, status: StatusBar,
                 save: Callable[[int], Path | None], use_model: UseModel) -> None:
        self.learner = learner
        self.personal_path = personal_path
        self.state, self.canvas, self.drawings_dir, self.status = state, canvas, drawings_dir, status
        self._save, self._use_model = save, use_model
        self._base = base  # the model the window started with (base_model() says what Learn starts from)
        self.outcome: finetune.Outcome | None = None  # the last result (refused ones wait for "Use it anyway")
        self._examples: list[drawings.Example] = []
        self._skipped: list[str] = []  # the last Learn's notes (files it skipped, and why), for its figures
        self.figures = ""
        self.scale = scale
        self.fonts = fonts
        s = scale
        # its own scrolling region: what does not fit scrolls here, never the dashboard
        with dpg.child_window(parent=parent, border=False, height=-1) as self.root:
            tip(heading("Teach it your handwriting", fonts),
                "When a reading is wrong, click the right digit's bar or press its key: the drawing is kept as a "
                "correction, listed here. Learn fine-tunes the model on exactly these.")
            with dpg.group(horizontal=True) as self.buttons:
                self.learn_btn = dpg.add_button(label="Learn (L)")
                tip(self.learn_btn, "Fine-tune the model on your corrections, mixed with a replay of its training "
                                    "data so it keeps reading everyone else (L).")
                self.reset_btn = dpg.add_button(label="Reset")
                tip(self.reset_btn, "Read with the model you started from (the shipped one) again; your personal "
                                    "model is moved aside (personal-model.previous.npz), your drawings stay.")
            # A Learn's outcome right under the buttons, before the count and the list: below them, at the
            # default size it showed only once the section scrolled to it, the buttons out of sight.
            with dpg.group(horizontal=True, show=False) as self.bar_row:  # shown with what it holds (`_offer`)
                # shown only while a Learn runs, and after: idle and empty it looked like a text field
                self.progress = dpg.add_progress_bar(default_value=0.0, width=-1, overlay="", show=False)
                # what the outcome asks of the person, beside the bar (`_offer`)
                self.insist_btn = dpg.add_button(label="Use it anyway", width=round(ACTION_W * s))
                tip(self.insist_btn, "Use and keep the model this Learn made, although it reads MNIST test worse.")
                self.dismiss_btn = dpg.add_button(label="Dismiss", width=round(ACTION_W * s))
                tip(self.dismiss_btn, "Take this message down (a new Learn does too).")
            self.figures_text = dpg.add_text("", wrap=round(380 * s), show=False)
            dpg.bind_item_font(self.figures_text, fonts.small)
            # a failed Learn says why and what to do here, until dismissed: a status line fades
            self.error_text = dpg.add_text("", wrap=round(380 * s), color=style.BAD, show=False)
            # how many, and what to do: on a line of its own (beside the buttons it was cut at scale 2)
            self.count_text = dpg.add_text("", wrap=round(380 * s), color=style.MUTED)
            dpg.bind_item_font(self.count_text, fonts.small)
            # the corrections, as Learn will read them: a thumbnail each; a click relabels or deletes
            self.list_group = dpg.add_group()
            with dpg.theme() as tight, dpg.theme_component(dpg.mvAll):
                dpg.add_theme_style(dpg.mvStyleVar_FramePadding, 2 * s, 2 * s, category=dpg.mvThemeCat_Core)
                dpg.add_theme_style(dpg.mvStyleVar_ItemSpacing, 6 * s, 2 * s, category=dpg.mvThemeCat_Core)
                dpg.add_theme_style(dpg.mvStyleVar_ButtonTextAlign, 0, 0.5, category=dpg.mvThemeCat_Core)
            dpg.bind_item_theme(self.list_group, tight)
        with dpg.texture_registry() as self._textures:
            pass
        self._thumbs: dict[tuple[Path, float], int | str] = {}  # (file, mtime) -> its texture
        self.listed: list[tuple[int, Path]] = []  # what the list shows: (digit, file), in Learn's order
        self.skipped: list[Skipped] = []  # the files in the corrections' folders that Learn skips, and why
        self._per_row = 8
        self._menus: list[int | str] = []  # each thumbnail's menu
        self._rebuild = False  # the list's widgets are rebuilt next frame (poll), after its menu closed
        self._last: tuple[Path, int] | None = None  # the newest correction and the canvas version it saved
        # shown this frame, scrolled into view the next (when it has a place): a Learn's figures, or
        # its error, can reach below the section's fold at the default size
        self._reveal: tuple[int | str, int] | None = None  # (the outcome's last item, frames left to try)
        self._offer(None)
        dpg.configure_item(self.learn_btn, callback=lambda: self.learn())
        dpg.configure_item(self.reset_btn, callback=lambda: self.reset())
        dpg.configure_item(self.insist_btn, callback=lambda: self.insist())
        dpg.configure_item(self.dismiss_btn, callback=lambda: self.dismiss())
        self.refresh()
        self.learner.prefetch(self.base_model())

    def layout(self, L: Layout) -> None:
        """Wrap the texts to the drawing column's width; as many thumbnails a row as fit."""
        content = L.draw_w - 2 * round(INNER * self.scale) - round(SCROLLBAR * self.scale)
        for t in (self.count_text, self.figures_text, self.error_text):
            dpg.configure_item(t, wrap=content)
        # a thumbnail, its padding and the digit beside it, and the spacing
        per_row = max(1, content // round((THUMB + 2 * 2 + LABEL_W + 6) * self.scale))
        if per_row != self._per_row:
            self._per_row = per_row
            self._show_list()

    # ------------------------------------------------------------ the corrections
    def refresh(self) -> None:
        """Read the drawings folder again: the count and the list (after a save, delete, relabel)."""
        self._read()
        self._show_list()

    def _read(self) -> None:
        """The corrections as Learn will read them, and the files it will skip; the count says both."""
        self.listed, self.skipped = corrections(self.drawings_dir, self._texture)
        self._show_count()

    def _texture(self, path: Path) -> int | str:
        """A correction's thumbnail, made once for each version of the file: reading the folder reads
        every correction through here (raising, as `thumbnail` does, where Learn skips it)."""
        key = (path, path.stat().st_mtime)
        if key not in self._thumbs:
            self._thumbs[key] = dpg.add_static_texture(THUMB_PX, THUMB_PX, thumbnail(path), parent=self._textures)
        return self._thumbs[key]

    def _show_list(self) -> None:
        dpg.delete_item(self.list_group, children_only=True)
        self._menus = []
        side = round(THUMB * self.scale)
        keep: set[int | str] = set()
        row: int | str | None = None
        for i, (digit, path) in enumerate(self.listed):
            if i % self._per_row == 0:
                row = dpg.add_group(horizontal=True, parent=self.list_group)
            try:
                texture = self._texture(path)
            except (OSError, GemmpadError):  # changed since it was read: the next read names it
                continue
            keep.add(texture)
            # the digit beside its thumbnail, not under it: under it, one correction at the default
            # size made the section scroll, the digit it is filed as out of sight
            with dpg.group(parent=row, horizontal=True, horizontal_spacing=round(2 * self.scale)):
                btn = dpg.add_image_button(texture, width=side, height=side)
                tip(btn, f"Filed as a {digit} ({path.name}): click to relabel or delete it.")
                dpg.bind_item_font(dpg.add_text(str(digit), color=style.MUTED), self.fonts.small)
            self._menu(btn, f"{path.name}, filed as a {digit}", path, digit)
        # the files Learn skips, under the thumbnails, each with a Delete in its menu: named only in the
        # count, a skipped file had to be found in the folder by hand
        for path, why in self.skipped:
            name = printable(str(path.relative_to(self.drawings_dir)))
            # as wide as the section, its words from the left and cut at its edge (the tooltip has them all)
            entry = dpg.add_button(label=f"{name} {why}", width=-1, parent=self.list_group)
            dpg.bind_item_font(entry, self.fonts.small)
            tip(entry, f"Learn skips {printable(path.name)}: it {why}. Click to delete it.")
            self._menu(entry, f"{name}: Learn skips it, it {why}", path)
        for key in [k for k, texture in self._thumbs.items() if texture not in keep]:
            dpg.delete_item(self._thumbs.pop(key))

    def _menu(self, anchor: int | str, title: str, path: Path, digit: int | None = None) -> None:
        """The menu a click on a listed file opens: what it is, relabel (a correction, filed as `digit`)
        and Delete."""
        with dpg.popup(anchor, mousebutton=dpg.mvMouseButton_Left) as menu:
            self._menus.append(menu)
            dpg.add_text(title, color=style.MUTED)
            if digit is not None:
                relabel = dpg.add_combo([str(d) for d in range(10)], default_value=str(digit), label="relabel as",
                                        width=round(60 * self.scale),
                                        callback=lambda _s, v, p: self.relabel(p, int(v)), user_data=path)
                tip(relabel, "File this drawing under another digit (Learn then trains on it as that digit).")
            delete = dpg.add_button(label="Delete", callback=lambda _s, _v, p: self.delete(p), user_data=path)
            tip(delete, "Delete this correction (its strokes and its picture): Learn no longer trains on it."
                if digit is not None else "Delete this file (and its other files of the same name in its folder).")

    def _changed(self) -> None:
        """After a menu's Delete or relabel: the list and count now, the widgets next frame. Deleted
        in this frame, the open menu stayed open in ImGui's popup stack and swallowed the next click."""
        for menu in self._menus:
            dpg.configure_item(menu, show=False)
        self._read()
        self._rebuild = True

    def delete(self, path: Path) -> None:
        """Delete a correction, or a file Learn skips: every file of its name in its digit's folder
        (strokes and PNG)."""
        for f in _siblings(path):
            f.unlink(missing_ok=True)
        self.status.say(f"Deleted {printable(path.stem)}")
        self._changed()

    def relabel(self, path: Path, digit: int) -> None:
        """File a correction under another digit."""
        dest = path.parent.parent / str(digit)
        if dest == path.parent:
            return
        dest.mkdir(parents=True, exist_ok=True)
        for f in _siblings(path):
            os.replace(f, dest / f.name)
        self.status.say(f"Filed {path.stem} as a {digit}")
        self._changed()

    def undo_correction(self) -> bool:
        """Ctrl+Z right after a correction (nothing drawn since) takes the correction back: its
        files are deleted and the drawing stays on the canvas. False when there is none to take."""
        if self._last is None or self._last[1] != self.canvas.version:
            return False
        path, self._last = self._last[0], None
        for f in _siblings(path):
            f.unlink(missing_ok=True)
        self.status.say(f"Took back the correction {path.stem}: the drawing is no longer kept")
        self.refresh()
        return True

    # ------------------------------------------------------------ actions
    def base_model(self) -> Model:
        """What Learn starts from and Reset returns to: the model the window started with,
        unless that is the personal model, then the shipped one."""
        current = self._base
        if current.path is not None and Path(current.path).resolve() == self.personal_path.resolve():
            return load_model(default_model_path())
        return current

    def correct(self, digit: int) -> None:
        """The drawing on the canvas is a `digit`: save it as a correction."""
        if self.canvas.empty:
            self.status.say("Draw a digit first, then click the right digit's bar (or press its key)")
            return
        read = self.state.reading.prediction.digit if self.state.reading.prediction is not None else None
        saved = self._save(digit)
        if saved is not None:
            self._last = (saved, self.canvas.version)
            n = sum(d == digit for d, _ in self.listed)  # as Learn reads them (the save read the folder again)
            misread = f" (it read {read})" if read is not None and read != digit else ""
            self.status.say(f"Saved as {'an' if digit == 8 else 'a'} {digit}{misread}: {counted(n, 'drawing', 'd')} "
                            f"of {digit}. L learns; Ctrl+Z takes it back.")

    def learn(self) -> None:
        """Fine-tune on the corrections in the background. With none, nothing starts: the count under
        the buttons says what to do, and the error a Learn on nothing showed below it scrolled the
        section to it, the Learn and Reset buttons out of sight."""
        if not self.listed:
            self.refresh()  # (drawings put in the folder by hand since it was read)
            if not self.listed:
                self.status.say("Nothing to learn: no corrections yet")  # short: whole at the default size
                return
        if self.learner.start(self.base_model()):
            self.dismiss()  # (and "Use it anyway" with it: `_offer`)
            self._show_figures("")
        else:
            self.status.say("Learning already")

    def reset(self) -> None:
        """Back to the base model, now and at the next start; the personal model is kept aside (where
        it cannot be, it stays in place, whole, and the window says so: the base reads now all the same)."""
        if self.learner.running:
            self.learner.cancel()
            self.learner.take()
        kept, aside = self._put_aside()
        base = self.base_model()
        self._use_model(base, None)
        self.outcome = None
        self._show_figures("")
        # "learned in 2.3 s" described the model just put aside
        dpg.configure_item(self.progress, overlay="", show=False)
        self._offer(None)
        name = base.path.name if base.path else "the base model"
        if kept:
            self.status.say(f"Reading with {name} now, but your personal model could not be moved aside ({kept}): "
                            "the next start reads with it again", error=True)
        elif aside.stem.endswith(".broken"):
            self.status.say(f"Reading with {name} again; your personal model could not be read and is kept as "
                            f"{aside.name}")
        else:
            self.status.say(f"Reading with {name} again")

    def _put_aside(self) -> tuple[str, Path]:
        """Move the personal model, its card and its detector to their .previous names, all or none
        (one moved and the others not would pair a model with another's card or detector); a model
        that cannot be read goes to .broken names instead, leaving a readable one put aside before
        where it is. Returns why they stay where they are (or "") and where the model went."""
        mine = self.personal_path
        kind = "previous"
        if mine.exists():
            try:
                load_model(mine)
            except (GemmpadError, OSError):
                kind = "broken"
        where = mine.with_name(f"{mine.stem}.{kind}.npz")
        aside = dict(zip(finetune.personal_files(mine), finetune.personal_files(where)))
        moved: list[tuple[Path, Path]] = []
        try:
            with claim(mine, "the personal model"):  # `gemmpad train` or fine-tune may be writing it
                for f, to in aside.items():
                    if f.exists():
                        os.replace(f, to)
                        moved.append((f, to))
        except (GemmpadError, OSError) as exc:
            for f, to in reversed(moved):
                with contextlib.suppress(OSError):
                    os.replace(to, f)
            return _reason(exc), where
        return "", where

    def insist(self) -> None:
        """"Use it anyway": the refused model reads from now on, and the panel says so."""
        if self.outcome is not None and not self.outcome.accepted:
            self.outcome = replace(self.outcome, accepted=True)
            unsaved = self._use(self.outcome)
            self._offer(None)
            dpg.configure_item(self.progress, overlay="used anyway" + (", not saved" if unsaved else ""))
            self._show_figures(self._figures_text(self.outcome, self._skipped))
            self._say_used("Using the model it made anyway", unsaved)

    def _use(self, outcome: finetune.Outcome) -> str:
        """Save `outcome` as the personal model and read with it; returns why it could not be saved
        (it reads all the same, until the window closes), or ""."""
        base = self.base_model()
        model, unsaved = Model(outcome.weights), ""
        try:
            with claim(self.personal_path, "the personal model"):  # `gemmpad train` may be writing it
                finetune.save_personal(outcome, base, self._examples, self.personal_path, SETTINGS)
            model = load_model(self.personal_path)  # with its card: the engine panel shows what it scored
        except (GemmpadError, OSError) as exc:
            unsaved = _reason(exc)
        self._base = base  # (the shipped model, where the window started with the personal one)
        # the detector carried over by Learn, also where the weights could not be saved beside it
        self._use_model(model, (outcome.detector, outcome.no_detector))
        return unsaved

    def _say_used(self, what: str, unsaved: str) -> None:
        """The status line once a Learn's model reads: saved, or why not (then in red: it is gone at the
        next start, which reads with the model before)."""
        if unsaved:
            self.status.say(f"{what}: it reads now but was not saved ({unsaved}); the next start reads with "
                            "the model before", error=True)
        else:
            self.status.say(f"{what}: it reads now, saved as {self.personal_path.name}")

    # ------------------------------------------------------------ every frame
    def poll(self) -> bool:
        """Show progress and take a finished Learn; True while one runs (frames keep coming)."""
        if self._rebuild:
            self._rebuild = False
            self._show_list()
        if self._reveal is not None:
            self._bring_into_view()
        if self.learner.running:
            text, fraction = self.learner.status
            dpg.set_value(self.progress, fraction)
            dpg.configure_item(self.progress, overlay=text[:60], show=True)
            dpg.configure_item(self.bar_row, show=True)
            return True
        result = self.learner.take()
        if result is None:
            return False
        dpg.set_value(self.progress, 1.0 if not isinstance(result, Exception) else 0.0)
        if isinstance(result, Exception):
            dpg.configure_item(self.progress, overlay="not learned")
            self.show_error(result)
            return False
        outcome, self._examples, notes = result
        self._skipped = [in_folder(n, self.drawings_dir) for n in notes]
        self.outcome = outcome
        self._show_figures(self._figures_text(outcome, self._skipped))
        self._reveal = (self.figures_text, REVEAL_FRAMES)
        if outcome.accepted:
            unsaved = self._use(outcome)
            took = time.perf_counter() - self.learner.pressed_at  # from the key press to the new model reading
            dpg.configure_item(self.progress, overlay=f"learned in {took:.1f} s" + (", not saved" if unsaved else ""))
            self._say_used(f"Learned {outcome.trained_on} drawings in {took:.1f} s on {outcome.engine}", unsaved)
        else:
            dpg.configure_item(self.progress, overlay="not used")
            self._offer(self.insist_btn)
            self.status.say(f"Not used: {outcome.reason}")
        return False

    def _bring_into_view(self) -> None:
        """Scroll the section so the outcome's last item shows whole, but never past the Learn and Reset
        buttons (scrolled to the outcome, they went out of sight): the outcome starts under them, so where
        it is too long to show whole, its start shows. Tried for a few frames: an item's place, and how
        far the section scrolls, are known a frame or two after the frame that shows it (a position in a
        child window is within its content; the window's own padding below the last item added)."""
        assert self._reveal is not None
        last, frames = self._reveal
        self._reveal = (last, frames - 1) if frames > 1 else None
        size = dpg.get_item_state(last).get("rect_size", (0, 0))[1]
        height, most = dpg.get_item_state(self.root).get("rect_size", (0, 0))[1], dpg.get_y_scroll_max(self.root)
        bottom = dpg.get_item_pos(last)[1] + size + 8 * self.scale
        if dpg.is_item_shown(last) and size and most > 0 and bottom > dpg.get_y_scroll(self.root) + height:
            buttons = dpg.get_item_pos(self.buttons)[1] - 4 * self.scale
            dpg.set_y_scroll(self.root, max(0.0, min(bottom - height, buttons, most)))

    def show_error(self, error: Exception) -> None:
        """Say in the panel, until dismissed, why the Learn failed and what to do (a GemmpadError's
        message says both); anything else is a fault of gemmpad's, said so."""
        text = (f"Not learned: {error}" if isinstance(error, GemmpadError) else
                f"Not learned: gemmpad failed ({type(error).__name__}: {error}). Your drawings are kept; "
                "please report this at the project's issue tracker.")
        dpg.set_value(self.error_text, text)
        dpg.configure_item(self.error_text, show=True)
        self._offer(self.dismiss_btn)
        self._reveal = (self.error_text, REVEAL_FRAMES)
        self.status.say(text, error=True)

    def dismiss(self) -> None:
        """Take the Learn error down, here and in the status bar (Dismiss, or the next Learn), and
        the "not learned" bar with it (it stayed under the corrections made after)."""
        if dpg.is_item_shown(self.error_text):
            self.status.clear_error()
            dpg.configure_item(self.progress, overlay="", show=False)
        dpg.set_value(self.error_text, "")
        dpg.configure_item(self.error_text, show=False)
        self._offer(None)

    def _offer(self, action: int | str | None) -> None:
        """Show `action` ("Use it anyway", or Dismiss) beside the bar, or neither (a new Learn, Reset): the
        bar leaves it its room. The row shows only with something in it: empty, it still took a line's
        spacing, and at the default size one correction made the section scroll."""
        for button in (self.insist_btn, self.dismiss_btn):
            set_shown(button, button == action)
        room = round((ACTION_W + 8) * self.scale) if action is not None else 1  # the button and the spacing
        dpg.configure_item(self.progress, width=-room)
        dpg.configure_item(self.bar_row, show=action is not None or dpg.is_item_shown(self.progress))

    def _show_figures(self, text: str) -> None:
        """Learn's before -> after figures; no line at all when there are none."""
        self.figures = text
        dpg.set_value(self.figures_text, text)
        dpg.configure_item(self.figures_text, show=bool(text))

    @staticmethod
    def _figures_text(o: finetune.Outcome, notes: list[str]) -> str:
        """Before -> after on your held-out drawings and on MNIST test (the figure the new model's
        card records). Learn's own "unseen writers" check is not shown: it measures fewer writers
        than the card's "unseen writers", and two different figures under one name read as a
        contradiction (99.6 % here, 98.3 % on the model line)."""
        names = {"held-out": f"your held-out drawings ({o.held_out})", "MNIST test": "MNIST test"}
        lines = [f"{names[k]}: {100 * o.before[k]:.1f} % -> {100 * o.after[k]:.1f} %" for k in o.before if k in names]
        lines.append(f"{o.trained_on} drawings, {o.steps} steps on {o.engine} (the fine-tune itself: "
                     f"{o.seconds['total']:.1f} s)")
        if not o.accepted:
            lines.append(f"Not used: {o.reason}.")
        if notes:  # the reader's own lines ("skipped FILE: why"), and a cache it could not write
            lines.append(printable(notes[0]) + (f" (and {len(notes) - 1} more)" if len(notes) > 1 else ""))
        return "\n".join(lines)

    def _show_count(self) -> None:
        """How many corrections Learn trains on, and the files it skips (not in the list: no thumbnail),
        the first named with why."""
        n, bad = len(self.listed), self.skipped
        skipped = (f" ({counted(len(bad), ('more ' if n else '') + 'file', 'd')} skipped: "
                   f"{printable(str(bad[0][0].relative_to(self.drawings_dir)))} {bad[0][1]}"
                   f"{', ...' if len(bad) > 1 else ''})" if bad else "")
        dpg.set_value(self.count_text, f"{counted(n, 'correction', 'd')}{skipped}: click one to relabel or "
                                       "delete it" if n
                      else f"No corrections yet{skipped}. Wrong answer? Click the right digit's bar or press its key: "
                           "the drawing is kept as a correction, listed here.")
