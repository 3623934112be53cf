"""Make MNIST look like drawings: warps, skeletons and re-painted strokes, in whole-batch NumPy.

Three transformations, each aimed at one difference between MNIST and the app:
- `warp`: random affine (slant, rotation, aspect) plus elastic distortion (Simard
  et al. 2003), so the model sees many more shapes of the same digit.
- `thin`: Zhang-Suen skeletonisation, which recovers the pen's path from a pen-on-
  paper digit, and `paint_skeleton`: repaint that path with a round brush of uniform
  random width (the app's brush profile), which turns a pen digit into a mouse digit.
- `european`: the strokes of European handwriting MNIST's American writers lack, added to
  those skeletons before repainting: a long flag (and a base) on 1s, a bar across 7s, a
  long curled tail on 9s (`restroke(..., labels, european=share)`).
Everything runs on a whole batch at once (tens of thousands of images in seconds
per step); no per-image Python loop except the final preprocess() and the few pixels
of `european`'s added strokes.
"""

from __future__ import annotations

import numpy as np


def smooth_noise(rng: np.random.Generator, shape: tuple[int, int, int], sigma: float) -> np.ndarray:
    """Uniform(-1, 1) noise [N, H, W] blurred by a Gaussian of `sigma` px (via FFT, periodic)."""
    n, h, w = shape
    noise = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    fy = np.fft.fftfreq(h)[:, None]
    fx = np.fft.rfftfreq(w)[None, :]
    transfer = np.exp(-2.0 * (np.pi * sigma) ** 2 * (fy**2 + fx**2)).astype(np.float32)
    return np.fft.irfft2(np.fft.rfft2(noise) * transfer, s=(h, w)).astype(np.float32)


def random_affine(rng: np.random.Generator, n: int, rotate_deg: float = 12.0, shear: float = 0.3,
                  aspect: float = 0.2) -> np.ndarray:
    """[n, 2, 2] matrices mapping output (y, x) offsets to input offsets: rotation, slant, aspect."""
    a = np.radians(rng.uniform(-rotate_deg, rotate_deg, n))
    k = rng.uniform(-shear, shear, n)
    sx = np.exp(rng.uniform(-aspect, aspect, n))
    c, s = np.cos(a), np.sin(a)
    rot = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)
    shear_m = np.zeros((n, 2, 2))
    shear_m[:, 0, 0] = 1.0
    shear_m[:, 1, 1] = sx
    shear_m[:, 1, 0] = k  # x moves with y: slant
    return rot @ shear_m


def warp(images: np.ndarray, size: int, rng: np.random.Generator, elastic_alpha: float = 0.8,
         elastic_sigma: float = 4.0, **affine: float) -> np.ndarray:
    """Resample images [N, h, w] onto [N, size, size] with a random affine and elastic warp each.

    Bilinear sampling; the output grid spans the input (so size > h also upsamples).
    Each image's displacement field has an RMS drawn from U(0, elastic_alpha) input
    pixels and a smoothness (Gaussian sigma) of elastic_sigma input pixels.
    """
    n, h, w = images.shape
    f = h / size
    mats = random_affine(rng, n, **affine)
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float32)
    cy, cx = (size - 1) / 2.0, (size - 1) / 2.0
    oy, ox = (ys - cy) * f, (xs - cx) * f
    src_y = mats[:, 0, 0, None, None] * oy + mats[:, 0, 1, None, None] * ox + (h - 1) / 2.0
    src_x = mats[:, 1, 0, None, None] * oy + mats[:, 1, 1, None, None] * ox + (w - 1) / 2.0
    if elastic_alpha > 0:
        amp = rng.uniform(0.0, elastic_alpha, (n, 1, 1)).astype(np.float32)
        for src in (src_y, src_x):
            field = smooth_noise(rng, (n, size, size), elastic_sigma / f)
            field /= field.std(axis=(1, 2), keepdims=True) + 1e-12
            src += amp * field
    return bilinear(images, src_y, src_x)


def bilinear(images: np.ndarray, src_y: np.ndarray, src_x: np.ndarray) -> np.ndarray:
    """Sample images [N, h, w] at float coordinates [N, H, W]; zero outside."""
    n, h, w = images.shape
    padded = np.zeros((n, h + 2, w + 2), dtype=np.float32)
    padded[:, 1:-1, 1:-1] = images
    y = np.clip(src_y + 1.0, 0.0, h + 0.999)
    x = np.clip(src_x + 1.0, 0.0, w + 0.999)
    y0 = np.floor(y).astype(np.int64)
    x0 = np.floor(x).astype(np.int64)
    fy, fx = (y - y0).astype(np.float32), (x - x0).astype(np.float32)
    flat = padded.reshape(n, -1)
    base = (np.arange(n) * (h + 2) * (w + 2))[:, None, None]
    idx = base + y0 * (w + 2) + x0
    flat = flat.reshape(-1)
    v00, v01 = flat[idx], flat[idx + 1]
    v10, v11 = flat[idx + (w + 2)], flat[idx + (w + 3)]
    return ((v00 * (1 - fx) + v01 * fx) * (1 - fy) + (v10 * (1 - fx) + v11 * fx) * fy).astype(np.float32)


def thin(mask: np.ndarray, max_iterations: int = 50) -> np.ndarray:
    """Zhang-Suen thinning of binary images [N, H, W] (bool) to 1-pixel skeletons, all at once.

    Each sub-iteration deletes the border pixels that are neither endpoints nor
    bridges (exactly one 0->1 transition around them, 2..6 ink neighbours), first
    from the south-east, then the north-west, until nothing changes.
    """
    p = np.pad(mask.astype(np.uint8), ((0, 0), (1, 1), (1, 1)))
    for _ in range(max_iterations):
        changed = False
        for step in (0, 1):
            c = p[:, 1:-1, 1:-1]
            n2, n3, n4 = p[:, :-2, 1:-1], p[:, :-2, 2:], p[:, 1:-1, 2:]
            n5, n6, n7 = p[:, 2:, 2:], p[:, 2:, 1:-1], p[:, 2:, :-2]
            n8, n9 = p[:, 1:-1, :-2], p[:, :-2, :-2]
            ring = (n2, n3, n4, n5, n6, n7, n8, n9, n2)
            b = n2 + n3 + n4 + n5 + n6 + n7 + n8 + n9
            a = sum(((ring[i] == 0) & (ring[i + 1] == 1)).astype(np.uint8) for i in range(8))
            if step == 0:
                cond = ((n2 * n4 * n6) == 0) & ((n4 * n6 * n8) == 0)
            else:
                cond = ((n2 * n4 * n8) == 0) & ((n2 * n6 * n8) == 0)
            remove = (c == 1) & (b >= 2) & (b <= 6) & (a == 1) & cond
            if remove.any():
                changed = True
                c[remove] = 0
        if not changed:
            break
    return p[:, 1:-1, 1:-1].astype(bool)


def paint_skeleton(skeleton: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Paint every skeleton pixel [N, H, W] as a disk of radius[N] px: the app's brush profile.

    Coverage is clip(r + 0.5 - distance, 0, 1) and max-blended, the same as
    gemmpad.inputs.strokes.paint_segment; along a skeleton (pixels 1-1.4 px apart) the
    union of disks is a uniform-width, anti-aliased stroke.
    """
    n, h, w = skeleton.shape
    reach = int(np.ceil(float(radius.max()) + 0.5))
    src = np.pad(skeleton.astype(np.float32), ((0, 0), (reach, reach), (reach, reach)))
    out = np.zeros((n, h, w), dtype=np.float32)
    r = radius.astype(np.float32)[:, None, None]
    for dy in range(-reach, reach + 1):
        for dx in range(-reach, reach + 1):
            d = float(np.hypot(dy, dx))
            cover = np.clip(r + 0.5 - d, 0.0, 1.0)
            if not cover.any():
                continue
            shifted = src[:, reach + dy : reach + dy + h, reach + dx : reach + dx + w]
            np.maximum(out, shifted * cover, out=out)
    return out


def _draw_path(mask: np.ndarray, pts: list[tuple[float, float]]) -> None:
    """Set the pixels of mask [H, W] along straight pieces through (y, x) points, in place
    (half-pixel steps: a 1-pixel skeleton line, clipped at the edges)."""
    h, w = mask.shape
    for (y0, x0), (y1, x1) in zip(pts, pts[1:]):
        n = int(np.ceil(2 * max(abs(y1 - y0), abs(x1 - x0)))) + 1
        ys = np.clip(np.round(np.linspace(y0, y1, n)), 0, h - 1).astype(np.int64)
        xs = np.clip(np.round(np.linspace(x0, x1, n)), 0, w - 1).astype(np.int64)
        mask[ys, xs] = True


EUROPEAN_DIGITS = (1, 7, 9)  # the digits `european` changes; 4s are open in MNIST already


def european(skeleton: np.ndarray, labels: np.ndarray, rng: np.random.Generator, share: float = 0.5) -> np.ndarray:
    """Skeletons [N, H, W] (bool) with European strokes added to `share` of the 1s, 7s and 9s:

    1: a flag from the top down to the left of the stem, ending 45-80 % of the way down
    (nearly the full height), and half of those a base; 7: a bar across the stem at mid-height;
    9: the tail's end carried a little lower and curled back to the left. All sizes are
    relative to the digit's height, so they suit any warp.
    """
    out = skeleton.copy()
    chosen = np.isin(labels, EUROPEAN_DIGITS) & (rng.random(len(labels)) < share)
    for i in np.flatnonzero(chosen):
        ys, xs = np.nonzero(out[i])
        if len(ys) < 2:
            continue
        top, bottom = int(ys.min()), int(ys.max())
        height = max(bottom - top, 1)
        tx, bx = float(xs[ys == top].mean()), float(xs[ys == bottom].mean())
        if labels[i] == 1:
            u, v = rng.uniform(0.45, 0.8), rng.uniform(0.3, 0.5)
            stem_x = tx + u * (bx - tx)  # the stem's x at the flag's end: a slanted 1's flag still stands out
            _draw_path(out[i], [(top, tx), (top + u * height, stem_x - v * height)])
            if rng.random() < 0.5:
                b = rng.uniform(0.2, 0.35) * height
                _draw_path(out[i], [(bottom, bx - b), (bottom, bx + b)])
        elif labels[i] == 7:
            y = int(round(top + rng.uniform(0.45, 0.6) * height))
            row = np.flatnonzero(out[i][y])
            cx = float(row.mean()) if len(row) else tx
            c = rng.uniform(0.15, 0.25) * height
            _draw_path(out[i], [(y, cx - c), (y, cx + c)])
        else:
            drop, r = rng.uniform(0.05, 0.15) * height, rng.uniform(0.15, 0.25) * height
            end = rng.uniform(0.6, 0.9) * np.pi  # how far the curl turns: up to the left and back up
            phi = np.linspace(0.0, end, 8)
            curl = [(bottom + drop - r + r * np.cos(a), bx - r * np.sin(a)) for a in phi]
            _draw_path(out[i], [(bottom, bx), *curl])
    return out


def restroke(images: np.ndarray, rng: np.random.Generator, size: int = 56,
             radius: tuple[float, float] = (0.9, 3.3), labels: np.ndarray | None = None,
             european_share: float = 0.0) -> np.ndarray:
    """MNIST digits [N, 28, 28] (ink bright, [0,1]) -> warped, skeletonised, repainted [N, size, size].

    The warp happens on the grey image before thresholding, so the repainted
    strokes keep a uniform width (a warped stroke image would not). Radius is in
    output pixels; at size 56 a digit is ~40 px tall and preprocess halves it. With labels
    and european_share > 0, that share of the 1s, 7s and 9s gets European strokes (`european`);
    without, the random stream and the output are what they always were.
    """
    warped = warp(images, size, rng)
    skel = thin(warped > 0.5)
    if labels is not None and european_share > 0:
        skel = european(skel, labels, rng, european_share)
    r = rng.uniform(radius[0], radius[1], len(images))
    return paint_skeleton(skel, r)
