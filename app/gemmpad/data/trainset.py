"""The training arrays of `gemmpad train`, built on every core and cached.

Building them is most of a training run's time (about 30 minutes on one core: every
image goes through the app's own `preprocess`, one at a time, and the real writers'
digits are painted on a canvas first). The work is cut into fixed-size chunks, each
with its own random stream seeded from (--seed, source, copy, chunk), and the chunks
run in a pool of --jobs processes: the arrays depend on the seed only, never on the
number of jobs, so a cached set serves any --jobs and a test can compare 1 with 3.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad.data import arraycache, augment, forms, synthetic, paper, pendigits
from gemmpad.data.pool import ordered_map
from gemmpad.inputs.preprocess import preprocess, preprocess_batch

SOURCES = ("original", "warp", "restroke", "drawn", "pendigits", "paper", "european", "forms", "forms-mnist", "forms-drawn")  # what training_set can build
PEN_COPIES = 8  # default random-style renderings of each pendigits training sample ("pendigits")
PAPER_COPIES = 2  # default photos of each on paper ("paper": gemmpad.data.paper, never the test set's seed)
FORM_COPIES = 2  # default scanned-form copies of each ("forms": gemmpad.data.forms.training_variant)
PEN_SOURCES = ("pendigits", "paper", "forms")  # the sources made from the real writers' trajectories
MNIST_SOURCES = ("original", "warp", "restroke", "european", "forms-mnist")  # ... from the MNIST images
DRAWN_SOURCES = ("drawn", "forms-drawn")  # ... from --drawn synthetic digits
CHUNK = 2500  # MNIST images per task: bounds memory (~30 MB per 56x56 chunk) and balances the pool
PEN_CHUNK = 500  # pendigits samples per task (one copy each)
_STREAM = {"warp": 1, "restroke": 2, "drawn": 6, "pendigits": 4, "paper": 5, "european": 7, "forms": 8, "forms-mnist": 9, "forms-drawn": 10}  # per-source seed component


@dataclass(frozen=True)
class _Task:
    """One chunk of one source: what a worker needs to build it, nothing shared."""

    source: str
    seed: tuple[int, ...]  # its own random stream
    images: np.ndarray | None = None  # MNIST uint8 [n, 28, 28] ("original", "warp", "restroke", "european", "forms-mnist")
    labels: np.ndarray | None = None  # and their digits
    count: int = 0  # drawn digits to make ("drawn", "forms-drawn")
    pen: tuple[pendigits.PenDigit, ...] = ()  # samples to render once each ("pendigits", "paper", "forms")


@dataclass(frozen=True)
class _Part:
    x: np.ndarray  # float32 [n, 28, 28]
    y: np.ndarray  # int64 [n]
    writer: np.ndarray  # int64 [n], 0 where not a pendigits writer


def _one_by_one(images: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Images of any size through preprocess one at a time (preprocess_batch takes one size):
    x float32 [n, 28, 28] and which of them had ink."""
    out = np.zeros((len(images), 28, 28), dtype=np.float32)
    ok = np.zeros(len(images), dtype=bool)
    for i, img in enumerate(images):
        r = preprocess(img)
        if r is not None:
            out[i], ok[i] = r, True
    return out, ok


def _build(task: _Task) -> _Part:
    """One chunk through its transform and preprocess; rows without ink are dropped, not trained as blank."""
    rng = np.random.default_rng(task.seed)
    if task.source == "drawn":
        seed = int(np.random.SeedSequence(task.seed).generate_state(1)[0])
        ds = synthetic.generate(task.count, seed=seed + (seed == synthetic.EVAL_SEED))  # never the test set's seed
        return _Part(ds.images, ds.labels.astype(np.int64), np.zeros(len(ds.labels), np.int64))
    if task.source == "forms-drawn":
        images, y = forms.drawn_training_copies(task.count, rng)
        out, ok = _one_by_one(images)
        return _Part(out[ok], y[ok], np.zeros(int(ok.sum()), np.int64))
    if task.source in PEN_SOURCES:
        draw: Callable[[pendigits.PenDigit], np.ndarray] = {
            "pendigits": lambda s: pendigits.render(pendigits.reshaped(s, rng), pendigits.random_style(rng)),
            "paper": lambda s: paper.on_paper(s, rng),
            "forms": lambda s: forms.on_form(s, forms.training_variant(rng), rng)}[task.source]
        out, ok = _one_by_one([draw(s) for s in task.pen])
        y = np.array([s.digit for s in task.pen], dtype=np.int64)
        w = np.array([s.writer for s in task.pen], dtype=np.int64)
        return _Part(out[ok], y[ok], w[ok])
    assert task.images is not None and task.labels is not None
    if task.source == "forms-mnist":  # each image through a form of its own: sizes differ, so one by one
        out, ok = _one_by_one([forms.image_on_form(img, forms.training_variant(rng), rng) for img in task.images])
        return _Part(out[ok], task.labels[ok].astype(np.int64), np.zeros(int(ok.sum()), np.int64))
    unit = task.images.astype(np.float32) / 255.0
    if task.source == "warp":
        unit = augment.warp(unit, 28, rng)
    elif task.source == "restroke":
        unit = augment.restroke(unit, rng)
    elif task.source == "european":  # MNIST's 1s, 7s and 9s re-stroked with European strokes added
        unit = augment.restroke(unit, rng, labels=task.labels, european_share=1.0)
    x, ok = preprocess_batch(unit)
    return _Part(x[ok], task.labels[ok].astype(np.int64), np.zeros(int(ok.sum()), np.int64))


def _tasks(images: np.ndarray, labels: np.ndarray, sources: Sequence[str], seed: int, n_drawn: int,
           pen: Sequence[pendigits.PenDigit], copies: dict[str, int]) -> Iterator[_Task]:
    """The chunks of every source, in output order; chunk boundaries depend on the data only."""
    for src in sources:
        if src in MNIST_SOURCES:
            own = np.isin(labels, augment.EUROPEAN_DIGITS)
            imgs, labs = (images[own], labels[own]) if src == "european" else (images, labels)
            for k, i in enumerate(range(0, len(imgs), CHUNK)):
                yield _Task(src, (seed, _STREAM.get(src, 0), k), images=imgs[i : i + CHUNK], labels=labs[i : i + CHUNK])
        elif src in DRAWN_SOURCES:  # as many on forms as on the canvas
            for k, i in enumerate(range(0, n_drawn, CHUNK)):
                yield _Task(src, (seed, _STREAM[src], k), count=min(CHUNK, n_drawn - i))
        elif src in PEN_SOURCES:
            for c in range(copies[src]):
                for k, i in enumerate(range(0, len(pen), PEN_CHUNK)):
                    yield _Task(src, (seed, _STREAM[src], c, k), pen=tuple(pen[i : i + PEN_CHUNK]))


def training_set(images: np.ndarray, labels: np.ndarray, sources: list[str], seed: int, n_drawn: int,
                 log: Callable[[str], None], pen: Sequence[pendigits.PenDigit] | None = None,
                 pen_copies: int = PEN_COPIES, paper_copies: int = PAPER_COPIES, form_copies: int = FORM_COPIES,
                 jobs: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Training arrays x float32 [N, 784], y int64 [N], writer int64 [N] (the pendigits writer
    of each row, 0 for the others) from MNIST uint8 images and the chosen sources, source by source.

    Every pendigits sample in `pen` is rendered pen_copies (on paper paper_copies, on forms
    form_copies) times;
    callers drop the rows of writers they hold out, so one cached set serves every writer split.
    The same seed gives the same arrays for any `jobs`.
    """
    pen = list(pen or [])
    order = [s for s in sources
             if not (s in DRAWN_SOURCES and n_drawn <= 0) and not (s in PEN_SOURCES and not pen)]
    copies = {"pendigits": pen_copies, "paper": paper_copies, "forms": form_copies}
    tasks = list(_tasks(images, labels, order, seed, n_drawn, pen, copies))
    left = {src: sum(t.source == src for t in tasks) for src in order}
    xs: dict[str, list[np.ndarray]] = {s: [] for s in order}
    ys: dict[str, list[np.ndarray]] = {s: [] for s in order}
    ws: dict[str, list[np.ndarray]] = {s: [] for s in order}
    t0 = time.perf_counter()
    for task, part in zip(tasks, ordered_map(_build, tasks, jobs)):
        xs[task.source].append(part.x.reshape(len(part.x), 784))  # (784, not -1: a part may hold no image)
        ys[task.source].append(part.y)
        ws[task.source].append(part.writer)
        left[task.source] -= 1
        if not left[task.source]:
            log(f"  {task.source:11s} {sum(map(len, ys[task.source])):6d} images  "
                f"{time.perf_counter() - t0:6.1f} s since the start ({jobs} job{'s' * (jobs != 1)})")
    counts = {s: int(sum(map(len, ys[s]))) for s in order}
    if not tasks:
        return np.zeros((0, 784), np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64), counts
    return (np.concatenate([a for s in order for a in xs[s]]), np.concatenate([a for s in order for a in ys[s]]),
            np.concatenate([a for s in order for a in ws[s]]), counts)


def code_version() -> str:
    """A hash of the modules that make training images: a change invalidates the cache."""
    here = Path(__file__).resolve().parents[1]
    h = hashlib.md5()
    for name in ("data/trainset.py", "data/augment.py", "data/synthetic.py", "inputs/preprocess.py", "inputs/strokes.py", "data/pendigits.py", "data/paper.py", "data/forms.py"):
        h.update((here / name).read_bytes())
    return h.hexdigest()


def _problem(z: dict[str, np.ndarray]) -> str | None:
    """Why cached training arrays are not rows, labels, writers and per-source counts that add up."""
    why = arraycache.rows_problem(z["x"]) or arraycache.labels_problem(z["y"], len(z["x"]))
    if why:
        return why
    if z["writer"].dtype.kind not in "iu" or z["writer"].shape != (len(z["x"]),):
        return "writer ids are not one integer per row"
    try:
        counts = json.loads(str(z["counts"]))
        if not isinstance(counts, dict) or sum(int(v) for v in counts.values()) != len(z["x"]):
            return "per-source counts do not add up to the rows"
    except (ValueError, TypeError):
        return "per-source counts are not JSON"
    return None


def cached(cache: str, key: list[Any], build: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]],
           log: Callable[[str], None]) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """build(), reused from the folder `cache` ('' disables) when the same key built it before."""
    digest = hashlib.md5(json.dumps([*key, code_version()]).encode()).hexdigest()[:16]
    path = Path(cache) / f"train-{digest}.npz" if cache else None
    if path is not None:
        z = arraycache.load(path, ("x", "y", "writer", "counts"), _problem, log)
        if z is not None:
            log(f"training arrays from cache {path}")
            return z["x"], z["y"], z["writer"], json.loads(str(z["counts"]))
    x, y, w, counts = build()
    if path is not None:
        arraycache.save(path, {"x": x, "y": y, "writer": w, "counts": np.array(json.dumps(counts))})
    return x, y, w, counts
