"""One preprocessing function from any drawing or image to the 28x28 input the network reads.

The model learns from MNIST and from real writers' pen trajectories drawn like the app,
and it is shown drawings from the canvas, scans and phone photos. These differ in
everything but the digit: pen width, paper, lighting, slant, size and place. So every
input, in training and in use, goes through the same steps, each removing one of those
differences (a model can only be as good as the match between what it trained on and
what it is shown):

1. ink: a two-level form's printed box turned to paper (its lines would pass for ink);
   polarity from the border (paper surrounds the digit): dark ink on light paper, and on
   paper at or below half brightness the ink is what differs most from the border's median,
   darker or brighter; the background, estimated
   on a coarse grid (paper tone, lighting gradients, shadows), is subtracted (not from a
   two-level scan: it has no lighting, and a wide block of ink would pass for some),
   whatever stays within the paper's own noise (texture, JPEG) is taken as paper, and on
   a photo so is a shadow the threshold made solid (a two-level photo with dither), ink joined
   to its edge (a shadow's rim) and specks apart from the digit;
2. crop: the ink's bounding box, trimmed of stray specks that carry almost no ink;
3. on a 2x field (the longer side MID px): deslant by moments (the shear that makes
   the ink's principal axis upright, as classic MNIST work does), then bring the stroke
   width to MNIST's (estimated as 2 x area / perimeter; grey dilation or erosion);
4. as MNIST was made (LeCun et al.): the box scaled so its longer side is 20 px,
   anti-aliased, pasted into 28x28 with the centre of mass in the middle (to a
   fraction of a pixel).

Every step is whole-array NumPy on the image or on small fields (no per-pixel Python);
the cost for the app's 280x280 canvas (0.5-0.9 ms on the 2-core VM) is in models/README.md.
"""

from __future__ import annotations

import functools

import numpy as np

from gemmpad.errors import InputShapeError, InputTypeError

SIZE = 28  # output field, as MNIST
BOX = 20  # the longer side of the ink's bounding box after scaling, as MNIST
MID = 2 * BOX  # the longer side of the field deslant and stroke width work on
# Where MNIST puts the centre of mass, in (row, col) index coordinates: aiming there
# means an MNIST image goes through preprocess() almost unchanged.
CENTRE = (14.0, 14.0)
INK_THRESHOLD = 0.05  # below this fraction of the contrast (after background removal) a pixel is paper
MIN_CONTRAST = 0.1  # an image whose ink is fainter than this has no ink
NOISE_SIGMAS = 4.0  # ink must stand this many noise deviations above the paper
GRID = 16  # background cells along the image's longer side
MIN_BACKGROUND_SIDE = 64  # smaller images are taken to lie on flat paper
FLAT = 0.02  # a background that varies less than this is flat
BINARY_EDGE_INK = 0.1  # a two-level scan with ink on more of its border than this may hold a shadow
LINE_FULL = 0.97  # a printed line of a form covers this much of its row or column, end to end
GAP_CLEAN = 0.9  # the paper between a form's line and the digit: this much of each row or column
# (0.85 read more boxed forms of the training writers 7-30, 93.2 % against 91.3 %, but took the rows of a
# solid block of ink for dark paper: tests/inputs/test_preprocess.py)
LINE_BAND = 0.25  # share of the image, from each edge, where a form's printed lines are looked for
LINE_THICK = 0.1  # a printed line (1 px widened by the scanner's blur) is at most this share of the image across it
TRIM = 0.002  # share of the ink mass a stray speck beyond the digit may carry and still be cut off
SHADOW_WIDTH = 0.025  # in a thresholded photo, ink wider than this share of the image every way is a shadow
DITHER_GAP = 4  # the threshold's dither along a shadow's edge: ink closer than 2x this many pixels is one region
SHADOW_MARGIN = 5  # pixels beyond a shadow's solid core that go with it (its last dither)
DITHER_SPECKS = 50  # lone ink pixels (at most one neighbour) that say a threshold dithered a shadow
SOLID_SHADOW = 0.06  # without dither: solid ink this wide (share of the image) from the border is a shadow,
PEN_RATIO = 6  # where it is this many times wider than the ink beside it (a form's digit is as thick)
STRAY_FIELD = 128  # a photo's ink is told into pieces on a copy at most this many pixels across
BORDER_KEEP = 0.3  # ink joined to the border goes when at least this share of the ink is not
SPECK_MASS = 0.05  # a piece lighter than this share of the largest, and further from it than
SPECK_GAP = 0.25  # this share of its size, is a speck
MAX_SLANT = 1.0  # shear per unit height; beyond it the moments describe a shape, not a slant
# MNIST's stroke width on the MID field (2 x area / perimeter, median over the 60,000
# training images taken through steps 1-3 without width normalisation: 4.64; quartiles 3.9, 5.5).
TARGET_WIDTH = 4.6


PIXEL_SCALE = np.float32(1.0 / 255.0)


def unit_pixels(pixels: np.ndarray) -> np.ndarray:
    """8-bit pixels as float32 in [0, 1]: x * float32(1/255). The one scaling of uint8 pixels:
    preprocess, the backends' 8-bit paths, and the native kernels' conversion (which multiply by
    the same float32 constant) all read a byte as this value."""
    return pixels.astype(np.float32) * PIXEL_SCALE


def _as_unit_float(image: np.ndarray) -> np.ndarray:
    """float32 in [0, 1]: uint8 is divided by 255; floats above 1 are taken as 0..255; floats below
    0 (an image normalised for a network: [-1, 1], or MNIST's (x - mean) / std) are taken from their
    minimum over their span, as black is their least value: divided by 255 instead, they read as
    blank, and kept as they were, the negative part was a second tone."""
    arr = np.asarray(image)
    if arr.ndim != 2:
        raise InputShapeError(f"preprocess expects a 2-D image [H, W], got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InputShapeError(f"preprocess got an empty image of shape {arr.shape}")
    if arr.dtype == np.uint8:
        return unit_pixels(arr)
    if arr.dtype == np.bool_:
        return arr.astype(np.float32)
    if not np.issubdtype(arr.dtype, np.floating):
        raise InputTypeError(f"preprocess expects uint8 or float pixels, got {arr.dtype}")
    with np.errstate(over="ignore"):  # checked just below, with a message
        out = arr.astype(np.float32, copy=False)
    top = out.max()
    if not np.isfinite(top) or not np.isfinite(out.min()):  # NaN propagates through max/min
        if out is arr or not (np.isfinite(arr.max()) and np.isfinite(arr.min())):
            raise InputTypeError("preprocess got NaN or Inf pixels")
        raise InputTypeError("preprocess got pixel values beyond float32's range (about 3.4e38)")
    low = out.min()
    if low < 0.0:
        return (out - low) * np.float32(1.0 / (top - low)) if top > low else np.zeros_like(out)
    if top > 1.0:
        out = out * np.float32(1.0 / 255.0)
    return out


def _border(img: np.ndarray) -> np.ndarray:
    """The outermost pixels, sorted."""
    if img.shape[0] < 3 or img.shape[1] < 3:
        return np.sort(img.ravel())
    border = np.concatenate((img[0], img[-1], img[1:-1, 0], img[1:-1, -1]))
    border.sort()
    return border


def _median_deviation(sorted_values: np.ndarray) -> tuple[float, float]:
    """(median, robust standard deviation from the median absolute deviation)."""
    med = float(sorted_values[len(sorted_values) // 2])
    dev = np.abs(sorted_values - med)
    return med, 1.4826 * float(np.partition(dev, len(dev) // 2)[len(dev) // 2])


@functools.lru_cache(maxsize=512)
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
    out = (overlap / s).astype(np.float32)
    out.flags.writeable = False  # cached: shared by every caller
    return out


@functools.lru_cache(maxsize=256)
def _upsample_matrix(n_out: int, n_in: int) -> np.ndarray:
    """[n_out, n_in] weights of linear interpolation from n_in cell centres to n_out pixels."""
    pos = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0.0, n_in - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = (pos - lo).astype(np.float32)
    m = np.zeros((n_out, n_in), dtype=np.float32)
    m[np.arange(n_out), lo] += 1.0 - frac
    m[np.arange(n_out), hi] += frac
    m.flags.writeable = False
    return m


def _extreme3(a: np.ndarray, pick: np.ufunc) -> np.ndarray:
    """pick (np.maximum or np.minimum) of each pixel and its 8 neighbours; the image's edge
    counts as its own value. Separable: along columns, then along rows (small fields: few calls)."""
    b = a.copy()
    pick(b[1:], a[:-1], out=b[1:])
    pick(b[:-1], a[1:], out=b[:-1])
    c = b.copy()
    pick(c[:, 1:], b[:, :-1], out=c[:, 1:])
    pick(c[:, :-1], b[:, 1:], out=c[:, :-1])
    return c


def _dilate(a: np.ndarray) -> np.ndarray:
    """Grey dilation with a 3x3 square."""
    return _extreme3(a, np.maximum)


def _erode(a: np.ndarray) -> np.ndarray:
    """Grey erosion with a 3x3 square."""
    return _extreme3(a, np.minimum)


def _background(v: np.ndarray) -> np.ndarray | None:
    """The paper's level under the ink (ink bright in `v`), or None where the paper is flat.

    Cell means on a coarse grid, opened (5x5 cells min, then max: ink, thinner than
    that, goes; lighting gradients and shadows, wider, stay), interpolated back to full
    size. Small images (MNIST's 28x28) are taken as flat: their cells would be strokes.
    """
    h, w = v.shape
    if max(h, w) < MIN_BACKGROUND_SIDE:
        return None
    gh, gw = max(5, round(GRID * h / max(h, w))), max(5, round(GRID * w / max(h, w)))
    step = max(1, max(h, w) // (8 * GRID))  # every step-th pixel: a cell still averages over 64 of them
    sub = v[::step, ::step]
    cells = area_matrix(sub.shape[0], gh) @ sub @ area_matrix(sub.shape[1], gw).T
    opened = _dilate(_dilate(_erode(_erode(cells))))
    if float(opened.max() - opened.min()) < FLAT:
        return None
    return _upsample_matrix(h, gh) @ opened @ _upsample_matrix(w, gw).T


def _dark_ink(img: np.ndarray, paper: float) -> bool:
    """Whether the ink is darker than the paper. `paper` is the border's median (paper surrounds the
    digit). Paper above half brightness carries dark ink, as everything the model trained on was read;
    on paper at or below half, the ink is what differs most from it, so the image reaching further
    below it than above it says dark ink: by brightness alone, black ink on dim grey paper was taken
    for white ink on black, and the paper read as the digit. (The contrast test on light paper too
    read 2 fewer of 749 paper photos of writers 1-3 than brightness did, on low-contrast photos near
    mid-grey; and measured past the border's spread rather than its median, ink along a side of the
    frame, a shadow's rim, would make that spread and turn the polarity.)"""
    return paper > 0.5 or paper - float(img.min()) > float(img.max()) - paper


def _clean_binary(edge: np.ndarray) -> bool:
    """Whether a two-level scan (a form reader's output, a fax) has paper nearly all round: it has
    no lighting to remove, and the background step would take a wide region of solid ink (a 1
    stretched to fill its box) for paper and hollow it out. A thresholded photo whose shadow
    went black covers more of the border, and keeps the step that removes it. `edge`: _border(img)."""
    paper = edge[len(edge) // 2]  # the border's median, as for the polarity
    return int(np.count_nonzero(edge != paper)) <= BINARY_EDGE_INK * len(edge)


def _two_level(img: np.ndarray) -> bool:
    """Whether every pixel is the image's darkest or brightest value (a form reader's bitmap, a fax)."""
    sample = img[::8, ::8]  # a grey pixel among these settles it for a canvas or photo at a fraction of the cost
    if np.count_nonzero((sample != sample.min()) & (sample != sample.max())):
        return False
    lo, hi = img.min(), img.max()
    return lo != hi and int(np.count_nonzero(img == lo)) + int(np.count_nonzero(img == hi)) == img.size


def _edge_levels(share: np.ndarray, band: int) -> list[int]:
    """From an edge inward, each row's level while rows are nearly one level (`share`: each row's
    share of bright pixels): 1 bright (at least GAP_CLEAN), 3 bright end to end (LINE_FULL),
    0 dark, 2 dark end to end; level % 2 is 1 for bright. Stops at the first mixed row."""
    levels = []
    for f in share[:band]:
        if f >= GAP_CLEAN:
            levels.append(3 if f >= LINE_FULL else 1)
        elif f <= 1.0 - GAP_CLEAN:
            levels.append(2 if f <= 1.0 - LINE_FULL else 0)
        else:
            break
    return levels


def _paper_vote(inner: list[int]) -> int | None:
    """The paper's level (1 bright, 0 dark): the level of the innermost clean row (_edge_levels'
    codes) on both sides; None when they disagree (a side of a box without a clean row inside)."""
    bright = sum(lv % 2 for lv in inner)
    return None if not inner or 2 * bright == len(inner) else int(2 * bright > len(inner))


def _edge_to_paper(img: np.ndarray, axis: int, side: int, n: int, paper: float) -> None:
    """The n rows (axis 0) or columns (axis 1) of img from its first (side 0) or last edge set to paper, in place."""
    if n:
        span = slice(0, n) if side == 0 else slice(img.shape[axis] - n, img.shape[axis])
        img[(span, slice(None)) if axis == 0 else (slice(None), span)] = paper


def _lines_by_vote(img: np.ndarray) -> np.ndarray:
    """Printed lines along one axis at a time, the paper voted per axis (_paper_vote): a line is a
    row of the other level end to end with a clean paper row inward of it, so a digit's own bar
    touching the box (a 7 stretched to fill it), with ink below it, stays."""
    lo, hi = img.min(), img.max()
    is_hi = img == hi
    out = img
    for axis in (1, 0):
        bright = is_hi.mean(axis=axis)  # of the scan as it came: the lines cross each other end to end
        length = len(bright)
        band = max(1, int(LINE_BAND * length))
        sides = [_edge_levels(bright, band), _edge_levels(bright[::-1], band)]
        paper = _paper_vote([lv[-1] for lv in sides if lv])
        if paper is None:
            continue
        for side, levels in enumerate(sides):
            clean = [i for i, lv in enumerate(levels) if lv % 2 == paper]
            if not clean or not any(lv % 2 != paper and lv >= 2 for lv in levels[: clean[-1]]):
                continue
            if out is img:
                out = img.copy()
            # the line(s), and the paper up to the clean row inward of them
            _edge_to_paper(out, 1 - axis, side, clean[-1] + 1, hi if paper else lo)
    return out


PAPER_LINE, INK_LINE = 1, 2  # _box_edges' kinds of row


def _box_edges(ink: np.ndarray) -> tuple[dict[tuple[int, int], list[int]], bool]:
    """With `ink` (bool [H, W]) the level taken for ink: from each edge inward ((axis, side): axis 0
    rows, 1 columns; side 0 from the first), each row's kind while rows are nearly one level:
    INK_LINE end to end (LINE_FULL), PAPER_LINE (GAP_CLEAN of it, not counting the columns that are
    ink end to end near the edges); stops at the first mixed row. And whether that reads as a
    printed box: paper rows crossed by such ink columns on both axes (a box's paper margin is
    crossed by its perpendicular lines, its lines by nothing: they meet lines of their own level),
    and the digit met within LINE_BAND inward of every line (paper on the other side of a frame
    of "lines" all the way in is a solid block of ink with paper round it, read the wrong way)."""
    kinds: dict[tuple[int, int], list[int]] = {}
    crossed = [False, False]
    full = [ink.mean(axis=1) >= LINE_FULL, ink.mean(axis=0) >= LINE_FULL]
    for axis in (0, 1):
        rows = ink if axis == 0 else ink.T
        across = full[1 - axis].copy()
        edge = max(1, int(LINE_BAND * len(across)))
        across[edge : len(across) - edge] = False  # a box's lines lie near the edges
        others = ~across if not across.all() else np.ones_like(across)
        paper_share = 1.0 - rows[:, others].mean(axis=1)
        band = max(1, int(LINE_BAND * len(rows)))
        for side in (0, 1):
            order = range(band) if side == 0 else range(len(rows) - 1, len(rows) - 1 - band, -1)
            kinds[axis, side] = []
            for i in order:
                if full[axis][i]:
                    kinds[axis, side].append(INK_LINE)
                elif paper_share[i] >= GAP_CLEAN:
                    kinds[axis, side].append(PAPER_LINE)
                    crossed[axis] |= bool(rows[i, across].any())
                else:
                    break
    held = all(len(k) < max(1, int(LINE_BAND * ink.shape[axis])) for (axis, _), k in kinds.items()
               if INK_LINE in k)
    return kinds, crossed[0] and crossed[1] and held


def _box_cut(kinds: list[int], thick: int) -> int:
    """How many rows from an edge are a printed box's line(s) and the paper outward of them (0: none):
    up to the innermost paper row when one lies inward of a line, else up to the last line (the
    digit touches it: paper outward of it, or the edge). A run of ink rows thicker than `thick` is
    a digit's stroke, not a printed line: nothing is cut on that side."""
    if INK_LINE not in kinds:
        return 0
    thickest = run = 0
    for k in kinds:
        run = run + 1 if k == INK_LINE else 0
        thickest = max(thickest, run)
    return 0 if thickest > thick else len(kinds)


def _without_printed_lines(img: np.ndarray) -> np.ndarray:
    """A two-level form with its printed box's lines (and the specks round them) turned to paper.

    A form reader often cuts the box with its lines: rows or columns of one level end to end
    near the edge. Left in, they pass for ink: the border votes the wrong polarity and a box
    frames the digit (the `boxed-32` forms read ~50 %). Where lines cross the paper on both
    axes, that decides the paper's level and every side's thin lines go, even where the scanner's
    blur joined the digit to them (_box_edges, _box_cut); lines along one axis only go where
    clean paper lies between them and the digit (_lines_by_vote)."""
    lo, hi = img.min(), img.max()
    is_hi = img == hi
    boxes = [(paper_hi, kinds) for paper_hi in (True, False)
             for kinds, boxed in [_box_edges(is_hi == (not paper_hi))] if boxed]
    if len(boxes) != 1:
        return _lines_by_vote(img)
    paper_hi, kinds = boxes[0]
    out = img.copy()
    for (axis, side), levels in kinds.items():
        _edge_to_paper(out, axis, side, _box_cut(levels, max(1, int(LINE_THICK * img.shape[axis]))),
                       hi if paper_hi else lo)
    return out


def _box_count(mask: np.ndarray, r: int) -> np.ndarray:
    """How many pixels of `mask` lie in each pixel's (2r+1)^2 square (beyond the edge the image goes
    on as at its edge: a shadow comes from outside the frame), by an integral image: one pass
    whatever r, where r rounds of a 3x3 extreme would take r passes."""
    h, w = mask.shape
    c = np.zeros((h + 2 * r + 1, w + 2 * r + 1), np.int32)
    np.cumsum(np.cumsum(np.pad(mask, r, mode="edge").astype(np.int32), axis=0), axis=1, out=c[1:, 1:])
    n = 2 * r + 1
    return c[n:, n:] - c[:-n, n:] - c[n:, :-n] + c[:-n, :-n]


def _without_shadow(v: np.ndarray) -> np.ndarray:
    """A photo thresholded to two levels (ink bright in v) with its shadow turned to paper.

    The threshold turns a shadow into a solid region of ink, often dithered along its edge, which
    the background grid (cells of 1/16 of the image) leaves as a rim: a bar under the digit or a
    diagonal beside it; with little of it on the border the photo even passes for a clean scan and
    keeps the whole shadow. So the shadow (_dithered_shadow, else _solid_shadow) is set to paper,
    a margin of SHADOW_MARGIN pixels round it. On a draw of the fold models' own writers' paper
    photos (seed 777, not the card's) 1,735 -> 1,795 of 1,864 two-level photos read right; every
    form of the card's five kinds comes out as before (learn/NOTES.md, 2026-11-30)."""
    lo, hi = float(v.min()), float(v.max())
    ink = v > (lo + hi) / 2
    shadow = _dithered_shadow(ink)
    if shadow is None:
        shadow = _solid_shadow(ink)
    return v if shadow is None else np.where(shadow, np.float32(lo), v).astype(np.float32)


def _dithered_shadow(ink: np.ndarray) -> np.ndarray | None:
    """Where the threshold left dither (DITHER_SPECKS lone pixels): the dither closed into its region
    (DITHER_GAP), the regions wider than SHADOW_WIDTH of the image every way opened out (a pen's
    stroke is thinner), with their margin; None without dither or such a region. (A scan whose
    digit fills its box has bars as wide as that, and no dither.)"""
    if np.count_nonzero(ink & (_box_count(ink, 1) <= 2)) < DITHER_SPECKS:
        return None
    area = (2 * DITHER_GAP + 1) ** 2
    closed = _box_count(_box_count(ink, DITHER_GAP) > 0, DITHER_GAP) == area
    k = max(2, round(SHADOW_WIDTH * max(ink.shape)))
    core = _box_count(closed, k) == (2 * k + 1) ** 2
    return _box_count(core, k + SHADOW_MARGIN) > 0 if core.any() else None


def _solid_shadow(ink: np.ndarray) -> np.ndarray | None:
    """A clean-edged shadow: solid ink wider than SOLID_SHADOW of the image every way, reaching the
    border (a shadow comes from outside the frame), with its margin; only where ink is left beside
    it and that ink is thinner by PEN_RATIO (its width 2 x area / boundary): a form's stretched digit
    is solid too, but its other strokes are as thick. None where it is no shadow."""
    k = max(2, round(SOLID_SHADOW * max(ink.shape)))
    core = _box_count(ink, k) == (2 * k + 1) ** 2
    if not (core[0].any() or core[-1].any() or core[:, 0].any() or core[:, -1].any()):
        return None
    shadow = _box_count(core, k + SHADOW_MARGIN) > 0
    rest = ink & ~shadow
    left = np.count_nonzero(rest)
    if left < 0.02 * np.count_nonzero(ink):
        return None  # nothing beside it: the region is the digit
    width = 2 * left / max(1, np.count_nonzero(rest & (_box_count(rest, 1) < 9)))
    return shadow if 2 * k + 1 >= PEN_RATIO * width else None


def _pieces(mask: np.ndarray) -> np.ndarray:
    """Connected pieces of a small boolean field (8-neighbours): each pixel's label is the least flat
    index + 1 in its piece, 0 off the mask. Each round hooks every piece's root to the least root
    next to it and then follows the pointers to the roots (pointer jumping), so the rounds grow as
    the log of a piece's length, not with it: a stroke 200 pixels long takes ~10, not 200."""
    h, w = mask.shape
    none = h * w
    on = mask.ravel()
    parent = np.where(np.append(on, False), np.arange(none + 1), none)
    while True:
        root = parent[:none].reshape(h, w)
        least = np.where(mask, _extreme3(root, np.minimum), none)
        before = parent.copy()
        np.minimum.at(parent, root[mask], least[mask])
        while True:  # every pointer to its root
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped
        if np.array_equal(parent, before):
            return np.where(mask, parent[:none].reshape(h, w) + 1, 0)


def _stray_ink(v: np.ndarray, cut: float) -> np.ndarray | None:
    """Of a photo's or two-level scan's ink (v > cut), what is not the digit, as a mask of v's shape
    (None: nothing).

    A shadow's rim the background step leaves, a thresholded shadow's last dither, or what is left of
    a form's printed box, lies along the border and joined to it; specks lie apart from the digit. So, on a copy at most
    STRAY_FIELD pixels across (each pixel the max of its block): the pieces joined to the
    border go when at least BORDER_KEEP of the ink is not (a digit cut by the frame stays),
    then any piece under SPECK_MASS of the largest lying further from it than SPECK_GAP of its
    size. The five fold models on their own writers' paper photos: 96.00 -> 96.48 % (lit photos), and
    on two-level scans too 96.93 -> 97.28 %, `boxed-32` +0.24, the stretched and fitted forms -0.02 to
    -0.04 (learn/NOTES.md)."""
    f = max(1, max(v.shape) // STRAY_FIELD)
    h, w = v.shape[0] // f, v.shape[1] // f
    blocks = v[: h * f, : w * f].reshape(h, f, w * f).max(axis=1)  # one axis at a time: 5x faster than both at once
    ink = blocks.reshape(h, w, f).max(axis=2) > cut
    pieces = _pieces(ink)
    rim = ink & np.isin(pieces, np.concatenate([pieces[0], pieces[-1], pieces[:, 0], pieces[:, -1]]))
    keep = ink & ~rim
    if not rim.any() or np.count_nonzero(keep) < BORDER_KEEP * np.count_nonzero(ink):
        keep = ink.copy()
    ys, xs = np.nonzero(keep)
    ids, piece, mass = np.unique(pieces[ys, xs], return_inverse=True, return_counts=True)
    if len(ids) > 1:  # each piece's box, then its gap to the largest piece's box
        top, left = np.full(len(ids), keep.size), np.full(len(ids), keep.size)
        bottom, right = np.full(len(ids), -1), np.full(len(ids), -1)
        np.minimum.at(top, piece, ys), np.minimum.at(left, piece, xs)
        np.maximum.at(bottom, piece, ys), np.maximum.at(right, piece, xs)
        big = np.argmax(mass)
        size = max(bottom[big] - top[big], right[big] - left[big]) + 1
        gap = np.maximum.reduce([top[big] - bottom, top - bottom[big], left[big] - right, left - right[big]])
        speck = (mass < SPECK_MASS * mass[big]) & (gap > SPECK_GAP * size)
        keep[ys[speck[piece]], xs[speck[piece]]] = False
    drop = ink & ~keep
    if not drop.any():
        return None
    full = np.zeros(v.shape, np.uint8)
    full[: h * f, : w * f] = np.repeat(np.repeat(drop, f, 0), f, 1)
    return _dilate(full).astype(bool)  # and the blocks' blurred edges


def _ink(image: np.ndarray) -> np.ndarray | None:
    """The ink's box, ink bright in [0, 1] on zero paper (background and paper noise
    removed); None if blank. Only the box is normalised: that keeps a canvas fast."""
    img = _as_unit_float(image)
    two_level = _two_level(img)
    if two_level:
        img = _without_printed_lines(img)
    edge = _border(img)
    v = (1.0 - img) if _dark_ink(img, float(edge[len(edge) // 2])) else img
    scan = two_level and _clean_binary(edge)  # else a two-level image is a thresholded photo
    if two_level:  # (a photo with a small shadow in a corner passes for a clean scan)
        v = _without_shadow(v)
    bg = _background(v)
    lit = bg is not None and not scan
    if lit:
        v = v - bg
    paper, noise = _median_deviation(_border(v))
    for stray in (lit or two_level, False):  # a photo's or scan's strays go; its contrast again without them
        row_ext, col_ext = v.max(axis=1), v.max(axis=0)
        contrast = float(row_ext.max()) - paper
        if contrast < MIN_CONTRAST:
            return None
        cut = paper + max(INK_THRESHOLD * contrast, NOISE_SIGMAS * noise)
        drop = _stray_ink(v, cut) if stray else None
        if drop is None:
            break
        v = np.where(drop, np.float32(paper), v).astype(np.float32)
    rows, cols = np.flatnonzero(row_ext > cut), np.flatnonzero(col_ext > cut)
    if rows.size == 0 or cut >= paper + 0.9 * contrast:
        return None
    ink = v[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1] - np.float32(cut)
    ink *= np.float32(1.0 / (paper + contrast - cut))
    np.clip(ink, 0.0, 1.0, out=ink)
    return ink


def _span(mass: np.ndarray, trim: float) -> tuple[int, int]:
    """[first, last] index of a mass profile, less `trim` of the total at each end."""
    cum = np.cumsum(mass, dtype=np.float64)
    total = cum[-1]
    first = int(np.searchsorted(cum, trim * total, side="right"))
    last = int(np.searchsorted(cum, (1.0 - trim) * total, side="left"))
    return min(first, last), max(first, last)


def _crop(ink: np.ndarray, trim: float = TRIM) -> np.ndarray | None:
    """The ink's bounding box; `trim` of the mass may be cut off each side (stray specks)."""
    rows, cols = ink.sum(axis=1), ink.sum(axis=0)
    if float(rows.sum()) <= 0.0:
        return None
    r0, r1 = _span(rows, trim)
    c0, c1 = _span(cols, trim)
    return ink[r0 : r1 + 1, c0 : c1 + 1]


def _resample(img: np.ndarray, longer: int) -> np.ndarray:
    """Area-resampled so that the longer side is `longer` px (aspect kept)."""
    h, w = img.shape
    scale = longer / max(h, w)
    oh, ow = max(1, round(h * scale)), max(1, round(w * scale))
    return area_matrix(h, oh) @ img @ area_matrix(w, ow).T


def _moments(img: np.ndarray) -> tuple[float, float]:
    """(row of the centre of mass, slant): x shift per row downwards of the ink's principal
    axis from the second moments mu11 / mu02, clamped to MAX_SLANT."""
    total = float(img.sum())
    if total <= 0.0:
        return 0.0, 0.0
    y = np.arange(img.shape[0], dtype=np.float32)
    x = np.arange(img.shape[1], dtype=np.float32)
    py = img.sum(axis=1)
    cy = float(py @ y) / total
    cx = float(img.sum(axis=0) @ x) / total
    mu02 = float(py @ (y - cy) ** 2) / total
    if mu02 < 1e-6:
        return cy, 0.0
    mu11 = float((y - cy) @ img @ (x - cx)) / total
    return cy, float(np.clip(mu11 / mu02, -MAX_SLANT, MAX_SLANT))


def deslant(img: np.ndarray) -> np.ndarray:
    """The image sheared so that its principal axis is upright: x' = x - slant * (y - cy).

    Each row moves by the same amount everywhere along it, so a row is a blend of two
    whole-pixel shifts of itself (linear interpolation), onto a field wide enough to hold them.
    """
    cy, s = _moments(img)
    h, w = img.shape
    if abs(s) * h < 0.5:  # less than half a pixel over the whole height: nothing to do
        return img
    shift = -s * (np.arange(h, dtype=np.float32) - cy)  # how far each row moves right
    shift -= np.floor(shift.min())
    whole = np.floor(shift).astype(np.int64)
    frac = (shift - whole).astype(np.float32)[:, None]
    width = w + int(whole.max()) + 2
    out = np.zeros((h, width), dtype=np.float32)
    at = (np.arange(h) * width + whole)[:, None] + np.arange(w)[None, :]  # row y, pixel x -> x + whole[y]
    out.flat[at] = (1.0 - frac) * img
    out.flat[at + 1] += frac * img
    return out


def stroke_width(img: np.ndarray) -> float:
    """Mean stroke width in px: 2 x ink area / perimeter (an L x W stroke: 2LW / 2L = W).

    The perimeter is the summed absolute gradient (soft edges count by their
    contrast), times pi/4 for the L1 norm's overcount of slanted edges.
    """
    area = float(img.sum())
    if area <= 0.0:
        return 0.0
    # interior edges, plus the outermost rows and columns against the zero beyond them (ink >= 0)
    edges = float(np.abs(np.diff(img, axis=0)).sum() + np.abs(np.diff(img, axis=1)).sum()
                  + img[0].sum() + img[-1].sum() + img[:, 0].sum() + img[:, -1].sum())
    return 2.0 * area / (edges * np.pi / 4.0) if edges > 0 else 0.0


def normalise_width(img: np.ndarray, target: float = TARGET_WIDTH) -> np.ndarray:
    """Strokes brought to `target` px wide: grey dilation or erosion (each 3x3 step moves
    the width by about 2 px), the last step blended in proportion to what is left."""
    w = stroke_width(img)
    grow = (target - w) / 2.0
    if abs(grow) < 0.25:
        return img
    step = _dilate if grow > 0 else _erode
    img = np.pad(img, 2 + int(abs(grow))) if grow > 0 else img
    for _ in range(int(abs(grow))):
        nxt = step(img)
        if not nxt.any():  # eroded away: a stroke this thin stays as it is
            return img
        img = nxt
    frac = abs(grow) - int(abs(grow))
    nxt = step(img)
    if nxt.any():
        img = img + np.float32(frac) * (nxt - img)
    return img


def _full_strength(img: np.ndarray) -> np.ndarray:
    """Stroke cores at 1, as MNIST's: a thin or grey line, widened, is still a faint one,
    so the image is divided by the level most of its ink reaches (80th percentile)."""
    values = img[img > 0.05]
    if values.size == 0:
        return img
    k = int(0.8 * (values.size - 1))
    level = float(np.partition(values, k)[k])
    return np.minimum(img * np.float32(1.0 / level), 1.0) if level < 1.0 else img


def preprocess(image: np.ndarray) -> np.ndarray | None:
    """Any-size, either-polarity image [H, W] (uint8 or float) -> float32 [28, 28] in [0, 1], ink bright.

    Returns None when there is no ink, so callers show "draw a digit" instead of
    a confident guess about an empty canvas.
    """
    ink = _ink(image)
    crop = _crop(ink) if ink is not None else None
    if crop is None:
        return None
    mid = _resample(crop, MID)
    top = float(mid.max())
    if top <= 0.0:
        return None
    mid *= np.float32(1.0 / top)  # a thin pen, scaled down, is a faint line: full strength again
    mid = _crop(_full_strength(normalise_width(deslant(mid))), 0.0)
    if mid is None:
        return None
    box = np.clip(_resample(mid, BOX), 0.0, 1.0).astype(np.float32)
    oh, ow = box.shape
    total = float(box.sum())
    if total <= 0.0:
        return None
    # centre of mass of the scaled box onto CENTRE, clamped so that no ink falls off the
    # 28x28 field; the fraction of a pixel is a bilinear shift, so that moving a drawing by
    # a pixel on the canvas never jumps the output by one
    cy = float(box.sum(axis=1) @ np.arange(oh, dtype=np.float32)) / total
    cx = float(box.sum(axis=0) @ np.arange(ow, dtype=np.float32)) / total
    oy = min(max(CENTRE[0] - cy, 0.0), float(SIZE - oh))
    ox = min(max(CENTRE[1] - cx, 0.0), float(SIZE - ow))
    iy, ix = int(oy), int(ox)
    fy, fx = np.float32(oy - iy), np.float32(ox - ix)
    field = np.zeros((SIZE + 1, SIZE + 1), dtype=np.float32)
    field[iy + 1 : iy + 1 + oh, ix + 1 : ix + 1 + ow] = box
    out = (1 - fy) * ((1 - fx) * field[1:, 1:] + fx * field[1:, :-1]) + fy * ((1 - fx) * field[:-1, 1:]
                                                                            + fx * field[:-1, :-1])
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
