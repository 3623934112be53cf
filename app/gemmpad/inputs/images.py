"""Reading one image file into pixels: the single path every image takes (`predict`,
its directory scans, tests), so each safeguard below holds for all of them.

- The file is opened through gemmpad.inputs.reads (regular files only; a process
  substitution pipe read once with a cap).
- Any exception while decoding is that file's ImageError: Pillow's plugins raise
  SyntaxError, NotImplementedError, struct.error and more for corrupt files, and
  one bad file must not stop a batch.
- Warnings (Pillow's "Corrupt EXIF data", its DecompressionBombWarning) and what
  libtiff prints straight to file descriptor 2 are collected per file and returned
  as notes, so the caller can print them next to the file's name.
- Large images are decoded at reduced size (JPEG's DCT scaling via draft()) or
  reduced right after decoding, before any conversion copies them: preprocessing
  scales the ink to 20 px anyway, and peak memory stays near one decoded frame,
  itself capped at MAX_DECODE_BYTES. An RGBA PNG at Pillow's pixel limit (9459 px
  square, 1.2 MB) peaked at 1.74 GB RSS through the old path and at 0.55 GB through this
  one; an RGBA PNG of 11300 px square (510 MB decoded, just under the cap) at 0.77 GB
  (`gemmpad predict`, /usr/bin/time, development VM, 2026-11-26).
- A pipe is read into memory whole before decoding, so MAX_BYTES plus one decoded
  frame bounds what an image can cost: a 383 MB BMP through `<(cat x.bmp)` peaked at
  1.02 GB with a cap of 1 GB, hence 256 MB (an uncompressed 8000x8000 RGB BMP is 192 MB).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gemmpad.errors import GemmpadError, ImageError
from gemmpad.inputs.preprocess import MIN_CONTRAST
from gemmpad.inputs.reads import open_input

if TYPE_CHECKING:
    from PIL.Image import Image as PilImage

# The formats gemmpad reads, as people name them, and their files' suffixes: the one list that every
# directory scan (predict, eval, train --drawings, Learn) picks files up by and every help text names.
# A file named on its own is read whatever its suffix: Pillow tells the format from the bytes.
FORMATS = {"PNG": (".png",), "JPEG": (".jpg", ".jpeg"), "BMP": (".bmp",), "GIF": (".gif",),
           "TIFF": (".tif", ".tiff"), "WebP": (".webp",)}
SUFFIXES = tuple(suffix for suffixes in FORMATS.values() for suffix in suffixes)
FORMAT_NAMES = "/".join(FORMATS)  # "PNG/JPEG/BMP/GIF/TIFF/WebP"
MAX_BYTES = 256 << 20  # a file (or what comes through a pipe, read whole) of at most this much
MAX_SIDE = 4096  # longer side kept after decoding; preprocess needs ~20 px of ink
MAX_DECODE_BYTES = 512 << 20  # one decoded frame at most
STRIP_BYTES = 16 << 20  # copied at a time while reducing
# EXIF orientation -> the transpose that makes the picture upright (as ImageOps.exif_transpose)
_UPRIGHT = {2: "FLIP_LEFT_RIGHT", 3: "ROTATE_180", 4: "FLIP_TOP_BOTTOM", 5: "TRANSPOSE",
            6: "ROTATE_270", 7: "TRANSVERSE", 8: "ROTATE_90"}
_REDUCIBLE = ("L", "LA", "RGB", "RGBA", "CMYK", "YCbCr", "I", "F", "I;16")


def load_image(path: str | os.PathLike[str]) -> tuple[np.ndarray, list[str]]:
    """(pixels, notes) for one image file; raises ImageError naming the file and the reason.

    Pixels are 2-D, upright as the camera meant (EXIF orientation): uint8, or float32
    in [0, 1] for 16- and 32-bit integer (see _integer_grey) and floating-point images,
    which an 8-bit conversion would clip to blank. Strokes on a transparent background
    are read by their alpha, whatever their colour; other transparent areas become white
    paper (see _on_paper). Notes are the decoder's warnings about this file, one line each.
    """
    from PIL import Image, UnidentifiedImageError

    notes: list[str] = []
    with open_input(path, MAX_BYTES, ImageError, "image file") as f:
        try:
            with _native_stderr(notes), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # big is fine: reduced below
                with Image.open(f) as opened:
                    frame = _decoded(opened)  # first: reading EXIF may decode the whole frame (PNG)
                    orientation = _orientation(opened, notes)
                    if frame is not opened:
                        opened.close()  # the full frame, before the conversions below copy the reduced one
                    pixels = _pixels(_upright(frame, orientation))
            notes.extend(str(w.message) for w in caught)
        except GemmpadError as exc:  # too large, or pixels out of range: said here, named here
            raise ImageError(f"{path}: {exc}") from None
        except Image.DecompressionBombError as exc:  # more pixels than Pillow opens: in gemmpad's words
            raise ImageError(f"{path}: {_too_many_pixels(exc)}") from None
        except UnidentifiedImageError:
            raise ImageError(f"{path}: cannot read image: not a format Pillow knows, or its header is corrupt") from None
        except Exception as exc:  # any decoder failure is this file's, not the batch's
            text = str(exc).splitlines()[0] if str(exc) else ""
            raise ImageError(f"{path}: cannot read image: {type(exc).__name__}{': ' + text if text else ''}") from None
    return pixels, list(dict.fromkeys(n.strip() for n in notes if n.strip()))


def _too_many_pixels(exc: Exception) -> str:
    """Pillow's DecompressionBombError as one line of gemmpad's, with the figures it names. The
    exception carries them only in its text ("Image size (N pixels) exceeds limit of L pixels,
    ..."), so they are read from there; should that wording change, the limit alone is said."""
    from PIL import Image

    figures = [int(n) for n in re.findall(r"\d+", str(exc))]
    limit = 2 * (Image.MAX_IMAGE_PIXELS or 0)  # Pillow refuses at twice its limit (and warns above it)
    found = f"{figures[0]:,} pixels; at most {figures[1]:,}" if len(figures) == 2 else f"over {limit:,} pixels"
    return f"the image is too large ({found}): scale it down (a digit needs a few hundred pixels a side)"


def _decoded(im: PilImage) -> PilImage:
    """`im` decoded, at most about MAX_SIDE on its longer side."""
    factor = math.ceil(max(im.size) / MAX_SIDE)
    if factor > 1:
        im.draft(None, (im.size[0] // factor, im.size[1] // factor))  # JPEG decodes smaller; others ignore it
    cost = im.size[0] * im.size[1] * _bytes_per_pixel(im.mode)
    if cost > MAX_DECODE_BYTES:  # Pillow's own limit counts pixels, not what they take in memory
        raise ImageError(f"image too large to read: {im.size[0]}x{im.size[1]} pixels of mode {im.mode} would take "
                         f"{cost / 2**20:,.0f} MB to decode (at most {MAX_DECODE_BYTES / 2**20:,.0f} MB)")
    im.load()
    factor = math.ceil(max(im.size) / MAX_SIDE)
    return _reduced(im, factor) if factor > 1 else im


def _reduced(im: PilImage, factor: int) -> PilImage:
    """`im` reduced by `factor` (box average) a strip at a time: reduce() on the whole
    frame would first copy it (premultiplied alpha, or a palette image converted)."""
    from PIL import Image

    mode = im.mode if im.mode in _REDUCIBLE else "RGBA" if _transparent(im) else "L"
    w, h = im.size
    out = Image.new(mode, ((w + factor - 1) // factor, (h + factor - 1) // factor))
    step = factor * max(1, STRIP_BYTES // max(1, w * 4 * factor))  # rows per strip
    for top in range(0, h, step):
        strip = im.crop((0, top, w, min(h, top + step)))
        out.paste(strip.convert(mode).reduce(factor), (0, top // factor))
    return out


def _bytes_per_pixel(mode: str) -> int:
    """What Pillow stores per pixel: 1 byte for 1-bit, grey and palette images, 2 for 16-bit
    grey, and 4 for everything else (RGB is kept as 32-bit pixels too)."""
    return 1 if mode in ("1", "L", "P") else 2 if mode.startswith("I;16") else 4


def _orientation(im: PilImage, notes: list[str]) -> int:
    try:
        return int(im.getexif().get(0x0112, 1))
    except Exception as exc:  # unreadable EXIF: the picture is still there
        notes.append(f"EXIF data ignored ({type(exc).__name__}: {exc})")
        return 1


def _upright(im: PilImage, orientation: int) -> PilImage:
    from PIL import Image

    method = _UPRIGHT.get(orientation)
    return im.transpose(getattr(Image.Transpose, method)) if method else im


def _transparent(im: PilImage) -> bool:
    mode = im.mode
    return mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in im.info)


def _pixels(im: PilImage) -> np.ndarray:
    if im.mode == "F":
        arr = np.asarray(im, dtype=np.float32)  # preprocess takes [0, 1], 0..255 above 1, its span below 0
        if not np.all(np.isfinite(arr)):
            raise ImageError("pixel values are NaN, Inf or beyond float32's range (about 3.4e38)")
        return arr
    if im.mode.startswith("I"):  # 16- or 32-bit integer grey
        return _integer_grey(np.asarray(im, dtype=np.float32))
    if _transparent(im):
        return _on_paper(im.convert("RGBA"))
    return np.asarray(im.convert("L"), dtype=np.uint8)


# The white of an integer image by its sensor's depth: 8, 10, 12, 14 or 16 bits (_integer_grey).
SENSOR_TOPS = (255, 1023, 4095, 16383, 65535)


def _integer_grey(arr: np.ndarray) -> np.ndarray:
    """16- or 32-bit integer grey as float32 in [0, 1], white at 1, scaled by the range its values
    use: from 0, or from its minimum when that is negative (a signed image: a signed 16-bit TIFF,
    or one shifted from unsigned, has no other black), over the least of the sensors' depths
    (8, 10, 12, 14 or 16 bits: SENSOR_TOPS) that holds their span, else over the span itself. The
    container's width says nothing of the values: a 32-bit TIFF of 0..255, or a 12-bit camera's
    0..4095 in 16-bit samples, divided by 65535 read as blank; divided alone, negative values
    stayed negative (-32768..32767 read as -0.5..0.5)."""
    low = min(float(arr.min()), 0.0)
    span = float(arr.max()) - low
    top = next((t for t in SENSOR_TOPS if span <= t), span)
    return (arr - np.float32(low)) / np.float32(top)


def _on_paper(rgba: PilImage) -> np.ndarray:
    """Grey pixels, dark ink on white paper, of an image with an alpha channel.

    Where the alpha varies and the opaque pixels are all of one tone (strokes drawn on a
    transparent background), the alpha is the drawing and is read as ink (255 - alpha): strokes
    of any colour read, where white or light ones composited over white paper vanished ("no ink
    found"). Black strokes come out as compositing made them. Otherwise the colours carry the
    drawing (constant alpha, or ink on a sheet whose transparent corners the alpha outlines,
    which read by alpha would turn the whole sheet into ink): composited over white paper.
    """
    from PIL import Image

    alpha = np.asarray(rgba.getchannel("A"))
    if alpha.min() != alpha.max() and _strokes_of_one_tone(rgba, alpha):
        return 255 - alpha
    paper = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    return np.asarray(Image.alpha_composite(paper, rgba).convert("L"), dtype=np.uint8)


def _strokes_of_one_tone(rgba: PilImage, alpha: np.ndarray) -> bool:
    """Whether the pixels at least half as opaque as the most opaque one differ in grey by less
    than preprocess's MIN_CONTRAST, so that their colour cannot tell ink from paper. (Its own
    function, so the grey copy is freed before a composite needs the memory.)"""
    opaque = np.asarray(rgba.convert("L"))[alpha >= (int(alpha.max()) + 1) // 2]
    return int(opaque.max()) - int(opaque.min()) < MIN_CONTRAST * 255


@contextlib.contextmanager
def _native_stderr(notes: list[str]) -> Iterator[None]:
    """Collect what C libraries (libtiff, libjpeg) print to file descriptor 2 meanwhile into `notes`."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no descriptor 2 to borrow: leave it alone
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            notes.extend(tmp.read(4096).decode("utf-8", "replace").splitlines())


def image_paths(directory: Path) -> Iterator[tuple[Path, str]]:
    """(path, error) for the images under `directory` (sorted; hidden files and folders
    passed over, since half-written temporaries are hidden), after a (folder, error) pair
    for each folder that cannot be read, so that it is reported rather than silently empty."""
    found: list[Path] = []
    errors: list[tuple[Path, str]] = []

    def unreadable(exc: OSError) -> None:
        errors.append((Path(exc.filename or directory), f"cannot read directory ({exc.strerror or exc})"))

    for root, dirs, files in os.walk(directory, onerror=unreadable):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(Path(root) / f for f in files if not f.startswith(".") and Path(f).suffix.lower() in SUFFIXES)
    yield from errors
    for f in sorted(found):
        if f.is_file():  # symlinks to files count; FIFOs and dangling links with a .png name do not
            yield f, ""
