"""Scanned forms (gemmpad.data.forms): repeatable binary bitmaps of both polarities whose digit
really fills its box, and `gemmpad eval --forms` reading them per variant."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gemmpad.commands import evaluate
from gemmpad.data import forms, paper, pendigits
from gemmpad.commands.cli import main
from gemmpad.runtime.model import Model, load_model

from tests.pendigits_data import pendigits_file, unipen
from tests.commands.test_eval import constant_model

# A narrow digit (a stick 1 with a short flag, y up as in the pendigits file): the case
# where stretching to the box and fitting it differ most.
STICK = pendigits.PenDigit(digit=1, writer=1, strokes=[
    np.array([[40, 420], [60, 500], [62, 300], [64, 100], [66, 0]], dtype=np.float32)])


def ink_box(img: np.ndarray) -> tuple[int, int]:
    """(height, width) of the ink's bounding box in a binary bitmap of either polarity
    (the paper is the colour of the corner, which every variant leaves blank)."""
    ys, xs = np.nonzero(img != img[0, 0])
    return int(np.ptp(ys)) + 1, int(np.ptp(xs)) + 1


@pytest.mark.parametrize("name", forms.VARIANTS)
def test_each_variant_is_a_repeatable_binary_bitmap(name: str) -> None:
    v = forms.VARIANTS[name]
    a = [forms.on_form(STICK, name, np.random.default_rng(5)) for _ in range(2)]
    np.testing.assert_array_equal(a[0], a[1])
    rng = np.random.default_rng(6)
    for _ in range(6):
        img = forms.on_form(STICK, name, rng)
        assert img.dtype == np.uint8 and img.ndim == 2
        assert set(np.unique(img)) == {0, 255}
        margin = 3 if v.lines else 1
        f = img.shape[0] // (v.box[0] + 2 * margin)
        assert f in v.upsample and img.shape == ((v.box[0] + 2 * margin) * f, (v.box[1] + 2 * margin) * f)


def test_both_polarities_come_out() -> None:
    rng = np.random.default_rng(7)
    corners = {int(forms.on_form(STICK, "stretch-16", rng)[0, 0]) for _ in range(20)}
    assert corners == {0, 255}  # white on black and black on white


def test_stretch_fills_the_box_and_fit_keeps_the_shape() -> None:
    """The box-filling stretch of form collections: a narrow 1 comes out as wide as its box
    (aspect NOT kept), where fit-32 keeps it narrow."""
    for seed in range(4):
        img = forms.on_form(STICK, forms.FormVariant(box=(32, 32), blur=0.0, upsample=(1,)),
                            np.random.default_rng(seed))
        h, w = ink_box(img)
        assert h >= 30 and w >= 30
        fit = forms.on_form(STICK, forms.FormVariant(box=(32, 32), stretch=False, blur=0.0, upsample=(1,)),
                            np.random.default_rng(seed))
        h, w = ink_box(fit)
        assert h >= 30 and w <= 0.5 * h


def test_into_box_of_a_blank_image_is_blank() -> None:
    assert not forms.into_box(np.zeros((64, 64), np.float32), (16, 16), stretch=True).any()


def test_paper_and_forms_share_one_threshold_and_blur() -> None:
    grey = np.array([[0.2, 0.5], [0.7, 1.0]], dtype=np.float32)
    np.testing.assert_array_equal(paper.binarise(grey, 0.6), [[0, 0], [255, 255]])
    scan = np.ones((4, 4), np.float32)
    scan[1, 1] = 0.0
    blurred = paper.scanner_blur(scan)
    assert blurred.min() == pytest.approx(0.75) and blurred.sum() == pytest.approx(15.0)  # ink spread, none lost


def writer_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, weights: Model) -> tuple[list, Path]:
    """The first `n` samples of pendigits writer 1 as the only pendigits data, and `weights` saved as a model file."""
    samples = [s for s in pendigits.read_pendigits(pendigits_file()) if s.writer == 1][:n]
    (tmp_path / pendigits.FILENAME).write_text(unipen(samples))
    monkeypatch.setenv("GEMMPAD_PENDIGITS", str(tmp_path))
    weights.save(tmp_path / "m.npz")
    return samples, tmp_path / "m.npz"


def test_eval_forms_reads_every_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    samples, model = writer_one(tmp_path, monkeypatch, 10, constant_model(1))
    assert main(["eval", "--model", str(model), "--forms", "--writers", "1", "--jobs", "1", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert list(results) == [f"pendigits writers 1 on forms, {v}" for v in forms.VARIANTS]
    ones = sum(s.digit == 1 for s in samples) / len(samples)
    for r in results.values():  # every 1 read as a 1, unless preprocess found no ink in a box it fills
        assert r["n"] == len(samples) and 0.0 < r["accuracy"] <= ones


def test_forms_sets_read_the_same_in_any_number_of_processes() -> None:
    samples = [s for s in pendigits.read_pendigits(pendigits_file()) if s.writer == 1][:8]
    names = [evaluate.FORMS + v for v in ("stretch-16", "boxed-32")]
    model = load_model()
    one, two = (evaluate.writer_sets(model, samples, names, jobs=j) for j in (1, 2))
    for name in names:
        np.testing.assert_array_equal(one[name].pred, two[name].pred)


def test_drawn_styles_go_on_forms_repeatably() -> None:
    a = forms.drawn_on_form("1-long-flag", "stretch-16", 3)
    b = forms.drawn_on_form("1-long-flag", "stretch-16", 3)
    assert len(a) == 3 and all(np.array_equal(x, y) for x, y in zip(a, b))
    assert all(set(np.unique(x)) == {0, 255} for x in a)
    other = forms.drawn_on_form("1-long-flag", "stretch-32", 3)
    assert other[0].shape != a[0].shape  # each variant its own box


def test_eval_drawn_styles_on_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    _, model = writer_one(tmp_path, monkeypatch, 2, constant_model(9))
    assert main(["eval", "--model", str(model), "--forms", "--writers", "1", "--jobs", "1",
                 "--drawn-styles", "9-curled", "--drawn-count", "2", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [k for k in results if k.startswith("drawn")] == [
        "drawn 9-curled", *(f"drawn 9-curled on forms, {v}" for v in forms.VARIANTS)]
    fit = results["drawn 9-curled on forms, fit-32"]
    assert fit["n"] == 2 and fit["accuracy"] == 1.0  # a constant 9 reads every (inked) 9


def test_training_forms_range_round_the_test_variants_without_being_them() -> None:
    """Training draws boxes of many sizes and shapes (not the test's five), stretched most of the time."""
    rng = np.random.default_rng(0)
    drawn = [forms.training_variant(rng) for _ in range(400)]
    boxes = {v.box for v in drawn}
    assert len(boxes) > 50 and all(12 <= h <= 32 and 8 <= w <= 40 for h, w in boxes)
    assert 0.6 < np.mean([v.stretch for v in drawn]) < 0.8 and not any(v.lines for v in drawn)


def test_an_mnist_image_on_a_form_is_a_binary_bitmap_of_its_box() -> None:
    image = np.zeros((28, 28), np.uint8)
    image[4:24, 12:16] = 255  # a tall 1: stretched, it fills the box
    v = forms.FormVariant(box=(16, 12), blur=0.0, upsample=(1,))
    out = forms.image_on_form(image, v, np.random.default_rng(1))
    assert out.shape == (18, 14) and set(np.unique(out)) <= {0, 255}
    ink = out < 128 if out[0, 0] == 255 else out > 128
    assert ink[1:-1, 1:-1].mean() > 0.9 and not ink[0].any()  # the box filled, the paper round it kept
