"""A person's labelled drawings: DIR/<digit>/*.json (strokes) or *.png, read for fine-tuning.

The window saves each correction as a strokes file (gemmpad.inputs.strokes: points, brush
widths, canvas size) plus a PNG of the same drawing; `gemmpad train --drawings DIR`
also takes folders of pictures alone. A drawing with both is read from its strokes,
which can be painted again at other pens and sizes (gemmpad.learn.finetune's augmentation).

Nothing in such a folder is trusted: a corrupt file, an empty folder or a folder whose
name is not a digit is skipped with one line saying so (through `say`), never a crash,
and the rest is used.
"""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from gemmpad.data import pendigits
from gemmpad.inputs import strokes
from gemmpad.errors import GemmpadError
from gemmpad.inputs.images import MAX_BYTES as MAX_IMAGE_BYTES
from gemmpad.inputs.images import SUFFIXES, load_image
from gemmpad.inputs.reads import read_input
from gemmpad.inputs.preprocess import preprocess
from gemmpad.terminal import printable

Say = Callable[[str], None]


@dataclass(frozen=True, eq=False)
class Example:
    """One labelled drawing. image28: what the model reads (gemmpad.inputs.preprocess);
    drawing: its strokes when it came from a strokes file (None for a picture);
    key: a hash of the file's content, naming it in caches."""

    label: int
    path: Path  # where it was read from
    image28: np.ndarray
    drawing: strokes.Drawing | None
    key: str


def read_folder(root: str | Path, say: Say = print, known: dict[str, Example] | None = None) -> list[Example]:
    """Every usable drawing under root/0 ... root/9, sorted by folder and name.

    Raises GemmpadError only when root itself is not a readable folder; every bad
    thing inside is reported through `say` and skipped. `known` (content key ->
    Example, filled in here) spares painting again a file whose bytes were read before
    (Learn's cache: painting a strokes file at the canvas size is ~4 ms).
    """
    say = _printable_say(say)
    top = Path(root)
    if not top.is_dir():
        raise GemmpadError(f"{top}: not a folder of drawings (expected {top}/<digit>/*.json or *.png)")
    try:
        entries = sorted(top.iterdir())
    except OSError as exc:
        raise GemmpadError(f"{top}: cannot read the folder ({exc.strerror or exc})") from None
    out: list[Example] = []
    for sub in entries:
        if sub.name.startswith("."):
            continue
        if not sub.is_dir():
            say(f"skipped {sub}: not a folder (drawings go in {top}/<digit>/)")
            continue
        if len(sub.name) != 1 or sub.name not in "0123456789":
            if sub.name != "unlabelled":  # the window's folder for drawings saved without a label
                say(f"skipped {sub}/: the folder name is not a digit 0-9")
            continue
        found = _read_digit(sub, int(sub.name), say, known)
        if not found:
            say(f"skipped {sub}/: no drawings in it")
        out.extend(found)
    return out


def _printable_say(say: Say) -> Say:
    """`say` with control characters escaped: every line names a file or folder of
    someone else's making, and a name like "3/\x1b[2J.png" would clear the terminal."""
    return lambda line: say(printable(line))


def _read_digit(folder: Path, label: int, say: Say, known: dict[str, Example] | None) -> list[Example]:
    """The drawings of one digit: per name, the strokes file, else (or when that cannot be
    read) the picture of the same name."""
    try:
        files = sorted(f for f in folder.iterdir() if not f.name.startswith("."))
    except OSError as exc:
        say(f"skipped {folder}/: cannot read it ({exc.strerror or exc})")
        return []
    by_stem: dict[str, list[Path]] = {}
    for f in files:
        if f.suffix.lower() == ".json" or f.suffix.lower() in SUFFIXES:
            by_stem.setdefault(f.stem, []).append(f)
        else:
            say(f"skipped {f}: not a strokes file (.json) or a picture ({', '.join(SUFFIXES)})")
    out = []
    for stem in sorted(by_stem):
        for f in sorted(by_stem[stem], key=lambda p: p.suffix.lower() != ".json"):
            try:
                out.append(read_example(f, label, known))
                break
            except (GemmpadError, OSError) as exc:
                say(f"skipped {f}: {_reason(exc, f)}")
    return out


def _reason(exc: Exception, f: Path) -> str:
    """The error without the file name the message may already start with."""
    text = str(exc) if isinstance(exc, GemmpadError) else (getattr(exc, "strerror", None) or str(exc))
    return text[len(str(f)) + 2 :] if text.startswith(f"{f}: ") else text


def read_example(path: Path, label: int, known: dict[str, Example] | None = None) -> Example:
    """One drawing file as an Example; GemmpadError when it cannot be used (unreadable, no ink).
    A small regular file whose content is in `known` is not painted again."""
    if known is None:
        return _read(path, label)
    info = path.stat()
    if not stat.S_ISREG(info.st_mode) or info.st_size > strokes.MAX_FILE_BYTES:
        return _read(path, label)  # not hashed up front: reading it is the reader's to bound
    key = _content_key(path)
    hit = known.get(key)
    if hit is None:
        hit = known[key] = _read(path, label, key)
    elif hit.drawing is None and path.suffix.lower() == ".json":  # kept on disk as its picture alone
        hit = known[key] = replace(hit, drawing=strokes.load_drawing(path))
    return replace(hit, label=label, path=path)


class NoInk(GemmpadError):
    """A drawing file that reads but holds no ink: Learn skips it (the window's Learn panel names it so)."""


def pixels(path: Path) -> tuple[np.ndarray, strokes.Drawing | None]:
    """A drawing file's pixels as Learn reads them, and its strokes (None for a picture): a strokes file
    painted on the window's canvas (the size load_drawing priced), a picture as it is. OSError or
    GemmpadError where it cannot be read."""
    if path.suffix.lower() == ".json":
        drawing = strokes.load_drawing(path)
        return drawing.on_canvas(strokes.CANVAS).render(), drawing
    image, _ = load_image(path)
    return image, None


def inked(image: np.ndarray) -> np.ndarray:
    """What the model reads of a drawing's pixels (gemmpad.inputs.preprocess), or NoInk where there is no
    ink: the one test by which Learn skips a readable drawing, and the window's list of corrections too."""
    image28 = preprocess(image)
    if image28 is None:
        raise NoInk("no ink in it")
    return image28


def _read(path: Path, label: int, key: str | None = None) -> Example:
    image, drawing = pixels(path)
    return Example(label, path, inked(image), drawing, key or _content_key(path))


def _content_key(path: Path) -> str:
    """The hash naming a file's content, read through the guarded reader: the file was
    checked when it was listed, but may be a FIFO or a device by now."""
    data = read_input(path, max(strokes.MAX_FILE_BYTES, MAX_IMAGE_BYTES), GemmpadError, "drawing file")
    return hashlib.sha1(data).hexdigest()[:20]


def pen_drawing(sample: pendigits.PenDigit, style: pendigits.Style | str) -> strokes.Drawing:
    """A real writer's digit as the app would have recorded it at `style` (light ink: the
    app's canvas): the corrections of tests and `gemmpad bench learn`."""
    st = pendigits.STYLES[style] if isinstance(style, str) else style
    lines = [np.asarray(c, dtype=np.float64) for c in pendigits.canvas_strokes(sample, st)]
    return strokes.Drawing(lines, [st.width] * len(lines), st.canvas)


def example_of(drawing: strokes.Drawing, label: int, path: Path | None = None) -> Example:
    """An Example of a drawing held in memory (the window's canvas, a pendigits sample)."""
    image28 = inked(drawing.render())
    key = hashlib.sha1(b"".join(np.asarray(s, np.float64).tobytes() for s in drawing.strokes)
                       + np.asarray(drawing.widths, np.float64).tobytes()).hexdigest()[:20]
    return Example(label, path or Path(f"<drawing {key}>"), image28, drawing, key)


def counts(examples: list[Example]) -> dict[int, int]:
    """Drawings per digit (digits without any left out)."""
    return {d: n for d in range(10) if (n := sum(e.label == d for e in examples))}
