"""What a fine-tune mixes in and measures against: a replay of the base model's training
data, and the fixed test sets of everyone else (MNIST test, unseen real writers).

Fine-tuning on a handful of one person's drawings alone would teach the network that
every digit looks like theirs; mixing in a sample of what it was trained on keeps it
reading everyone else (replay). The sample is made by the training code itself
(`gemmpad.data.trainset.training_set`), from the sources the model card lists and in their
proportions, so the replay has exactly the augmentation of training.

Both sets take minutes to build on a small machine and are the same every time for a
given model, data and code: `gemmpad train` stores them beside the model it writes
(gemmpad.learn.rehearsal), and a model without them may cache them as .npz files under a name
that hashes all of these, each array hashed and checked when read back (gemmpad.data.arraycache).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad.data import arraycache, mnist, datafind, pendigits, trainset
from gemmpad.commands import evaluate
from gemmpad.runtime.model import Model
from gemmpad.inputs.preprocess import preprocess, preprocess_batch
from gemmpad.terminal import Log

REPLAY_ROWS = 8192  # about 3 % of the shipped model's training set; ~25 MB as float32
REPLAY_SEED = 11  # never a training seed's augmentation of the same images
WRITER_STEP = 4  # the real-writer test takes every 4th sample of the unseen writers...
WRITER_STYLES = tuple(pendigits.STYLES)  # ...drawn at each named style
CACHE_VERSION = 1


@dataclass(frozen=True)
class Arrays:
    """Preprocessed images x float32 [N, 784] and labels y int64 [N]."""

    x: np.ndarray
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class References:
    """The base data of one model: `replay` to mix into a fine-tune, and the tests of
    everyone else it must keep reading (`mnist`: MNIST test; `writers`: real writers the
    model never trained on, empty without the pendigits file)."""

    replay: Arrays
    mnist: Arrays
    writers: Arrays
    writer_ids: list[int]
    origin: dict[str, Any] = field(default_factory=dict)  # where they came from (gemmpad.learn.rehearsal.sets_for)


def _sources(model: Model) -> dict[str, int]:
    """Training sources and their sizes from the card; MNIST with warps and restrokes without one."""
    training = model.card.get("training", {}) if isinstance(model.card, dict) else {}
    listed = training.get("sources") if isinstance(training, dict) else None
    if isinstance(listed, dict):
        got = {k: int(v) for k, v in listed.items() if k in trainset.SOURCES and isinstance(v, int) and v > 0}
        if got.get("original"):
            return got
    return {"original": 1, "warp": 1, "restroke": 1}


def references(model: Model, mnist: str | os.PathLike[str] | None = None, cache: str | os.PathLike[str] | None = None,
               replay_rows: int | None = None, log: Log = lambda s: None, writers: bool = True) -> References:
    """The replay (replay_rows, default REPLAY_ROWS) and test sets for `model`, from `cache` when built before;
    the unseen writers' test only with `writers` and the pendigits file."""
    from gemmpad.data.trainset import code_version

    replay_rows = replay_rows or REPLAY_ROWS
    folder = datafind.mnist_dir(mnist)
    pen_path: Path | None = None
    if writers:
        try:
            pen_path = pendigits.default_path()
        except datafind.DataMissing:  # none at all: no writers' test; a wrong $GEMMPAD_PENDIGITS still stops here
            pass
    sources = _sources(model)
    trained = model.trained_writers
    copies = _copies(model)
    stamp = [(p.name, p.stat().st_size) for p in sorted(folder.iterdir()) if p.name.startswith(("train", "t10k"))]
    key = json.dumps([CACHE_VERSION, stamp, pen_path.stat().st_size if pen_path else None, sources, trained,
                      replay_rows, WRITER_STEP, copies, code_version()])
    path = Path(cache) / f"references-{hashlib.md5(key.encode()).hexdigest()[:16]}.npz" if cache else None
    if path is not None:
        z = arraycache.load(path, ("rx", "ry", "mx", "my", "wx", "wy", "wid"), _problem, log)
        if z is not None:
            return References(Arrays(z["rx"], z["ry"]), Arrays(z["mx"], z["my"]), Arrays(z["wx"], z["wy"]),
                              z["wid"].tolist())
    refs = _build(folder, pen_path, sources, trained, copies, replay_rows, log)
    if path is not None:
        arraycache.save(path, {"rx": refs.replay.x, "ry": refs.replay.y, "mx": refs.mnist.x, "my": refs.mnist.y,
                               "wx": refs.writers.x, "wy": refs.writers.y,
                               "wid": np.array(refs.writer_ids, dtype=np.int64)})
    return refs


def _problem(z: dict[str, np.ndarray]) -> str | None:
    """Why cached references are not replay/test rows with their labels (None when they are)."""
    for x, y in (("rx", "ry"), ("mx", "my"), ("wx", "wy")):
        why = arraycache.rows_problem(z[x]) or arraycache.labels_problem(z[y], len(z[x]))
        if why:
            return f"{x}/{y}: {why}"
    return None if z["wid"].dtype.kind in "iu" and z["wid"].ndim == 1 else "writer ids are not integers"


def _copies(model: Model) -> tuple[int, int, int]:
    """How many times training drew each writer's sample at a random pen, on paper and on forms (the
    card's pendigits_copies, paper_copies and form_copies; `gemmpad train`'s defaults for a card without them)."""
    from gemmpad.data.trainset import FORM_COPIES, PAPER_COPIES, PEN_COPIES

    training = model.card.get("training", {}) if isinstance(model.card, dict) else {}
    training = training if isinstance(training, dict) else {}

    def count(key: str, default: int) -> int:
        value = training.get(key)
        return value if isinstance(value, int) and value > 0 else default

    return count("pendigits_copies", PEN_COPIES), count("paper_copies", PAPER_COPIES), count("form_copies", FORM_COPIES)


def _build(folder: Path, pen_path: Path | None, sources: dict[str, int], trained: list[int],
           copies: tuple[int, int, int], rows: int, log: Log) -> References:
    from gemmpad.data.trainset import PEN_SOURCES, training_set

    log("building the replay and test sets (once; cached)")
    train, test = mnist.load_split("train", folder), mnist.load_split("test", folder)
    pen = pendigits.read_pendigits(pen_path) if pen_path is not None else []
    rng = np.random.default_rng(REPLAY_SEED)
    total = sum(sources.values())
    share = {k: v / total for k, v in sources.items()}
    n_mnist = max(1, round(rows * share["original"]))
    pick = rng.permutation(len(train.images))[:n_mnist]
    pen_rows = rows * sum(share.get(k, 0.0) for k in PEN_SOURCES)
    per_sample = sum(n * (k in share) for k, n in zip(PEN_SOURCES, copies))
    mine = [s for s in pen if s.writer in set(trained)]
    n_pen = round(pen_rows / per_sample) if per_sample else 0
    pen_pick = [mine[i] for i in rng.permutation(len(mine))[:n_pen]]
    x, y, _, counts = training_set(train.images[pick], train.labels[pick].astype(np.int64), list(sources), REPLAY_SEED,
                                   round(rows * share.get("drawn", 0.0)), log, pen_pick, *copies)
    log(f"replay: {len(y)} images ({', '.join(f'{k} {v}' for k, v in counts.items())})")
    mx = preprocess_batch(test.images)[0].reshape(-1, 784)
    unseen = [s for s in pen if s.writer not in set(trained)] if trained else [
        s for s in pen if s.writer in set(evaluate.writer_range("1-6"))]
    picked = unseen[::WRITER_STEP]
    wx, wy = [], []
    for style in WRITER_STYLES:
        for s in picked:
            img = preprocess(pendigits.render(s, style))
            if img is not None:
                wx.append(img.reshape(784))
                wy.append(s.digit)
    log(f"real writers: {len(wy)} images of writers {pendigits.writers(picked)} at {len(WRITER_STYLES)} styles")
    return References(Arrays(x.astype(np.float32), y), Arrays(mx, test.labels.astype(np.int64)),
                      Arrays(np.array(wx, dtype=np.float32).reshape(-1, 784), np.array(wy, dtype=np.int64)),
                      pendigits.writers(picked))
