"""Arrays kept in a cache file, never trusted: each file carries the SHA-256 of its arrays, and
every array is checked (shape, dtype, label range, finite pixels in [0, 1]) before use.

A cache is only a shortcut: a truncated file (a crash, a full disk in another program), one
edited by hand (labels overwritten, a 77 among them), or rows gone NaN must never reach a
fine-tune or its forgetting guard, which would then compare garbage and say nothing. So
`load` answers None for anything that is not exactly what `save` wrote and passes the
caller's checks, and the caller builds the arrays again.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from gemmpad.inputs.files import atomic_path

DIGEST = "sha256"  # the member holding the hash of every other member
Check = Callable[[dict[str, np.ndarray]], str | None]  # a reason to refuse the arrays, or None


def digest(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write `arrays` and their digest to `path` atomically (uncompressed: a cache is read often)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays, **{DIGEST: np.array(digest(arrays))})


def load(path: str | Path, names: tuple[str, ...], check: Check | None = None,
         log: Callable[[str], None] = lambda s: None) -> dict[str, np.ndarray] | None:
    """The arrays `names` from `path` when the file holds exactly them, its digest matches and
    `check` finds nothing wrong; else None (and a line to `log` saying why, for a file that exists)."""
    target = Path(path)
    if not target.is_file():
        return None
    try:
        with np.load(target, allow_pickle=False) as z:
            if sorted(z.files) != sorted((*names, DIGEST)):
                raise ValueError(f"holds {sorted(z.files)}, expected {sorted(names)}")
            arrays = {n: z[n] for n in names}
            stored = str(z[DIGEST])
        if digest(arrays) != stored:
            raise ValueError("its arrays do not match their SHA-256")
        reason = check(arrays) if check is not None else None
        if reason:
            raise ValueError(reason)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        log(f"not using the cached {target.name} ({exc}); building it again")
        return None
    return arrays


def rows_problem(x: np.ndarray, width: int = 784) -> str | None:
    """Why `x` is not float32 image rows [N, width] of finite pixels in [0, 1] (None when it is)."""
    if x.dtype != np.float32 or x.ndim != 2 or x.shape[1] != width:
        return f"rows of {x.dtype} {x.shape}, expected float32 [N, {width}]"
    if x.size and not (np.isfinite(x).all() and x.min() >= 0.0 and x.max() <= 1.0):
        return "pixels outside [0, 1] or not finite"
    return None


def label_outside_digits(y: np.ndarray) -> int | None:
    """A label of integer `y` outside 0-9, the largest else the smallest (None when every one
    is a digit): the one range rule for every labels file read (cached sets, Learn's sets),
    each caller wording its own message."""
    if y.size == 0:
        return None
    hi, lo = int(y.max()), int(y.min())
    return hi if hi > 9 else lo if lo < 0 else None


def labels_problem(y: np.ndarray, n: int) -> str | None:
    """Why `y` is not n integer digit labels 0-9 (None when it is)."""
    if y.dtype.kind not in "iu" or y.shape != (n,):
        return f"labels of {y.dtype} {y.shape}, expected {n} integers"
    outside = label_outside_digits(y)
    if outside is not None:
        return f"labels outside 0-9 (e.g. {outside})"
    return None
