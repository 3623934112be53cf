"""Digits on paper: a drawing turned into what a scanner or a phone camera returns.

People also hand gemmpad photos and scans of digits written with a pen on paper. Those
differ from the app's canvas in everything but the digit: cream or grey paper with
texture, lighting gradients and shadows, grey-blue ink, a 2-5 px pen line on a large
image, JPEG blocks, low resolution, or a scanner's hard black-and-white threshold.
`photograph` puts those onto a rendered pen trajectory (gemmpad.data.pendigits), so a test set
of real writers' digits "on paper" can be made and measured (`gemmpad eval --paper`),
and training can see some too. It is a simulation: how far it stands in for real scans
is stated, not assumed, in models/README.md.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from gemmpad.data.augment import smooth_noise
from gemmpad.inputs.files import atomic_path
from gemmpad.data.pendigits import PenDigit, Style, render

PAPER_SEED = 20261124  # the fixed seed of the paper test set in the model card


def paper_style(rng: np.random.Generator) -> Style:
    """A pen on a sheet: a thin line (2-6 px) on a 300-600 px image, the digit anywhere."""
    side = int(rng.integers(300, 601))
    canvas = (side, int(side * rng.uniform(0.8, 1.25)))
    height = rng.uniform(0.3, 0.75)
    centre = (rng.uniform(0.35, 0.65), rng.uniform(0.4, 0.6))
    return Style(canvas=canvas, width=float(rng.uniform(2.0, 6.0)), height=height, centre=centre,
                 slant=float(rng.uniform(-0.2, 0.2)), dark_ink=False)


def photograph(ink: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An ink image [H, W] in [0, 1] (1 = ink) as a uint8 grey photo or scan of it on paper.

    In turn, each at random: paper tone and texture, a lighting gradient, a soft
    shadow, ink tone, a slight blur, a lower resolution, then either a scanner's
    black-and-white threshold or JPEG compression (or neither).
    """
    h, w = ink.shape
    paper = np.full((h, w), rng.uniform(0.62, 0.95), dtype=np.float32)
    grain = smooth_noise(rng, (1, h // 2, w // 2), rng.uniform(0.75, 3.0))[0]  # fibres: made at half size
    paper += rng.uniform(0.0, 0.05) * resized(grain, h, w, Image.BILINEAR)
    paper += rng.normal(0.0, rng.uniform(0.0, 0.025), (h, w)).astype(np.float32)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    a = rng.uniform(0.0, 2 * np.pi)
    ramp = (np.cos(a) * (xs / w - 0.5) + np.sin(a) * (ys / h - 0.5))
    paper += rng.uniform(0.0, 0.3) * ramp  # light from one side
    if rng.random() < 0.35:  # a soft shadow over part of the sheet (a hand, the phone)
        b = rng.uniform(0.0, 2 * np.pi)
        edge = np.cos(b) * (xs - w * rng.uniform(0.2, 0.8)) + np.sin(b) * (ys - h * rng.uniform(0.2, 0.8))
        soft = rng.uniform(0.03, 0.15) * max(h, w)
        paper -= rng.uniform(0.08, 0.25) * (1.0 / (1.0 + np.exp(-edge / soft)))
    tone = rng.uniform(0.05, 0.4)  # ink: black to grey-blue ballpoint
    img = paper * (1.0 - ink) + tone * ink
    if rng.random() < 0.5:  # focus / scanner optics
        img = scanner_blur(img)
    if rng.random() < 0.5:  # a low-resolution scan or a distant camera
        f = rng.uniform(1.5, 3.5)
        img = resized(img.astype(np.float32), max(8, round(h / f)), max(8, round(w / f)), Image.BOX)
    img = np.clip(img, 0.0, 1.0)
    kind = rng.random()
    if kind < 0.25:  # a scanner's black-and-white mode: a global threshold between paper and ink
        return binarise(img, 0.5 * (float(np.median(img)) + tone))
    u8 = np.round(img * 255.0).astype(np.uint8)
    if kind < 0.8:
        buf = io.BytesIO()
        Image.fromarray(u8).save(buf, format="JPEG", quality=int(rng.integers(25, 90)))
        with Image.open(buf) as im:
            u8 = np.asarray(im.convert("L"), dtype=np.uint8)
    return u8


def scanner_blur(img: np.ndarray) -> np.ndarray:
    """The slight blur of a scanner's optics or a phone's focus: each pixel the mean of a 2x2
    block (wrapping at the edges, so callers leave a margin of paper round the ink)."""
    return (img + np.roll(img, 1, 0) + np.roll(img, 1, 1) + np.roll(img, (1, 1), (0, 1))) / 4.0


def binarise(img: np.ndarray, level: float) -> np.ndarray:
    """A scanner's black-and-white mode: grey [0, 1] (0 = black) below `level` -> 0, the rest
    -> 255 (uint8). One global threshold, as office scanners and fax modes apply it."""
    return np.where(img < level, 0, 255).astype(np.uint8)


def resized(img: np.ndarray, h: int, w: int, method: Image.Resampling) -> np.ndarray:
    """A float image resampled by Pillow (box: area averaging; bilinear: smooth enlarging)."""
    return np.asarray(Image.fromarray(img.astype(np.float32), mode="F").resize((w, h), method), dtype=np.float32)


def on_paper(sample: PenDigit, rng: np.random.Generator) -> np.ndarray:
    """One real writer's digit, written with a pen on paper and photographed or scanned."""
    return photograph(render(sample, paper_style(rng)), rng)


def write_test_set(samples: Sequence[PenDigit], directory: str | Path, seed: int = PAPER_SEED) -> int:
    """Write each sample on paper as directory/<digit>/<writer>-<index>.png; returns the count.

    The layout `gemmpad eval` and `gemmpad predict` read. Files are written atomically.
    """
    rng = np.random.default_rng(seed)
    root = Path(directory)
    for i, s in enumerate(samples):
        target = root / str(s.digit) / f"w{s.writer:02d}-{i:05d}.png"
        with atomic_path(target) as tmp:
            Image.fromarray(on_paper(s, rng)).save(tmp)
    return len(samples)
