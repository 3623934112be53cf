"""MNIST from IDX files: finding them, checking them, and reading them into NumPy.

The IDX format (LeCun's) is a big-endian header followed by raw uint8 data:
    images: magic 0x00000803, count, rows, cols, then count*rows*cols bytes
    labels: magic 0x00000801, count, then count bytes
Files may be gzip-compressed (the usual *.gz download) or raw. Every check
below exists because a half-downloaded or renamed file otherwise turns into a
silently wrong model: the error names the file and what is wrong with it.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from gemmpad.data import datafind
from gemmpad.errors import DataError
from gemmpad.inputs.reads import open_input

IMAGES_MAGIC = 0x00000803
LABELS_MAGIC = 0x00000801

# split -> (images file, labels file), names without the .gz
FILES: dict[str, tuple[str, str]] = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}

# MD5 of the uncompressed canonical files: recorded in the model card so a
# model can be traced to the exact data it was trained and measured on.
CANONICAL_MD5: dict[str, str] = datafind.MNIST_CONTENT_MD5


@dataclass(frozen=True)
class Split:
    """One MNIST split: images uint8 [N, 28, 28] (ink bright), labels uint8 [N], and file MD5s."""

    images: np.ndarray
    labels: np.ndarray
    md5: dict[str, str]


MAX_IDX_BYTES = 1 << 30  # MNIST's largest file is 47 MB; a header may declare at most this much data


def read_idx(path: str | os.PathLike[str], kind: str) -> tuple[np.ndarray, str]:
    """Read one IDX file (gzip or raw, told apart by the magic, not the name); returns
    the array and the MD5 of the uncompressed bytes.

    The data is streamed: the header is read first, and then exactly the bytes it
    declares, into the array that is returned, plus one to notice trailing data. A
    small .gz that inflates to gigabytes is therefore never inflated past the declared
    size, and the data is held once (MNIST's training images: 81 MB peak RSS in all).
    """
    p = Path(path)
    with open_input(p, MAX_IDX_BYTES, DataError, "IDX file") as raw:
        try:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            stream: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
            header = _idx_header(stream.read(16 if kind == "images" else 8), str(p), kind)
            dims = struct.unpack(f">{(len(header) - 4) // 4}I", header[4:])
            size = math.prod(dims)  # a Python int: four large dimensions cannot wrap around to a small size
            if size > MAX_IDX_BYTES:
                raise DataError(f"{p}: header {dims} declares {size:,} bytes of data, more than an IDX file "
                                f"may hold here ({MAX_IDX_BYTES:,})")
            body = np.empty(size, dtype=np.uint8)  # filled in place: no second copy of the data
            got = _read_into(stream, memoryview(body))
            more = got == size and bool(stream.read(1))
        except DataError:  # a ValueError too, but already the file's own message
            raise
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            raise DataError(f"{p}: corrupt or truncated {'gzip' if gz else 'IDX'} data ({exc})") from None
    if got < size:
        raise DataError(f"{p}: truncated: the header {dims} declares {size:,} bytes of data, found {got:,}")
    if more:
        raise DataError(f"{p}: has trailing bytes: the header {dims} declares {size:,} bytes of data, and more follow")
    md5 = hashlib.md5(header)
    md5.update(body)
    return body.reshape(dims), md5.hexdigest()


def _read_into(stream: BinaryIO, buf: memoryview) -> int:
    """Fill `buf` from `stream` a chunk at a time until it is full or the stream ends; returns
    how many bytes came."""
    got = 0
    while got < len(buf) and (n := stream.readinto(buf[got : got + (1 << 20)])):
        got += n
    return got


def _idx_header(header: bytes, source: str, kind: str) -> bytes:
    """The header bytes, once the magic number and length are right for `kind`."""
    magic = IMAGES_MAGIC if kind == "images" else LABELS_MAGIC
    size = 16 if kind == "images" else 8
    if len(header) >= 4:  # the magic first: a wrong kind of file is the likelier mistake
        got = struct.unpack(">I", header[:4])[0]
        if got != magic:
            raise DataError(f"{source}: bad magic number 0x{got:08x}, expected 0x{magic:08x} (IDX {kind} file)")
    if len(header) < size:
        raise DataError(f"{source}: only {len(header)} bytes, too short for an IDX {kind} header ({size} bytes)")
    return header


def _find(directory: Path, stem: str) -> Path:
    """The file named `stem` or `stem`.gz: the first name present, even when it is a FIFO,
    a symlink loop or unreadable, so that read_idx says so rather than "not found"."""
    for name in (stem, stem + ".gz"):
        if os.path.lexists(directory / name):
            return directory / name
    raise DataError(f"{directory}: neither {stem} nor {stem}.gz found")


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where the MNIST files are: the argument, else where datafind finds them (never a download)."""
    return datafind.mnist_dir(explicit)


def load_split(split: str, directory: str | os.PathLike[str] | None = None) -> Split:
    """Load and check one split ("train" or "test").

    Counts are checked against each other, not against 60000/10000, so a small
    subset in the same format loads too; checksums_ok() tells canonical files apart.
    """
    if split not in FILES:
        raise DataError(f"unknown split {split!r}, expected one of {list(FILES)}")
    d = data_dir(directory)
    img_stem, lbl_stem = FILES[split]
    img_path, lbl_path = _find(d, img_stem), _find(d, lbl_stem)
    images, img_md5 = read_idx(img_path, "images")
    labels, lbl_md5 = read_idx(lbl_path, "labels")
    if images.shape[1:] != (28, 28):
        raise DataError(f"{img_path}: images are {images.shape[1]}x{images.shape[2]}, expected 28x28")
    if len(images) != len(labels):
        raise DataError(f"{img_path} has {len(images)} images but {lbl_path} has {len(labels)} labels")
    if len(images) == 0:
        raise DataError(f"{img_path}: the file holds no images")
    if labels.max(initial=0) > 9:
        raise DataError(f"{lbl_path}: label {int(labels.max())} out of range 0..9")
    return Split(images=images, labels=labels, md5={img_stem: img_md5, lbl_stem: lbl_md5})


def checksums_ok(md5: dict[str, str]) -> bool:
    """Whether every file matches the canonical MNIST MD5 (a model card records the answer)."""
    return all(CANONICAL_MD5.get(name) == digest for name, digest in md5.items())
