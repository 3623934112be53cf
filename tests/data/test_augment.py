"""Augmentation: warps keep the digit, thinning gives 1-pixel connected skeletons, repainting has the brush's width."""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.data import augment
from gemmpad.inputs.strokes import render


def test_identity_warp_is_identity(rng: np.random.Generator) -> None:
    imgs = rng.uniform(0, 1, (3, 28, 28)).astype(np.float32)
    out = augment.warp(imgs, 28, rng, elastic_alpha=0.0, rotate_deg=0.0, shear=0.0, aspect=0.0)
    np.testing.assert_allclose(out, imgs, atol=1e-5)


def _ink_ratio(rng: np.random.Generator, **kw: float) -> np.ndarray:
    img = render([np.array([[8.0, 6.0], [20.0, 6.0], [12.0, 22.0]])], (28, 28), 2.5)[None].repeat(16, 0)
    out = augment.warp(img, 56, rng, **kw)
    assert out.shape == (16, 56, 56)
    return out.sum((1, 2)) / (4 * img.sum((1, 2)))  # 2x upsampling -> 4x the ink


def test_affine_warp_scales_ink_by_its_determinant(rng: np.random.Generator) -> None:
    """Rotation and slant keep area; the aspect factor exp(U(-0.2, 0.2)) scales it, so the ink
    ratio lies in [exp(-0.2), exp(0.2)] (a fixed bound: it held exactly over 16,000 draws)."""
    ratio = _ink_ratio(rng, elastic_alpha=0.0)
    assert np.all((ratio > np.exp(-0.2) - 0.01) & (ratio < np.exp(0.2) + 0.01)), ratio


def test_elastic_warp_keeps_most_ink(rng: np.random.Generator) -> None:
    """A smooth displacement moves ink locally but keeps the total on average. Over 32,000 draws
    each image kept 0.72-1.37 of its ink and the median of 16 stayed in 0.94-1.05; the bounds
    leave room (a fixed 0.7-1.3 band on the combined warp failed about one run in three)."""
    ratio = _ink_ratio(rng, rotate_deg=0.0, shear=0.0, aspect=0.0)
    assert np.all((ratio > 0.5) & (ratio < 2.0)), ratio
    assert 0.85 < np.median(ratio) < 1.15, ratio


def test_bilinear_matches_a_direct_interpolation(rng: np.random.Generator) -> None:
    img = rng.uniform(0, 1, (2, 9, 11)).astype(np.float32)
    y, x = rng.uniform(0, 8, (2, 5, 5)), rng.uniform(0, 10, (2, 5, 5))
    out = augment.bilinear(img, y, x)
    for n in range(2):
        for i in range(5):
            for j in range(5):
                y0, x0 = int(np.floor(y[n, i, j])), int(np.floor(x[n, i, j]))
                fy, fx = y[n, i, j] - y0, x[n, i, j] - x0
                ref = sum(img[n, min(y0 + a, 8), min(x0 + b, 10)] * (fy if a else 1 - fy) * (fx if b else 1 - fx)
                          for a in (0, 1) for b in (0, 1))
                assert out[n, i, j] == pytest.approx(ref, abs=1e-5)


def _neighbours(skel: np.ndarray) -> np.ndarray:
    p = np.pad(skel.astype(int), 1)
    return sum(np.roll(np.roll(p, dy, 0), dx, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)[1:-1, 1:-1]


def test_thinning_a_thick_bar_and_ring() -> None:
    bar = np.zeros((20, 40), bool)
    bar[7:13, 5:35] = True
    yy, xx = np.mgrid[0:40, 0:40]
    ring = (np.hypot(yy - 20, xx - 20) < 14) & (np.hypot(yy - 20, xx - 20) > 8)
    skel_bar, = augment.thin(bar[None])
    skel_ring, = augment.thin(ring[None])
    assert skel_bar.sum() > 20 and skel_bar.sum(axis=0).max() == 1  # one pixel thick, long
    assert np.all(skel_bar <= bar) and np.all(skel_ring <= ring)  # inside the shape
    assert 40 < skel_ring.sum() < 90  # a closed curve around radius ~11 (circumference ~69)
    assert np.all(_neighbours(skel_ring)[skel_ring] >= 2)  # still closed: no endpoints


def test_paint_skeleton_width(rng: np.random.Generator) -> None:
    skel = np.zeros((2, 30, 30), bool)
    skel[:, 15, 5:25] = True
    r = np.array([1.0, 3.0])
    out = augment.paint_skeleton(skel, r)
    widths = out[:, :, 15].sum(axis=1)  # ink across the line = 2r, as for a painted segment
    assert widths[0] == pytest.approx(2.0, abs=0.1) and widths[1] == pytest.approx(6.0, abs=0.1)
    assert out.max() == 1.0 and out.min() == 0.0


def test_restroke_gives_uniform_strokes(rng: np.random.Generator) -> None:
    img = render([np.array([[6.0, 5.0], [21.0, 5.0], [11.0, 23.0]])], (28, 28), 3.5)[None].repeat(4, 0)
    out = augment.restroke(img, rng)
    assert out.shape == (4, 56, 56) and np.all(out.sum((1, 2)) > 40)


def _stick(n: int) -> np.ndarray:
    """n skeletons [n, 56, 56] of a vertical stroke: a plain 1's (or a 7's or 9's stem)."""
    sk = np.zeros((n, 56, 56), bool)
    sk[:, 8:48, 28] = True
    return sk


def test_european_strokes_go_on_ones_sevens_and_nines_only() -> None:
    labels = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    out = augment.european(_stick(10), labels, np.random.default_rng(3), share=1.0)
    added = (out & ~_stick(10)).sum(axis=(1, 2))
    assert np.all(added[[1, 7, 9]] > 5) and np.all(added[[0, 2, 3, 4, 5, 6, 8]] == 0)
    assert np.array_equal(out & _stick(10), _stick(10))  # nothing taken away
    none = augment.european(_stick(10), labels, np.random.default_rng(3), share=0.0)
    assert np.array_equal(none, _stick(10))


def test_the_european_one_has_a_long_flag_and_the_seven_a_bar() -> None:
    rng = np.random.default_rng(4)
    for _ in range(10):
        one, seven = augment.european(_stick(2), np.array([1, 7]), rng, share=1.0)
        ys, xs = np.nonzero(one & ~_stick(1)[0])
        flag_end = ys[xs.argmin()]
        assert xs.min() < 28 - 0.25 * 40 and flag_end > 8 + 0.4 * 40  # far left, nearly half the height down
        ys, xs = np.nonzero(seven & ~_stick(1)[0])
        assert np.ptp(ys) == 0 and xs.min() < 28 < xs.max()  # one row, across the stem


def test_restroke_without_european_share_is_what_it_was() -> None:
    """The shipped model's training copies must not change when the option is off."""
    img = render([np.array([[6.0, 5.0], [21.0, 5.0], [11.0, 23.0]])], (28, 28), 3.5)[None].repeat(3, 0)
    plain = augment.restroke(img, np.random.default_rng(8))
    off = augment.restroke(img, np.random.default_rng(8), labels=np.array([7, 7, 7]), european_share=0.0)
    on = augment.restroke(img, np.random.default_rng(8), labels=np.array([7, 7, 7]), european_share=1.0)
    np.testing.assert_array_equal(plain, off)
    assert on.sum() > plain.sum()
