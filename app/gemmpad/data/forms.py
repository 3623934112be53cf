"""Digits on scanned forms: a writer's digit as a form-reading pipeline hands it over.

Collections of digits from forms (tax forms, census sheets, school tests) are not photos
of a page: each digit was cut out of its box, *stretched to fill a small box* (16-32 px,
the aspect ratio NOT kept, so a 1 becomes a wide bar and a 7 a wedge), blurred by the
scanner and thresholded to black and white; viewers then enlarge the tiny bitmap, and
collections come in either polarity. gemmpad.data.paper's photos keep each digit's shape, so
they say nothing about these (issue 43: the shipped model read 90.6 % of such European
forms while reading 95 % of paper photos).

`on_form` puts a real writer's trajectory (gemmpad.data.pendigits) through that pipeline, one
named VARIANT at a time, so `gemmpad eval --forms` can measure each kind of form by digit;
`drawn_on_form` does the same to gemmpad.data.synthetic's styles (`--forms --drawn-styles`): a
European 1's long flag is harmless on a canvas and what a stretched box turns into a Λ.
The blur, the threshold and the resampling are gemmpad.data.paper's: one scanner model. It is
a simulation: how far it stands in for real forms is stated, not assumed, in models/README.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from gemmpad.data import synthetic
from gemmpad.data.paper import binarise, resized, scanner_blur
from gemmpad.data.pendigits import PenDigit, Style, render

FORMS_SEED = 20261129  # the fixed seed of the forms test set (each variant adds its index)
OVERSAMPLE = 8  # the pen is drawn at 8x the box's resolution, as a 300-600 dpi scan of a 1 cm box


@dataclass(frozen=True)
class FormVariant:
    """One kind of form collection.

    box: (height, width) of the digit's box in scan pixels; stretch: fill the box in both
    directions (aspect not kept) or fit it (aspect kept, centred); blur: the chance of the
    scanner's blur; level: the range of the black-and-white threshold (on grey, 0 = black:
    higher keeps more of a faint stroke); lines: the printed box's lines and specks of dirt
    round the digit; upsample: factors the bitmap is enlarged by (nearest neighbour),
    one picked per digit.
    """

    box: tuple[int, int]
    stretch: bool = True
    blur: float = 0.5
    level: tuple[float, float] = (0.45, 0.7)
    lines: bool = False
    upsample: tuple[int, ...] = (1, 2, 4)


# Named as `gemmpad eval --forms` reports them. Every variant is binarised (what form
# collections are) and comes in both polarities, half and half at random.
VARIANTS: dict[str, FormVariant] = {
    "stretch-16": FormVariant(box=(16, 16)),  # the smallest boxes: a 16x16 bitmap per digit
    "stretch-24-blurred": FormVariant(box=(24, 24), blur=1.0, level=(0.35, 0.75)),
    "stretch-32": FormVariant(box=(32, 32)),
    "fit-32": FormVariant(box=(32, 32), stretch=False),  # normalised into the box, shape kept
    "boxed-32": FormVariant(box=(32, 32), lines=True),  # the form's printed box left round it
}
LINED = tuple(name for name, v in VARIANTS.items() if v.lines)  # a test of preprocess (line removal), pooled apart


def pen_on_form(sample: PenDigit, box: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """The sample written with a pen, ink [H, W] in [0, 1] (1 = ink), at OVERSAMPLE times the box."""
    side = OVERSAMPLE * max(box)
    height = 0.8
    width = float(rng.uniform(0.06, 0.14)) * height * side  # a ballpoint to a felt-tip, relative to the digit
    return render(sample, Style(canvas=(side, side), width=width, height=height,
                                slant=float(rng.uniform(-0.15, 0.15))))


def into_box(ink: np.ndarray, box: tuple[int, int], stretch: bool) -> np.ndarray:
    """The inked part of `ink` resampled (area averaging, as a low-resolution scan) into a box
    [h, w] of ink coverage: filling it (stretch) or as large as fits, centred (aspect kept).
    An image without ink gives an empty box."""
    bh, bw = box
    out = np.zeros(box, dtype=np.float32)
    ys, xs = np.nonzero(ink > 0.5)
    if not len(ys):
        return out
    crop = ink[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1].astype(np.float32)
    if stretch:
        return np.clip(resized(crop, bh, bw, Image.BOX), 0.0, 1.0)
    h, w = crop.shape
    scale = min(bh / h, bw / w)
    th, tw = max(1, min(bh, round(h * scale))), max(1, min(bw, round(w * scale)))
    y0, x0 = (bh - th) // 2, (bw - tw) // 2
    out[y0 : y0 + th, x0 : x0 + tw] = np.clip(resized(crop, th, tw, Image.BOX), 0.0, 1.0)
    return out


def _print_box(scan: np.ndarray, margin: int, rng: np.random.Generator) -> None:
    """The form's printed box round the digit, in place: each side's line (1 px, grey to
    black) drawn or not, a gap of paper before the digit, and a few specks of dirt near the edges."""
    h, w = scan.shape
    tone = float(rng.uniform(0.0, 0.45))
    at = int(rng.integers(0, max(1, margin - 1)))  # how far the line sits from the edge
    for side in range(4):
        if rng.random() < 0.7:
            if side == 0:
                scan[at, :] = tone
            elif side == 1:
                scan[h - 1 - at, :] = tone
            elif side == 2:
                scan[:, at] = tone
            else:
                scan[:, w - 1 - at] = tone
    for _ in range(int(rng.integers(0, 4))):
        y = int(rng.integers(0, h))
        x = int(rng.choice([rng.integers(0, margin), rng.integers(w - margin, w)]))
        scan[y, x] = tone


def on_form(sample: PenDigit, variant: FormVariant | str, rng: np.random.Generator) -> np.ndarray:
    """One real writer's digit as a form-reading pipeline outputs it: uint8 [H, W], binary
    (0 and 255), dark ink on white or (half the time) white on black."""
    v = VARIANTS[variant] if isinstance(variant, str) else variant
    return _scanned(into_box(pen_on_form(sample, v.box, rng), v.box, v.stretch), v, rng)


def image_on_form(image: np.ndarray, variant: FormVariant, rng: np.random.Generator) -> np.ndarray:
    """A grey digit (uint8 [H, W], ink bright, as MNIST stores it) put through the same form pipeline:
    training's copies of the MNIST digits ("forms-mnist" in gemmpad.data.trainset). MNIST's 20 px
    box is already low resolution, so the stretch and the threshold do most of the work."""
    return _scanned(into_box(image.astype(np.float32) / 255.0, variant.box, variant.stretch), variant, rng)


def _scanned(cover: np.ndarray, v: FormVariant, rng: np.random.Generator) -> np.ndarray:
    """Ink coverage in a box -> the form reader's bitmap: paper round it, the printed box (when the
    variant has one), the scanner's blur, the threshold, the enlargement and the polarity."""
    margin = 3 if v.lines else 1  # paper round the box: the blur must not wrap ink across it
    scan = np.ones((v.box[0] + 2 * margin, v.box[1] + 2 * margin), dtype=np.float32)
    scan[margin:-margin, margin:-margin] -= cover
    if v.lines:
        _print_box(scan, margin, rng)
    if rng.random() < v.blur:
        scan = scanner_blur(scan)
    bitmap = binarise(scan, float(rng.uniform(*v.level)))
    f = int(rng.choice(v.upsample))
    bitmap = np.repeat(np.repeat(bitmap, f, axis=0), f, axis=1)
    return 255 - bitmap if rng.random() < 0.5 else bitmap


def training_variant(rng: np.random.Generator) -> FormVariant:
    """A form for one training copy, drawn from a range round the test's VARIANTS rather than
    the variants themselves: boxes 12-32 px high and 0.6-1.25 as wide (forms are not square),
    stretched seven times in ten, blurred half the time, any threshold the test uses. No printed
    lines: removing them is preprocessing's job, not the weights'."""
    h = int(rng.integers(12, 33))
    w = int(np.clip(round(h * rng.uniform(0.6, 1.25)), 8, 40))
    return FormVariant(box=(h, w), stretch=bool(rng.random() < 0.7), blur=0.5, level=(0.35, 0.75))


def drawn_on_form(name: str, variant: str, count: int) -> list[np.ndarray]:
    """`count` digits of a gemmpad.data.synthetic style (a name from synthetic.ALL_NAMES), each a trajectory
    put on a form of `variant` by `on_form`; a fixed seed per style and variant, so a figure
    does not depend on which others are asked for."""
    rng = np.random.default_rng([FORMS_SEED, synthetic.ALL_NAMES.index(name), list(VARIANTS).index(variant)])
    return [on_form(_drawn_pen(name, rng), variant, rng) for _ in range(count)]


def drawn_training_copies(count: int, rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
    """`count` synthetic digits, every style of synthetic.ALL_NAMES (the European ones too) in
    equal shares at random, each on a form of its own (training_variant): training's "forms-drawn".
    Images and their digits."""
    names = [synthetic.ALL_NAMES[i] for i in rng.integers(0, len(synthetic.ALL_NAMES), count)]
    return ([on_form(_drawn_pen(name, rng), training_variant(rng), rng) for name in names],
            np.array([int(name[0]) for name in names], dtype=np.int64))


def _drawn_pen(name: str, rng: np.random.Generator) -> PenDigit:
    """A synthetic style's strokes as a pen trajectory (the file's y points up, the canvas's down)."""
    strokes, _ = synthetic.sample_strokes(int(name[0]), name[2:], rng)
    return PenDigit(digit=int(name[0]), writer=0, strokes=[np.column_stack([p[:, 0], -p[:, 1]]) for p in strokes])
