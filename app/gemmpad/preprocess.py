"""One preprocessing function from any drawing or image to the 28x28 input the network reads.

The model was trained on MNIST, whose digits were made like this (LeCun et al.):
the ink's bounding box scaled so its longer side is 20 px (aspect kept, anti-aliased),
pasted into a 28x28 field so that the centre of mass sits in the middle. A drawing
from the app (280x280, thick strokes, anywhere on the canvas) or a photo looks nothing
like that until it goes through the same steps, so the app, the CLI and training all
call `preprocess` and nothing else: a model can only be as good as the match between
what it trained on and what it is shown.

Every step is whole-array NumPy (no per-pixel Python); about 50-100 us for a
280x280 canvas (see models/README.md for the measurement).
"""

from __future__ import annotations

import numpy as np

from gemmpad.errors import InputShapeError, InputTypeError

SIZE = 28  # output field, as MNIST
BOX = 20  # the longer side of the ink's bounding box after scaling, as MNIST
# Where MNIST puts the centre of mass, in (row, col) index coordinates. Measured
# on the 60,000 training images (mean of the intensity-weighted centroids); aiming
# there means an MNIST image goes through preprocess() almost unchanged.
CENTRE = (14.0, 14.0)
INK_THRESHOLD = 0.05  # below this (after background removal) a pixel is paper, not ink
MIN_CONTRAST = 0.1  # an image whose ink is fainter than this has no ink


def _as_unit_float(image: np.ndarray) -> np.ndarray:
    """float32 in [0, 1]: uint8 is divided by 255; floats above 1 are taken as 0..255."""
    arr = np.asarray(image)
    if arr.ndim != 2:
        raise InputShapeError(f"preprocess expects a 2-D image [H, W], got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InputShapeError(f"preprocess got an empty image of shape {arr.shape}")
    if arr.dtype == np.uint8:
        return arr.astype(np.float32) * np.float32(1.0 / 255.0)
    if arr.dtype == np.bool_:
        return arr.astype(np.float32)
    if not np.issubdtype(arr.dtype, np.floating):
        raise InputTypeError(f"preprocess expects uint8 or float pixels, got {arr.dtype}")
    if not np.isfinite(arr.max()) or not np.isfinite(arr.min()):  # NaN propagates through max/min
        raise InputTypeError("preprocess got NaN or Inf pixels")
    with np.errstate(over="ignore"):  # checked just below, with a message
        out = arr.astype(np.float32, copy=False)
    top = out.max()
    if not np.isfinite(top) or not np.isfinite(out.min()):  # finite float64, out of float32's range
        raise InputTypeError("preprocess got pixel values beyond float32's range (about 3.4e38)")
    if top > 1.0:
        out = out * np.float32(1.0 / 255.0)
    return out


def _border_level(img: np.ndarray) -> float:
    """Median of the outermost pixels: the paper colour (ink rarely covers half the border)."""
    if img.shape[0] < 3 or img.shape[1] < 3:
        return float(img.min())
    border = np.concatenate((img[0], img[-1], img[1:-1, 0], img[1:-1, -1]))
    border.sort()
    return float(border[len(border) // 2])


def area_matrix(n_in: int, n_out: int) -> np.ndarray:
    """[n_out, n_in] weights of exact box-filter (area-averaging) resampling.

    Output pixel j covers the input interval [j*s, (j+1)*s), s = n_in / n_out; its
    value is the mean of the input over that interval, each input pixel weighted by
    how much of it lies inside. Downscaling this way is proper anti-aliasing (a thin
    stroke becomes a faint line, never a broken one); M @ img @ M'.T resamples a whole
    image with two small matrix products.
    """
    s = n_in / n_out
    lo = np.arange(n_out, dtype=np.float64)[:, None] * s
    i = np.arange(n_in, dtype=np.float64)[None, :]
    overlap = np.clip(np.minimum(i + 1.0, lo + s) - np.maximum(i, lo), 0.0, None)
    return (overlap / s).astype(np.float32)


def _ink_crop(image: np.ndarray) -> np.ndarray | None:
    """The ink's bounding box as float32 in [0, 1], ink bright on zero paper; None if blank.

    Polarity comes from the border (paper is what surrounds the digit); the paper
    level is subtracted and the darkest ink stretched to 1, so a grey pencil on
    cream paper reads like white on black. Only the crop is normalised, which is
    what keeps a 280x280 canvas fast.
    """
    img = _as_unit_float(image)
    paper = _border_level(img)
    dark_ink = paper > 0.5
    # per-row and per-column extremes: one pass each, and the bounding box falls out of them
    row_ext = img.min(axis=1) if dark_ink else img.max(axis=1)
    col_ext = img.min(axis=0) if dark_ink else img.max(axis=0)
    contrast = paper - float(row_ext.min()) if dark_ink else float(row_ext.max()) - paper
    if contrast < MIN_CONTRAST:
        return None
    if dark_ink:
        cut = paper - INK_THRESHOLD * contrast
        rows, cols = np.flatnonzero(row_ext < cut), np.flatnonzero(col_ext < cut)
    else:
        cut = paper + INK_THRESHOLD * contrast
        rows, cols = np.flatnonzero(row_ext > cut), np.flatnonzero(col_ext > cut)
    if rows.size == 0:
        return None
    crop = img[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    ink = (paper - crop) if dark_ink else (crop - paper)
    ink *= np.float32(1.0 / contrast)
    np.maximum(ink, 0.0, out=ink)
    np.minimum(ink, 1.0, out=ink)
    return ink


def preprocess(image: np.ndarray) -> np.ndarray | None:
    """Any-size, either-polarity image [H, W] (uint8 or float) -> float32 [28, 28] in [0, 1], ink bright.

    Returns None when there is no ink, so callers show "draw a digit" instead of
    a confident guess about an empty canvas.
    """
    crop = _ink_crop(image)
    if crop is None:
        return None
    h, w = crop.shape
    scale = BOX / max(h, w)
    oh, ow = max(1, round(h * scale)), max(1, round(w * scale))
    box = area_matrix(h, oh) @ crop @ area_matrix(w, ow).T
    total = float(box.sum())
    if total <= 0.0:
        return None
    # centre of mass of the scaled box, then the integer offset that puts it on CENTRE,
    # clamped so that no ink falls off the 28x28 field
    cy = float(box.sum(axis=1) @ np.arange(oh, dtype=np.float32)) / total
    cx = float(box.sum(axis=0) @ np.arange(ow, dtype=np.float32)) / total
    top = min(max(int(round(CENTRE[0] - cy)), 0), SIZE - oh)
    left = min(max(int(round(CENTRE[1] - cx)), 0), SIZE - ow)
    out = np.zeros((SIZE, SIZE), dtype=np.float32)
    out[top : top + oh, left : left + ow] = np.minimum(np.maximum(box, 0.0), 1.0)
    return out


def preprocess_batch(images: np.ndarray | list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """preprocess() over a batch [N, H, W] -> (float32 [N, 28, 28], bool [N] had ink).

    Deliberately a loop over the one function rather than a second, batched
    implementation: training data must be made by exactly the code the app runs
    (about 30 us per small image, so 100,000 images take seconds).
    """
    n = len(images)
    out = np.zeros((n, SIZE, SIZE), dtype=np.float32)
    ok = np.zeros(n, dtype=bool)
    for k in range(n):
        r = preprocess(images[k])
        if r is not None:
            out[k] = r
            ok[k] = True
    return out, ok
