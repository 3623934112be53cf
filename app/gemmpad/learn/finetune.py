"""Teaching a model one person's handwriting: a short fine-tune on their corrected drawings.

`learn` takes a model and the person's labelled drawings (gemmpad.data.drawings) and:
1. turns each drawing into training rows with the augmentation of training: the
   drawing itself as the app showed it, its strokes painted again at random pens,
   sizes, slants and polarities (pendigits.random_style: training's "pendigits"
   source), and warped and re-stroked copies of those (augment.warp / restroke:
   training's "warp" and "restroke" sources), all through gemmpad.inputs.preprocess;
2. runs a few hundred SGD steps from the model's weights, every digit keeping its
   tenth of each batch and a corrected digit's tenth shared between the person's rows
   and a replay of the base training data (gemmpad.learn.rehearsal_sets), so the network learns them
   without forgetting everyone else: the person's rows against their labels, the
   replay against the base model's own probabilities (distillation, `Prepared`); on the
   GPU with the native CUDA trainer, else in NumPy (gemmpad.learn.trainers.pick("auto")),
   same arguments and same result on both;
3. measures before and after: the person's held-out drawings (never trained on), the
   MNIST test set and unseen real writers; if MNIST test drops by more than MAX_DROP, the
   fine-tune runs once more, gentler (GENTLER: a smaller share for the person's rows, and the
   replay of the digits the drawings were misread as weighted up, so the network learns where
   this person's digit ends and everyone's look-alike begins), and if that too drops more the
   new weights are refused unless forced (`Outcome.accepted`). Unseen writers are shown,
   not ruled on: a personal model may read a few strangers differently (a person whose 1
   has a long flag teaches it that such a stroke is a 1, and some strangers' 7s follow),
   and 0.3 points of the 3,000 real-writer images are 9 digits: 300 steps on the replay
   alone moved them by 0.5-1.0 points (the shipped model, 2026-11-26); MNIST's 10,000
   measure the forgetting this rule guards against.
Saving is the caller's choice (`save_personal`): atomically, never over the shipped model, with
the base's unsure detector carried over to the new weights (unsure.carried) beside them.
A `LearnCache` kept between presses holds what the next Learn can reuse (the drawings'
rows, the prepared replay, the base's figures), so a Learn after one more correction
costs the new drawing and the fine-tune.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad.data import arraycache, augment, pendigits
from gemmpad.inputs import strokes
from gemmpad.data.drawings import Example
from gemmpad.errors import GemmpadError
from gemmpad.runtime.model import Model, accuracy, fold_normalisation, unfold_normalisation
from gemmpad.inputs.preprocess import preprocess, preprocess_batch
from gemmpad.learn import trainers
from gemmpad.learn.trainer import Trainer
from gemmpad.learn.rehearsal_sets import Arrays, References
from gemmpad.runtime import unsure

MAX_DROP = 0.003  # accuracy on MNIST test may fall by at most 0.3 points
# What a refused fine-tune's second try changes (Settings fields). A person's 9 drawn like a 7 taught
# 69 MNIST 7s to read 9 (MNIST -0.72 points): with these its cells cost -0.18..-0.23 and still read
# 100 % (user_share 0.15: -0.29..-0.34 with the model of 2026-11-30; 0.3: -0.27..-0.34; NOTES.md).
GENTLER = {"user_share": 0.1, "confuser_boost": 5.0}
ENGINES = tuple(c for c in trainers.CHOICES if c != "torch")  # the window never loads torch
PAINT_BUDGET = 60  # random-pen paintings per Learn, shared by the drawings (Plan)
WARP_BUDGET = 400  # warped copies per Learn (at least one of each drawing)
RESTROKE_BUDGET = 160  # re-stroked copies per Learn
CACHE_VERSION = 1  # of LearnCache's file
Progress = Callable[[str, float], None]  # (what is happening, fraction done)


@dataclass(frozen=True)
class Settings:
    """How a fine-tune runs. The defaults learn a style from 5 drawings in ~300 steps
    (tests/learn/test_finetune.py, `gemmpad bench learn`)."""

    steps: int = 300
    batch: int = 128
    user_share: float = 0.5  # of a corrected digit's tenth of every batch: the person's rows of it
    confuser_boost: float = 1.0  # weight of the replay rows of the digits the person's drawings were misread as
    lr: float = 0.005  # of the first epoch, cosine-decayed to final_lr of it by the last
    final_lr: float = 0.05
    momentum: float = 0.9
    # random-pen paintings of each strokes drawing (a picture gets none), at most: 6, not 3, since a writer's 8s
    # at a 32 px brush read 89 % after five corrections with 3 (95 % with 6; learn/NOTES.md, 2026-12-01)
    restyles: int = 6
    warps: int = 4  # warped copies of each of those images (and one re-stroked), at most
    holdout: float = 0.0  # fraction of each digit's drawings kept out of training to measure on
    seed: int = 0


@dataclass
class Outcome:
    """What a fine-tune did. Accuracies are fractions; `before`/`after` hold
    "held-out" (the person's drawings not trained on; absent when none were kept out),
    "MNIST test" and "unseen writers" (absent without the pendigits file)."""

    weights: dict[str, np.ndarray]
    before: dict[str, float]
    after: dict[str, float]
    accepted: bool
    reason: str
    engine: str
    trained_on: int
    held_out: int
    rows: int
    steps: int
    seconds: dict[str, float] = field(default_factory=dict)
    rehearsal: dict[str, Any] = field(default_factory=dict)  # the sets used (References.origin), for the card
    gentler: bool = False  # the first fine-tune cost MNIST too much: these are the second, GENTLER try's
    detector: unsure.Detector | None = None  # the base's unsure detector carried over (None: see no_detector)
    no_detector: str = ""  # why none was carried over (the base has none, or a broken one)

    def drops(self) -> dict[str, float]:
        """How much each base figure fell (positive = worse)."""
        return {k: self.before[k] - self.after[k] for k in ("MNIST test", "unseen writers") if k in self.before}

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        del d["weights"], d["detector"], d["no_detector"]
        return d


# ---------------------------------------------------------------- the person's rows


def split_holdout(examples: Sequence[Example], fraction: float) -> tuple[list[Example], list[Example]]:
    """(train, held out): every k-th drawing of each digit (in file order) held out, k = 1/fraction;
    a digit with fewer than k drawings keeps them all for training."""
    if fraction <= 0:
        return list(examples), []
    k = max(2, round(1 / fraction))
    train, held = [], []
    for d in range(10):
        mine = [e for e in examples if e.label == d]
        for i, e in enumerate(mine):
            (held if len(mine) >= k and i % k == k - 1 else train).append(e)
    return train, held


def restyled(example: Example, count: int, seed: int) -> np.ndarray:
    """`count` preprocessed paintings [count, 28, 28] of a strokes drawing at random pens and
    styles (training's "pendigits" augmentation), seeded by the drawing's content."""
    if example.drawing is None or count <= 0:
        return np.zeros((0, 28, 28), np.float32)
    rng = np.random.default_rng([seed, int(example.key[:12], 16)])
    pen = pendigits.PenDigit(example.label, 0, [np.asarray(s, np.float32) * (1.0, -1.0)
                                                 for s in example.drawing.strokes])
    styles = [pendigits.random_style(rng) for _ in range(count)]
    out = [preprocess(pendigits.render(pen, st)) for st in styles if _restyle_cost(pen, st) <= strokes.MAX_PAINT_COST]
    return np.array([o for o in out if o is not None], dtype=np.float32).reshape(-1, 28, 28)


def _restyle_cost(pen: pendigits.PenDigit, style: pendigits.Style) -> float:
    """What painting `pen` at `style` costs (strokes.paint_cost). The loader priced the drawing
    at its own size and pen; a restyle scales it to fill the canvas with a pen of its own, so
    a scribble within a few pixels, priced low, could cost minutes here: such a painting is
    left out (the drawing itself still trains)."""
    lines = pendigits.canvas_strokes(pen, style)
    return strokes.Drawing(lines, [style.width] * len(lines), style.canvas).paint_cost()


@dataclass(frozen=True)
class Plan:
    """The copies each drawing gets in a Learn of `n` drawings: the budgets (PAINT_BUDGET,
    WARP_BUDGET, RESTROKE_BUDGET) shared out, so that a few drawings get every kind of copy
    and two hundred get a few each, and Learn stays well under a second of CPU."""

    restyles: int  # random-pen paintings of each strokes drawing
    warps: int  # warped copies of each image (the drawing and its paintings)
    restroke: float  # share of those images also re-stroked (chosen by their content's hash)

    @classmethod
    def of(cls, n: int, settings: Settings) -> Plan:
        n = max(1, n)
        restyles = min(settings.restyles, PAINT_BUDGET // n)
        warps = max(1, min(settings.warps, WARP_BUDGET // (n * (1 + restyles))))
        return cls(restyles, warps, min(1.0, RESTROKE_BUDGET / (n * (1 + restyles))))

    def restroked(self, example: Example, images: int) -> np.ndarray:
        """Which of a drawing's images are re-stroked: a hash of its content against the share."""
        draws = np.random.default_rng([int(example.key[:12], 16), 7]).random(images)
        return draws < self.restroke


class LearnCache:
    """What Learn keeps from one press to the next (the window's Learner holds one), and on
    disk from one session to the next (`load`, `save`).

    Painting, warping and preprocessing the drawings is most of a Learn's time (the
    fine-tune itself is 0.04 s on an H100), and a person adds a drawing or two
    between presses. So each drawing's training rows are kept under its content (the
    file's hash: an edited file is made again) and the copies it got (Plan), and the base
    model's replay as tune() steps on it (Prepared) and its MNIST / writer figures under
    the base's weights. A drawing's copies are drawn when a Learn first sees it, from a
    generator seeded by that Learn's new drawings: the same drawings give the same rows
    in a fresh cache too. `drawings` is for gemmpad.data.drawings.read_folder (by content)."""

    def __init__(self) -> None:
        self.drawings: dict[str, Example] = {}
        self._rows: dict[str, np.ndarray] = {}
        self._base: tuple[References, bytes, Prepared, dict[str, float]] | None = None

    def base(self, weights: dict[str, np.ndarray], refs: References) -> tuple[Prepared, dict[str, float]]:
        """(the prepared replay, the figures on everyone else) of a base model, made once."""
        digest = weights_digest(weights)
        if self._base is None or self._base[0] is not refs or self._base[1] != digest:
            self._base = (refs, digest, prepare(weights, refs.replay), figures(weights, [], refs))
        return self._base[2], self._base[3]

    @classmethod
    def load(cls, folder: str | Path) -> LearnCache:
        """The cache `save` left in `folder` for this code (empty when there is none or it is damaged:
        it is made again, never trusted)."""
        cache = cls()
        z = arraycache.load(_cache_file(folder), ("image_keys", "images", "row_keys", "row_counts", "rows"),
                            _cache_problem)
        if z is None:
            return cache
        ends = np.cumsum(z["row_counts"])
        cache.drawings = {str(k): Example(-1, Path(), img, None, str(k))
                          for k, img in zip(z["image_keys"], z["images"])}
        cache._rows = {str(k): z["rows"][e - c : e] for k, c, e in zip(z["row_keys"], z["row_counts"], ends)}
        return cache

    def save(self, folder: str | Path, examples: Sequence[Example]) -> None:
        """Write what `examples` (the drawings of the last Learn) need to `folder`, atomically;
        drawings no longer there are left out, so the file holds the current drawings only."""
        keep = {e.key for e in examples}
        images = {k: e.image28 for k, e in self.drawings.items() if k in keep}
        rows = {k: v for k, v in self._rows.items() if k.split("|")[0] in keep}
        arraycache.save(_cache_file(folder), {
            "image_keys": np.array(list(images), dtype=str),
            "images": np.array(list(images.values()), np.float32).reshape(-1, 28, 28),
            "row_keys": np.array(list(rows), dtype=str),
            "row_counts": np.array([len(v) for v in rows.values()], np.int64),
            "rows": np.concatenate(list(rows.values())) if rows else np.zeros((0, 784), np.float32)})


def _cache_problem(z: dict[str, np.ndarray]) -> str | None:
    """Why a LearnCache file's arrays are not drawings and their rows (None when they are)."""
    images, counts = z["images"], z["row_counts"]
    if images.ndim != 3 or images.shape[1:] != (28, 28) or len(z["image_keys"]) != len(images):
        return "drawings of the wrong shape"
    if counts.dtype.kind not in "iu" or counts.shape != z["row_keys"].shape or (len(counts) and counts.min() < 0):
        return "row counts that are not one count per key"
    if int(counts.sum()) != len(z["rows"]):
        return "row counts that do not add up"
    return arraycache.rows_problem(images.reshape(-1, 784)) or arraycache.rows_problem(z["rows"])


def _cache_file(folder: str | Path) -> Path:
    """learn-<hash>.npz: the hash of the code that makes the rows, so other code never reads them."""
    from gemmpad.data.trainset import code_version

    here = Path(__file__).read_bytes()
    version = hashlib.md5(f"{CACHE_VERSION} {code_version()}".encode() + here).hexdigest()[:16]
    return Path(folder) / f"learn-{version}.npz"


def weights_digest(weights: dict[str, np.ndarray]) -> bytes:
    h = hashlib.sha1()
    for k in sorted(weights):
        h.update(np.ascontiguousarray(weights[k]).tobytes())
    return h.digest()


def user_rows(examples: Sequence[Example], settings: Settings, cache: LearnCache | None = None) -> Arrays:
    """The training rows made from the person's drawings (see the module docstring), each
    drawing's from the cache when a Learn made them before."""
    cache = cache or LearnCache()
    plan = Plan.of(len(examples), settings)
    keys = {id(e): f"{e.key}|{settings.seed}|{plan.restyles}|{plan.warps}|"
                   f"{plan.restroked(e, 1 + plan.restyles).tobytes().hex()}" for e in examples}
    new = [e for e in examples if keys[id(e)] not in cache._rows]
    if new:
        rng = np.random.default_rng([settings.seed, 2, *(int(e.key[:12], 16) for e in new)])
        for e, rows in zip(new, _make_rows(new, plan, settings.seed, rng)):
            cache._rows[keys[id(e)]] = rows
    parts = [cache._rows[keys[id(e)]] for e in examples]
    return Arrays(np.concatenate(parts), np.repeat(np.array([e.label for e in examples], np.int64),
                                                   [len(p) for p in parts]))


def _make_rows(examples: Sequence[Example], plan: Plan, seed: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Each drawing's rows [k, 784]: itself, its paintings, warps of those, re-strokes of some;
    warped and re-stroked all at once (whole-batch NumPy), then split back by drawing."""
    bases = [np.concatenate([e.image28[None], restyled(e, plan.restyles, seed)]) for e in examples]
    owner = np.repeat(np.arange(len(examples)), [len(b) for b in bases])
    base = np.concatenate(bases)
    pick = np.concatenate([plan.restroked(e, len(b)) for e, b in zip(examples, bases)])
    copies = [(augment.warp(base, 28, rng), owner) for _ in range(plan.warps)]
    if pick.any():
        copies.append((augment.restroke(base[pick], rng), owner[pick]))  # 56 x 56: preprocess halves them
    made = [(preprocess_batch(images), whose) for images, whose in copies]
    x = np.concatenate([xs[ok] for (xs, ok), _ in made]).reshape(-1, 784)
    whose = np.concatenate([w[ok] for (_, ok), w in made])
    return [np.concatenate([b.reshape(-1, 784), x[whose == i]]) for i, b in enumerate(bases)]


# ---------------------------------------------------------------- training


def batch_plan(user_y: np.ndarray, replay_y: np.ndarray, settings: Settings,
               rng: np.random.Generator, confusers: Sequence[int] = ()) -> list[np.ndarray]:
    """Per-epoch row orders over [user rows; replay rows], as many epochs as make `steps` steps.

    Every digit keeps its tenth of each batch, as in training: a fine-tune on five 9s
    that filled half of every batch with 9s would teach the network that most things
    are 9s. Of a corrected digit's tenth, `user_share` goes to the person's rows of it
    (cycled in shuffled order); replay rows fill the rest, drawn with that digit's
    replay rows weighted down by the same share, and the replay rows of `confusers` (the digits
    the person's drawings were misread as) weighted up by settings.confuser_boost.
    """
    n_user, n = len(user_y), len(user_y) + len(replay_y)
    per_epoch = -(-n // settings.batch)
    epochs = max(1, -(-settings.steps // per_epoch))
    digits = np.unique(user_y)
    k = max(1, round(settings.batch / 10 * settings.user_share))  # slots per corrected digit in a batch
    if len(digits) * k > settings.batch:  # a digit without a slot would never be learned
        raise GemmpadError(f"a batch of {settings.batch} rows has no room for the {len(digits)} corrected digits: "
                           f"the batch size must be at least {len(digits) * k}")
    slot = np.arange(n) % settings.batch
    weight = np.where(np.isin(replay_y, digits), 1.0 - settings.user_share, 1.0)
    weight *= np.where(np.isin(replay_y, list(confusers)), settings.confuser_boost, 1.0)
    weight /= weight.sum()
    orders = []
    for _ in range(epochs):
        order = np.empty(n, dtype=np.int32)
        free = np.ones(n, dtype=bool)
        for j, d in enumerate(digits):
            mine = np.flatnonzero(user_y == d)
            at = (slot >= j * k) & (slot < (j + 1) * k)
            need = int(at.sum())
            order[at] = np.concatenate([rng.permutation(mine) for _ in range(-(-need // len(mine)))])[:need]
            free &= ~at
        order[free] = n_user + rng.choice(len(replay_y), size=int(free.sum()), p=weight)
        orders.append(order)
    return orders


def decay(lr: float, epochs: int, final: float) -> list[float]:
    """Per-epoch learning rates: lr, cosine-decayed to lr * final in the last epoch. A fine-tune
    ends with small steps, where the base model's training ended, so the network settles
    back near the base rather than where the last noisy large step left it."""
    if epochs == 1:
        return [lr]
    return [lr * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * e / (epochs - 1)))) for e in range(epochs)]


@dataclass(frozen=True)
class Prepared:
    """The replay as tune() steps on it, made once per base model (LearnCache.base): inputs
    normalised as in training, labels, and the base model's own probabilities on them, the
    replay's targets. Distillation: a replay row pulls the network back to what the base
    read there, not to its label, so the replay stops moving the base where the person's
    rows do not pull (with the labels, 300 steps on the replay alone cost 0.19 points of
    MNIST test; NOTES.md beside this file)."""

    x: np.ndarray  # float32 [N, 784], (x - mean) / std
    y: np.ndarray  # int64 [N]
    targets: np.ndarray  # float32 [N, 10]
    mean: float
    std: float


def prepare(weights: dict[str, np.ndarray], replay: Arrays) -> Prepared:
    mean, std = float(replay.x.mean()), float(replay.x.std())
    probs = Model(weights).forward(replay.x).astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    return Prepared(((replay.x - mean) / std).astype(np.float32), replay.y, probs.astype(np.float32), mean, std)


def tune(weights: dict[str, np.ndarray], user: Arrays, replay: Prepared, settings: Settings,
         engine: str | Trainer = "auto",
         progress: Progress | None = None,
         should_stop: Callable[[], bool] | None = None,
         confusers: Sequence[int] = ()) -> tuple[dict[str, np.ndarray], str, int]:
    """(new weights for raw inputs, engine used, steps run): SGD from `weights` on the person's
    rows (against their labels) mixed with the replay (against the base's probabilities),
    batches from batch_plan, in normalised inputs as in training."""
    if len(user) == 0:
        raise GemmpadError("no drawings to learn from")
    if isinstance(engine, str) and engine not in ENGINES:
        raise GemmpadError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    trainer = trainers.pick(engine) if isinstance(engine, str) else engine
    x = np.concatenate([((user.x - replay.mean) / replay.std).astype(np.float32), replay.x])
    y = np.concatenate([user.y, replay.y]).astype(np.int32)
    targets = np.concatenate([np.eye(10, dtype=np.float32)[user.y], replay.targets])
    orders = batch_plan(user.y, replay.y, settings, np.random.default_rng([settings.seed, 1]), confusers)
    epochs = len(orders)

    def on_epoch(epoch: int, loss: float, acc: float, _w: dict[str, np.ndarray]) -> None:
        if progress is not None:
            progress(f"epoch {epoch + 1}/{epochs}, loss {loss:.3f}", (epoch + 1) / epochs)

    w = trainer.fit(x, y, unfold_normalisation(weights, replay.mean, replay.std), epochs=epochs,
                    batch_size=settings.batch, lr_schedule=decay(settings.lr, epochs, settings.final_lr),
                    momentum=settings.momentum, weight_decay=0.0, batch_order=lambda e: orders[e], callback=on_epoch,
                    targets=targets, should_stop=should_stop)
    return fold_normalisation(w, replay.mean, replay.std), trainer.name, epochs * (-(-len(y) // settings.batch))


# ---------------------------------------------------------------- measuring and deciding


def figures(weights: dict[str, np.ndarray], held: Sequence[Example], refs: References) -> dict[str, float]:
    """The before/after figures of one set of weights (see Outcome)."""
    model = Model(weights)
    out = {}
    if held:
        out["held-out"] = held_out(model, held)
    out["MNIST test"] = accuracy(model, refs.mnist.x, refs.mnist.y)
    if len(refs.writers):
        out["unseen writers"] = accuracy(model, refs.writers.x, refs.writers.y)
    return out


def held_out(model: Model, held: Sequence[Example]) -> float:
    return accuracy(model, np.stack([e.image28.reshape(784) for e in held]), np.array([e.label for e in held]))


def _too_costly(outcome: Outcome) -> dict[str, float]:
    """The base figures the fine-tune lowered by more than the rule allows (MNIST test, MAX_DROP)."""
    return {k: v for k, v in outcome.drops().items() if k == "MNIST test" and v > MAX_DROP}


def misread_as(model: Model, examples: Sequence[Example]) -> list[int]:
    """The digits `model` reads the drawings as where it reads them wrong: what the person's digit
    is taken for, whose replay the gentler fine-tune weights up."""
    x = np.stack([e.image28.reshape(784) for e in examples])
    labels = np.array([e.label for e in examples])
    read = model.forward(x).argmax(axis=1)
    return sorted(set(read[read != labels].tolist()) - set(labels.tolist()))


def check_base(model: Model) -> None:
    """Raise GemmpadError naming the model's file unless it is 784-100-100-10: every trainer
    (gemmpad.learn.trainer.check_inputs) is written for that shape, and an imported network of
    other widths was refused there, after the replay sets were made, as "weights: W1 ..."."""
    if not model.standard:
        raise GemmpadError(f"{model.name}: a {'-'.join(map(str, model.layers))} network; Learn fine-tunes only "
                           "784-100-100-10 networks (other widths are read, not fine-tuned)")


def learn(model: Model, examples: Sequence[Example], refs: References, settings: Settings = Settings(),
          engine: str = "auto", force: bool = False, progress: Progress | None = None,
          should_stop: Callable[[], bool] | None = None, cache: LearnCache | None = None) -> Outcome:
    """Fine-tune `model` on `examples` with the replay of `refs`; measure; accept or refuse.
    `cache` keeps the work that the next Learn can reuse (LearnCache)."""
    check_base(model)
    say = progress or (lambda s, f: None)
    cache = cache or LearnCache()
    t0 = time.perf_counter()
    train, held = split_holdout(examples, settings.holdout)
    if not train:
        raise GemmpadError("no drawings to learn from")
    say(f"making training copies of {len(train)} drawings", 0.0)
    rows = user_rows(train, settings, cache)
    prepared, base_figures = cache.base(model.weights, refs)
    before = ({"held-out": held_out(model, held)} if held else {}) | base_figures
    t1 = time.perf_counter()
    weights, name, steps = tune(model.weights, rows, prepared, settings, engine, progress, should_stop)
    t2 = time.perf_counter()
    after = figures(weights, held, refs)
    outcome = Outcome(weights, before, after, True, "", name, len(train), len(held), len(rows), steps,
                      rehearsal=dict(refs.origin))
    if _too_costly(outcome):  # forced too: `--insist` and "Use it anyway" keep the gentler weights alike
        say("that cost others too much: learning again, gentler", 0.5)
        gentler = replace(settings, **GENTLER)
        weights, name, steps = tune(model.weights, rows, prepared, gentler, engine, progress, should_stop,
                                    confusers=misread_as(model, train))
        outcome = Outcome(weights, before, figures(weights, held, refs), True, "", name, len(train), len(held),
                          len(rows), steps, rehearsal=dict(refs.origin), gentler=True)
        t2 = time.perf_counter()
    worse = _too_costly(outcome)
    if worse:
        text = ", ".join(f"{k} {100 * before[k]:.2f} -> {100 * outcome.after[k]:.2f} %" for k in worse)
        outcome.accepted = force
        outcome.reason = (f"it would read others worse ({text}; more than {100 * MAX_DROP:.1f} points"
                          + (", learning gentler too)" if outcome.gentler else ")"))
    detector, why = unsure.for_model(model)
    if detector is not None:  # the personal model reads "unsure" as its base did, also after a restart
        outcome.detector = unsure.carried(detector, Model(outcome.weights))
    else:
        outcome.no_detector = f"none carried over from the base model ({why})"
    outcome.seconds = {"rows": t1 - t0, "train": t2 - t1, "measure": time.perf_counter() - t2,
                       "total": time.perf_counter() - t0}
    return outcome


def personal_files(path: str | Path) -> tuple[Path, Path, Path]:
    """The files a personal model is: its weights (`path`), its card and its unsure detector, as
    save_personal writes them, `gemmpad fine-tune` checks them and Reset moves them aside together."""
    model = Path(path)
    return model, model.with_suffix(".json"), unsure.path_for(model)


def save_personal(outcome: Outcome, base: Model, examples: Sequence[Example], path: str | Path,
                  settings: Settings = Settings()) -> Path:
    """Write the fine-tuned weights and a card saying what they were tuned from, atomically,
    and the carried unsure detector beside them (a detector left there for weights this
    replaces is removed: it could only say "fitted for other weights"). Refuses to write over
    the base model's own file."""
    target, _, beside = personal_files(path)
    if base.path is not None and target.resolve() == Path(base.path).resolve():
        raise GemmpadError(f"{target} is the model being fine-tuned: name another file")
    card = {
        "name": target.stem,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "architecture": base.card.get("architecture", "784-100-100-10 MLP") if isinstance(base.card, dict) else "",
        "fine_tuned": {"base": str(base.path) if base.path else None, "drawings": len(examples),
                       "per_digit": {str(d): sum(e.label == d for e in examples) for d in range(10)},
                       "settings": asdict(replace(settings, **GENTLER) if outcome.gentler else settings),
                       **outcome.summary()},
        "training": base.card.get("training", {}) if isinstance(base.card, dict) else {},
        "results": {"mnist_test_accuracy": outcome.after["MNIST test"]},
    }
    if outcome.detector is not None:  # what the model's card lists of it (the file holds the rest)
        card["unsure"] = {"file": beside.name, "carried_from": outcome.detector.fitted["carried_from"]}
    Model(outcome.weights).save(target, card)
    if outcome.detector is not None:
        unsure.save(outcome.detector, beside)
    else:
        beside.unlink(missing_ok=True)
    return target
