"""MNIST loader: tiny synthetic IDX files (good and corrupt) and the real files when present."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from gemmpad.data import mnist
from gemmpad.errors import DataError
from tests.mnist_data import mnist_dir


def idx_images(images: np.ndarray) -> bytes:
    n, h, w = images.shape
    return struct.pack(">IIII", mnist.IMAGES_MAGIC, n, h, w) + images.astype(np.uint8).tobytes()


def idx_labels(labels: np.ndarray) -> bytes:
    return struct.pack(">II", mnist.LABELS_MAGIC, len(labels)) + labels.astype(np.uint8).tobytes()


def write_split(d: Path, images: bytes, labels: bytes, gz: bool, split: str = "train") -> None:
    img_name, lbl_name = mnist.FILES[split]
    for name, payload in ((img_name, images), (lbl_name, labels)):
        if gz:
            (d / (name + ".gz")).write_bytes(gzip.compress(payload))
        else:
            (d / name).write_bytes(payload)


@pytest.mark.parametrize("gz", [False, True])
def test_round_trip_tiny_files(tmp_path: Path, rng: np.random.Generator, gz: bool) -> None:
    images = rng.integers(0, 256, (7, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 7, dtype=np.uint8)
    write_split(tmp_path, idx_images(images), idx_labels(labels), gz)
    split = mnist.load_split("train", tmp_path)
    np.testing.assert_array_equal(split.images, images)
    np.testing.assert_array_equal(split.labels, labels)
    assert not mnist.checksums_ok(split.md5)  # not the canonical files, and the loader knows


def test_environment_variable_names_the_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   rng: np.random.Generator) -> None:
    images = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    write_split(tmp_path, idx_images(images), idx_labels(np.array([1, 2, 3])), gz=True, split="test")
    monkeypatch.setenv("GEMMPAD_DATA", str(tmp_path))
    assert mnist.load_split("test").images.shape == (3, 28, 28)


def _corrupt_cases(images: np.ndarray, labels: np.ndarray) -> dict[str, tuple[bytes, bytes, str]]:
    good_i, good_l = idx_images(images), idx_labels(labels)
    bad_magic = struct.pack(">I", 0x00000802) + good_i[4:]
    wrong_count = struct.pack(">IIII", mnist.IMAGES_MAGIC, len(images) + 1, 28, 28) + good_i[16:]
    return {
        "bad magic": (bad_magic, good_l, "bad magic"),
        "labels as images": (good_l, good_l, "bad magic"),
        "truncated": (good_i[:-5], good_l, "truncated"),
        "trailing bytes": (good_i + b"\0", good_l, "trailing"),
        "wrong count in header": (wrong_count, good_l, "truncated"),
        "count mismatch": (good_i, idx_labels(labels[:-1]), "labels"),
        "header only": (good_i[:10], good_l, "too short"),
        "label out of range": (good_i, idx_labels(np.array([3, 11, 4])), "out of range"),
        "not 28x28": (idx_images(np.zeros((3, 28, 27))), good_l, "28x27, expected 28x28"),
        "no images": (idx_images(np.zeros((0, 28, 28))), idx_labels(np.zeros(0)), "holds no images"),
    }


@pytest.mark.parametrize("case", list(_corrupt_cases(np.zeros((3, 28, 28)), np.zeros(3))))
@pytest.mark.parametrize("gz", [False, True])
def test_corrupt_files_raise_a_clear_error(tmp_path: Path, rng: np.random.Generator, case: str, gz: bool) -> None:
    images = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 3, dtype=np.uint8)
    img, lbl, message = _corrupt_cases(images, labels)[case]
    write_split(tmp_path, img, lbl, gz)
    with pytest.raises(DataError, match=message) as info:
        mnist.load_split("train", tmp_path)
    assert str(tmp_path) in str(info.value)  # the error names the file


def test_truncated_gzip(tmp_path: Path, rng: np.random.Generator) -> None:
    images = rng.integers(0, 256, (5, 28, 28), dtype=np.uint8)
    img_name, lbl_name = mnist.FILES["train"]
    (tmp_path / (img_name + ".gz")).write_bytes(gzip.compress(idx_images(images))[:-20])
    (tmp_path / (lbl_name + ".gz")).write_bytes(gzip.compress(idx_labels(np.arange(5))))
    with pytest.raises(DataError, match="gzip"):
        mnist.load_split("train", tmp_path)


def test_missing_files_and_directories(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="neither .* found"):
        mnist.load_split("train", tmp_path)
    with pytest.raises(DataError, match="not a directory"):
        mnist.load_split("train", tmp_path / "nope")
    with pytest.raises(DataError, match="unknown split"):
        mnist.load_split("validation", tmp_path)


def test_files_that_are_there_but_unreadable_say_why(tmp_path: Path) -> None:
    """Issue 20, findings 5 and 11: a FIFO under an IDX name would block the read, and a
    symlink loop was "neither ... found"; each is named for what it is."""
    from tests.hostile_files import fifo

    (tmp_path / "train-labels-idx1-ubyte").write_bytes(idx_labels(np.zeros(1)))
    (tmp_path / "train-images-idx3-ubyte").symlink_to("train-images-idx3-ubyte")
    with pytest.raises(DataError, match="train-images-idx3-ubyte: cannot read .*symbolic links"):
        mnist.load_split("train", tmp_path)
    (tmp_path / "train-images-idx3-ubyte").unlink()
    done = fifo(tmp_path / "train-images-idx3-ubyte.gz")
    try:
        with pytest.raises(DataError, match="train-images-idx3-ubyte.gz: is a FIFO, not a regular file"):
            mnist.load_split("train", tmp_path)
    finally:
        done.set()


def test_environment_variable_that_is_not_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("GEMMPAD_DATA", str(tmp_path / "file"))
    with pytest.raises(DataError, match=r"\$GEMMPAD_DATA=.*file: not a directory"):
        mnist.load_split("test")


def test_real_mnist_files() -> None:
    d = mnist_dir()
    train, test = mnist.load_split("train", d), mnist.load_split("test", d)
    assert train.images.shape == (60000, 28, 28) and test.images.shape == (10000, 28, 28)
    assert train.images.dtype == np.uint8 and train.labels.max() == 9
    assert np.bincount(test.labels, minlength=10).min() > 800  # every digit present
    assert mnist.checksums_ok({**train.md5, **test.md5}), {**train.md5, **test.md5}


def test_no_data_names_the_fetch_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --data, $GEMMPAD_DATA or fetched files the loader says the command that gets
    them; it no longer tries a torchvision download (which failed with an empty reason)."""
    from gemmpad.data import datafind

    monkeypatch.delenv("GEMMPAD_DATA", raising=False)
    monkeypatch.setenv("GEMMPAD_HOME", str(tmp_path))
    monkeypatch.setattr(datafind, "_checkout_data", lambda: None)
    with pytest.raises(DataError) as info:
        mnist.load_split("test")
    assert str(info.value) == ("no MNIST data: run `gemmpad data fetch mnist` (or set $GEMMPAD_DATA to a folder "
                               "of the IDX files)")


# ---- issue 20: hostile IDX files


def test_dimensions_that_multiply_past_2_64_are_refused(tmp_path: Path) -> None:
    """Finding 8: 2^16 * 2^24 * 2^24 wrapped to 0 in int64, passed the length check and failed
    inside reshape (exit 3)."""
    header = struct.pack(">IIII", mnist.IMAGES_MAGIC, 2**16, 2**24, 2**24)
    write_split(tmp_path, header, idx_labels(np.zeros(1)), gz=False)
    with pytest.raises(DataError, match=r"train-images-idx3-ubyte: header \(65536, 16777216, 16777216\) declares "
                                        r"18,446,744,073,709,551,616 bytes of data, more than") as info:
        mnist.load_split("train", tmp_path)
    assert "corrupt" not in str(info.value)  # the header's own message, not wrapped in another


def test_a_gzip_bomb_is_read_only_to_the_declared_size(tmp_path: Path, rng: np.random.Generator) -> None:
    """Finding 3: a 9.4 MB .gz inflating to 9 GiB was inflated whole. Here 64 MiB of zeros
    follow a header declaring 10 images: reading stops just past the declared size."""
    from tests.hostile_files import allocation_peak

    images = rng.integers(0, 256, (10, 28, 28), dtype=np.uint8)
    z = gzip.compress(idx_images(images) + bytes(64 << 20), compresslevel=1)
    write_split(tmp_path, b"", idx_labels(np.zeros(10)), gz=False)
    (tmp_path / "train-images-idx3-ubyte").unlink()
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(z)
    with allocation_peak() as peak, pytest.raises(DataError, match="has trailing bytes: the header"):
        mnist.load_split("train", tmp_path)
    assert peak[0] < 8 << 20, f"{peak[0] / 2**20:.1f} MiB allocated while reading 10 images"
