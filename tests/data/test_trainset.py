"""The training arrays: every source through preprocess, the same arrays for any --jobs, the cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gemmpad.data import pendigits, trainset


def one_images(n: int) -> tuple[np.ndarray, np.ndarray]:
    images = np.zeros((n, 28, 28), np.uint8)
    images[:, 5:23, 12:16] = 255  # n "1"s
    return images, np.ones(n, np.int64)


def pen_ones(writers: tuple[int, ...]) -> list[pendigits.PenDigit]:
    stroke = np.array([[200, 400], [210, 100]], np.float32)
    return [pendigits.PenDigit(digit=1, writer=w, strokes=[stroke]) for w in writers]


def test_training_set_sources_go_through_preprocess() -> None:
    images, labels = one_images(12)
    x, y, writer, counts = trainset.training_set(images, labels, ["original", "warp", "restroke", "drawn", "pendigits"],
                                                 0, 23, lambda s: None, pen_ones((3, 4)))
    copies = trainset.PEN_COPIES
    assert counts == {"original": 12, "warp": 12, "restroke": 12, "drawn": 23, "pendigits": 2 * copies}
    n = 59 + 2 * copies
    assert x.shape == (n, 784) and x.dtype == np.float32 and y.shape == (n,)
    assert 0.0 <= x.min() and x.max() <= 1.0
    assert np.all(x[:36].reshape(36, 28, 28).max(axis=(1, 2)) > 0.5)  # no digit lost
    assert set(y[:36]) == {1} and set(y[36:59]) <= set(range(10)) and set(y[59:]) == {1}
    assert set(writer[:59]) == {0} and sorted(writer[59:]) == [3] * copies + [4] * copies  # rows by writer


def test_the_arrays_depend_on_the_seed_not_on_the_number_of_jobs(monkeypatch) -> None:
    """Chunks carry their own random streams, so 1 and 3 processes build the same bytes."""
    monkeypatch.setattr(trainset, "CHUNK", 4)  # several chunks per source from a few images
    monkeypatch.setattr(trainset, "PEN_CHUNK", 2)
    images, labels = one_images(10)
    labels = np.arange(10, dtype=np.int64)  # labels must follow their own images across chunks
    args = (images, labels, ["original", "warp", "restroke", "drawn", "pendigits", "paper", "forms", "forms-mnist",
                             "forms-drawn"],
            5, 9, lambda s: None, pen_ones((1, 2, 3)), 2, 2, 2)
    one = trainset.training_set(*args, jobs=1)
    three = trainset.training_set(*args, jobs=3)
    for a, b in zip(one[:3], three[:3]):
        np.testing.assert_array_equal(a, b)
    assert one[3] == three[3]
    assert one[3].pop("forms-drawn") == 9
    made = one[3].pop("forms-mnist")  # a bar stretched into a box is a solid block: preprocess finds no ink in some
    assert 5 <= made <= 10 and one[3] == {"original": 10, "warp": 10, "restroke": 10, "drawn": 9, "pendigits": 6,
                                          "paper": 6, "forms": 6}
    np.testing.assert_array_equal(one[1][:30], np.tile(np.arange(10), 3))
    other = trainset.training_set(*args[:3], 6, *args[4:], jobs=3)  # another seed: other drawings
    assert not np.array_equal(one[0], other[0])
    np.testing.assert_array_equal(one[0][:10], other[0][:10])  # the originals take no randomness


def test_the_cache_is_reused_for_the_same_key(tmp_path: Path) -> None:
    calls: list[int] = []
    images, labels = one_images(3)

    def build():
        calls.append(1)
        return trainset.training_set(images, labels, ["original"], 0, 0, lambda s: None)

    first = trainset.cached(str(tmp_path), ["k"], build, lambda s: None)
    again = trainset.cached(str(tmp_path), ["k"], build, lambda s: None)
    trainset.cached(str(tmp_path), ["other"], build, lambda s: None)
    assert len(calls) == 2 and len(list(tmp_path.glob("train-*.npz"))) == 2
    for a, b in zip(first[:3], again[:3]):
        np.testing.assert_array_equal(a, b)
    assert first[3] == again[3] == {"original": 3}


def test_the_european_source_restrokes_ones_sevens_and_nines_only() -> None:
    images, labels = one_images(9)
    labels = np.array([1, 7, 9, 0, 2, 4, 1, 8, 9])
    x, y, _, counts = trainset.training_set(images, labels, ["european"], 0, 0, lambda s: None)
    assert counts == {"european": 5} and sorted(y.tolist()) == [1, 1, 7, 9, 9]
    assert np.all(x.reshape(-1, 28, 28).max(axis=(1, 2)) > 0.5)


def test_the_form_sources_are_binary_scans_of_every_digit_by_its_writer() -> None:
    """issue 43: "forms" puts each writer's sample on form_copies scanned forms, "forms-mnist" each
    MNIST image on one; both read back as digits with their own labels and writers."""
    images = np.zeros((6, 28, 28), np.uint8)
    images[:, 5:8, 6:22] = 255  # six 7s: a bar and a stem, which a stretch cannot fill
    for r in range(8, 24):
        images[:, r, 18 - (r - 8) // 2 : 21 - (r - 8) // 2] = 255
    labels = np.full(6, 7, np.int64)
    pen = pen_ones((5, 9))
    x, y, writer, counts = trainset.training_set(images, labels, ["forms", "forms-mnist"], 3, 0, lambda s: None,
                                                 pen, form_copies=3)
    assert counts == {"forms": 6, "forms-mnist": 6}
    assert sorted(writer[:6].tolist()) == [5, 5, 5, 9, 9, 9] and set(writer[6:]) == {0}
    assert set(y[:6]) == {1} and set(y[6:]) == {7}
    assert np.all(x.reshape(-1, 28, 28).max(axis=(1, 2)) > 0.5)
    plain, *_ = trainset.training_set(images, labels, ["pendigits"], 3, 0, lambda s: None, pen, pen_copies=3)
    assert not np.array_equal(x[:6], plain)  # not the canvas renderings again


def test_drawn_digits_on_forms_cover_every_style() -> None:
    """"forms-drawn": --drawn synthetic digits, the European styles among them, each on a form."""
    images, labels = one_images(1)
    x, y, writer, counts = trainset.training_set(images, labels, ["forms-drawn"], 0, 400, lambda s: None)
    assert counts == {"forms-drawn": 400} and set(y) == set(range(10)) and not writer.any()
    assert np.all(x.reshape(-1, 28, 28).max(axis=(1, 2)) > 0.5)
