"""The small sets that travel with a model so Learn works offline: `<model>.rehearsal.npz`.

A fine-tune needs a replay of the base model's training data and the test sets its
forgetting guard measures on (gemmpad.learn.rehearsal_sets.References). Built from MNIST and pendigits
they took 165-286 s on a 2-core machine and the data folders a fresh install does not
have; so `gemmpad train` builds them once, beside every model it writes (`write`), and the
card records their SHA-256 (card["rehearsal"]). The pixels are stored as uint8 (x * 255,
rounded: the guard compares before and after on the same quantised images, so the
rounding cannot favour either), compressed: 5.4 MB for the shipped model.

`sets_for(model)` finds a model's sets: its own (verified against its card: a mismatch is
a one-line error, never garbage compared); for a personal model (card["fine_tuned"]),
the sets it was tuned with, beside the base it names or the shipped model, found by hash;
for a model without sets, ones built from the MNIST/pendigits folders when they are
there (gemmpad.learn.rehearsal_sets.references); else the shipped model's, said so.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad.data import arraycache, datafind
from gemmpad.learn import rehearsal_sets
from gemmpad.errors import DataError, GemmpadError
from gemmpad.inputs.files import write_bytes
from gemmpad.runtime.model import Model, default_model_path, load_model
from gemmpad.learn.rehearsal_sets import Arrays, References
from gemmpad.terminal import Log

SUFFIX = ".rehearsal.npz"
MAX_BYTES = 16 << 20  # the shipped file is 5.4 MB: anything far larger is not one of ours
MAX_INFLATED = 64 << 20  # its arrays are 17 MB inflated: a file declaring more is refused before inflating
NAMES = ("replay_x", "replay_y", "mnist_x", "mnist_y", "writers_x", "writers_y", "writer_ids")
FIX = "reinstall gemmpad (pip install --force-reinstall gemmpad), or Learn from the shipped model"


def path_for(model_path: str | Path) -> Path:
    """models/mnist-mlp.npz -> models/mnist-mlp.rehearsal.npz."""
    p = Path(model_path)
    return p.with_name(p.stem + SUFFIX)


def _quantise(x: np.ndarray) -> np.ndarray:
    return np.rint(np.clip(x, 0.0, 1.0) * 255.0).astype(np.uint8)


def encode(refs: References) -> bytes:
    """The .npz bytes of `refs`: uint8 pixels, uint8 labels, compressed."""
    buf = io.BytesIO()
    np.savez_compressed(buf, replay_x=_quantise(refs.replay.x), replay_y=refs.replay.y.astype(np.uint8),
                        mnist_x=_quantise(refs.mnist.x), mnist_y=refs.mnist.y.astype(np.uint8),
                        writers_x=_quantise(refs.writers.x).reshape(-1, 784),
                        writers_y=refs.writers.y.astype(np.uint8), writer_ids=np.array(refs.writer_ids, np.int64))
    return buf.getvalue()


def write(model_path: str | Path, refs: References) -> dict[str, Any]:
    """Write `refs` beside the model at `model_path`, atomically; the card's "rehearsal" entry."""
    blob = encode(refs)
    target = path_for(model_path)
    write_bytes(target, blob)
    return {"file": target.name, "sha256": hashlib.sha256(blob).hexdigest(), "bytes": len(blob),
            "replay": len(refs.replay), "mnist_test": len(refs.mnist), "writers": len(refs.writers),
            "writer_ids": list(refs.writer_ids), "pixels": "uint8, x * 255 rounded",
            "built": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "how": f"gemmpad.learn.rehearsal_sets: {len(refs.replay)} rows of the training sources in the card's proportions "
                   f"(seed {rehearsal_sets.REPLAY_SEED}), the 10,000 MNIST test images and every {rehearsal_sets.WRITER_STEP}th "
                   "sample of the unseen pendigits writers at each style, all through gemmpad.inputs.preprocess"}


def read(path: Path, entry: dict[str, Any], name: str, fix: str = FIX) -> References:
    """The sets in `path`, verified against the card's `entry` (hash, counts) and checked (shapes,
    labels 0-9); DataError in one line naming what is wrong and `fix` otherwise."""
    def bad(why: str) -> DataError:
        return DataError(f"the Learn sets of {name} ({path.name}) {why}: {fix}")

    try:
        if path.stat().st_size > MAX_BYTES:
            raise bad(f"are {path.stat().st_size} bytes, far more than they should be")
        blob = path.read_bytes()
    except FileNotFoundError:
        raise bad("are missing") from None
    except OSError as exc:
        raise bad(f"cannot be read ({exc.strerror or exc})") from None
    if hashlib.sha256(blob).hexdigest() != entry.get("sha256"):
        raise bad("do not match the SHA-256 in its card (damaged or replaced)")
    try:
        inflated = sum(i.file_size for i in zipfile.ZipFile(io.BytesIO(blob)).infolist())
        if inflated > MAX_INFLATED:
            raise bad(f"declare {inflated} bytes of arrays, far more than they should")
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            if sorted(z.files) != sorted(NAMES):
                raise bad(f"hold {sorted(z.files)}")
            a = {n: z[n] for n in NAMES}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise bad(f"cannot be read ({exc})") from None
    parts = {}
    for key, count in (("replay", "replay"), ("mnist", "mnist_test"), ("writers", "writers")):
        x, y = a[f"{key}_x"], a[f"{key}_y"]
        n = entry.get(count)
        if x.dtype != np.uint8 or x.ndim != 2 or x.shape[1] != 784 or y.dtype != np.uint8 or y.shape != (len(x),):
            raise bad(f"hold {key} arrays of {x.dtype} {x.shape} / {y.dtype} {y.shape}")
        if len(x) != n or arraycache.label_outside_digits(y) is not None:
            raise bad(f"hold {len(x)} {key} rows with labels up to {int(y.max()) if len(y) else '-'}, "
                      f"the card says {n}")
        parts[key] = Arrays(x.astype(np.float32) / np.float32(255.0), y.astype(np.int64))
    if len(parts["replay"]) == 0 or len(parts["mnist"]) == 0:
        raise bad("hold no replay or no MNIST test rows")
    ids = a["writer_ids"]
    if ids.dtype != np.int64 or ids.ndim != 1:
        raise bad(f"hold writer ids of {ids.dtype} {ids.shape}")
    return References(parts["replay"], parts["mnist"], parts["writers"], ids.tolist())


def _entry(model: Model) -> dict[str, Any] | None:
    entry = model.card.get("rehearsal") if isinstance(model.card, dict) else None
    return entry if isinstance(entry, dict) and isinstance(entry.get("file"), str) else None


def _own(model: Model) -> References | None:
    """The sets beside `model` that its card names (None when its card names none)."""
    entry = _entry(model)
    if entry is None or model.path is None:
        return None
    file = Path(model.path).with_name(Path(entry["file"]).name)  # beside the model, never elsewhere
    shipped = Path(model.path).resolve() == default_model_path().resolve()
    name = Path(model.path).stem
    return read(file, entry, name, FIX if shipped else
                f"train {name} again (gemmpad train writes them beside it), or Learn from the shipped model")


def used(model: Model) -> dict[str, Any] | None:
    """What a personal model's card records of the sets it was tuned with (hash, base model)."""
    tuned = model.card.get("fine_tuned") if isinstance(model.card, dict) else None
    sets = tuned.get("rehearsal") if isinstance(tuned, dict) else None
    return sets if isinstance(sets, dict) and isinstance(sets.get("sha256"), str) else None


def sets_for(model: Model, mnist: str | Path | None = None, cache: str | Path | None = None,
             replay_rows: int | None = None, log: Log = lambda s: None) -> References:
    """The replay and test sets a fine-tune of `model` uses (see the module docstring), with
    `origin` saying where they came from for the personal model's card: {"model", "sha256"}
    or {"built"}; `replay_rows` (tests) keeps a fixed random subset of the replay."""
    refs, origin = _find(model, mnist, cache, log)
    if replay_rows is not None and replay_rows < len(refs.replay):
        keep = np.sort(np.random.default_rng(rehearsal_sets.REPLAY_SEED).permutation(len(refs.replay))[:replay_rows])
        refs = replace(refs, replay=Arrays(refs.replay.x[keep], refs.replay.y[keep]))
    return replace(refs, origin=origin)


def _find(model: Model, mnist: str | Path | None, cache: str | Path | None,
          log: Log) -> tuple[References, dict[str, Any]]:
    name = Path(model.path).stem if model.path else "this model"
    own = _own(model)
    if own is not None:
        entry = _entry(model) or {}
        return own, {"model": name, "sha256": entry.get("sha256")}
    wanted = used(model)
    if wanted is not None:
        tuned = model.card.get("fine_tuned", {})
        bases = [Path(tuned["base"])] if isinstance(tuned.get("base"), str) else []
        for base_path in [*bases, default_model_path()]:
            found = _sets_of(base_path)
            if found is not None and found[1].get("sha256") == wanted["sha256"]:
                return found[0], {"model": base_path.stem, "sha256": wanted["sha256"]}
        log(f"the Learn sets {name} was tuned with are gone or changed; using the shipped model's")
    elif mnist is not None or _data_found():
        log(f"{name} has no Learn sets of its own: building them from the MNIST and pendigits files")
        refs = rehearsal_sets.references(model, mnist, cache, None, log)
        return refs, {"built": "from the MNIST and pendigits files"}
    else:
        log(f"{name} has no Learn sets of its own; using the shipped model's")
    shipped = _sets_of(default_model_path(), strict=True)
    assert shipped is not None
    return shipped[0], {"model": default_model_path().stem, "sha256": shipped[1].get("sha256")}


def _sets_of(model_path: Path, strict: bool = False) -> tuple[References, dict[str, Any]] | None:
    """The verified sets of the model at `model_path` and its card's entry; None when it has none
    (an error with `strict`: the shipped model always has them)."""
    try:
        base = load_model(model_path)
    except GemmpadError:
        if strict:
            raise DataError(f"the shipped model cannot be read: {FIX}") from None
        return None
    entry, refs = _entry(base), _own(base)
    if refs is None or entry is None:
        if strict:
            raise DataError(f"the shipped model has no Learn sets: {FIX}")
        return None
    return refs, entry


def _data_found() -> bool:
    try:
        datafind.mnist_dir()
    except DataError:
        return False
    return True
