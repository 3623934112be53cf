"""The "unsure" detector: does a 28x28 input look like one digit to this network?

A softmax always names a digit, and a dot, a scribble, an X or "12" written together come
out at 80-99.9 %. Confidence alone catches few of them (at a threshold that flags 0.3 % of
MNIST test digits, 7 % of gemmpad.data.nondigits; ink shape alone, e.g. separate blobs, 15 %
at 0.65 %). What separates them better is how the whole network responds: a small
classifier (one hidden layer of HIDDEN units) on the hidden activations (100 + 100), the
logits, the top probabilities and two ink-shape cues (amount of ink, width over height),
trained on real digits against generated non-digits (a logistic regression on the same
features caught 62 % of non-digits where this catches 81-84 %, both flagging ~0.5 % of
MNIST test). Its threshold is the score below which CALIBRATION_QUANTILE of digits held
out from that training fall, so the share of real digits it flags is set by construction,
and measured on digits it never saw (gemmpad.learn.unsure_fit).

The detector belongs to one set of weights (it reads their hidden layers): it is stored
beside the model as <model>.unsure.json with the weights' fingerprint, and for_model()
refuses a file fitted for other weights. `gemmpad unsure --fit` makes it for a new model,
in the user's data folder unless told where (user_path_for), and for_model looks there too.
A Learn's personal weights get their base's detector carried over (carried()), saved beside
the personal model.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad.errors import GemmpadError, ModelFileError
from gemmpad.inputs.files import write_text
from gemmpad.inputs.reads import load_json
from gemmpad.runtime.model import SHAPES, Model

CALIBRATION_QUANTILE = 0.997  # of the held-out calibration digits, this share scores below the threshold
CALIBRATION_SHARE = 0.3  # of the digits given to fit(), held out of training to set the threshold
INK_THRESHOLD = 0.2  # a 28x28 pixel above this counts for the ink's width and height
HIDDEN = 32
CLIP = 8.0  # standard deviations
FIT_STEPS, FIT_LR, FIT_L2, FIT_SEED = 1500, 0.01, 1e-3, 0
MAX_FILE_BYTES = 4 << 20  # 232 x 32 weights as JSON: ~0.2 MB


def features(model: Model, x: np.ndarray, hidden: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """[B, F] float64: what the detector looks at for inputs [B, 784] (preprocess() output).
    hidden: the hidden layers [B, 100] each as a kernel computed them (the window passes the
    selected kernel's own); None: NumPy computes them here."""
    x = np.asarray(x, dtype=np.float32).reshape(-1, 784)
    h1, h2 = model.hidden(x) if hidden is None else (np.asarray(hidden[0], np.float32).reshape(len(x), -1),
                                                      np.asarray(hidden[1], np.float32).reshape(len(x), -1))
    z = h2 @ model["W3"] + model["b3"]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    top = np.sort(p, axis=1)[:, -2:]
    img = x.reshape(-1, 28, 28)
    rows = (img.max(axis=2) > INK_THRESHOLD).sum(axis=1)
    cols = (img.max(axis=1) > INK_THRESHOLD).sum(axis=1)
    shape = np.column_stack([x.sum(axis=1) / 100.0, cols / np.maximum(rows, 1)])
    return np.hstack([h1, h2, z, top, np.log(top[:, 1:] + 1e-9), shape]).astype(np.float64)


def fingerprint(model: Model) -> str:
    """SHA-256 of the weights (float32, in SHAPES order): which model a detector was fitted for."""
    h = hashlib.sha256()
    for name in SHAPES:
        h.update(np.ascontiguousarray(model[name], dtype=np.float32).tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Detector:
    """score = relu(((features - mean) / scale) @ w1 + b1) @ w2 + b2; unsure when score > threshold."""

    model_sha256: str
    mean: list[float]
    scale: list[float]
    w1: list[list[float]]
    b1: list[float]
    w2: list[float]
    b2: float
    threshold: float
    fitted: dict[str, Any] = field(default_factory=dict)  # what it was fitted on, when
    measured: dict[str, Any] = field(default_factory=dict)  # rates on held-out sets (unsure_fit.measure)

    def score(self, model: Model, x: np.ndarray, hidden: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """[B] scores for inputs [B, 784] (hidden: as in features()): above the threshold means "not one digit"."""
        f = _standard(features(model, x, hidden), np.asarray(self.mean), np.asarray(self.scale))
        return _score(f, np.asarray(self.w1), np.asarray(self.b1), np.asarray(self.w2), self.b2)

    def unsure(self, model: Model, x: np.ndarray, hidden: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """[B] bool: True where the input does not look like one digit."""
        return self.score(model, x, hidden) > self.threshold


def _standard(f: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Features in standard units, clipped to +-CLIP: a hidden unit that is almost never
    active in the fitting sets must not, when a drawing lights it up, outweigh all the rest
    (unclipped, one such unit gave a clear digit a score 10^4 times the threshold)."""
    return np.clip((f - mean) / scale, -CLIP, CLIP)


def _score(f: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: float) -> np.ndarray:
    return np.maximum(f @ w1 + b1, 0.0) @ w2 + b2


def fit(model: Model, digits: np.ndarray, nondigits: np.ndarray, about: dict[str, Any] | None = None) -> Detector:
    """A detector for `model` from real digits and non-digits ([N, 784] each, preprocess()
    output): the classifier trained (Adam, full batch, classes weighted equally, L2) on all
    non-digits and 1 - CALIBRATION_SHARE of the digits; the threshold at
    CALIBRATION_QUANTILE of the other digits' scores (on its own training digits a
    classifier scores too well, and the threshold would flag more new digits than meant)."""
    rng = np.random.default_rng(FIT_SEED)
    fd_all, fn = features(model, digits), features(model, nondigits)
    order = rng.permutation(len(fd_all))
    cut = int(round((1 - CALIBRATION_SHARE) * len(fd_all)))
    fd, fcal = fd_all[order[:cut]], fd_all[order[cut:]]
    both = np.vstack([fd, fn])
    mean, scale = both.mean(axis=0), both.std(axis=0) + 1e-3
    a = _standard(both, mean, scale)
    y = np.r_[np.zeros(len(fd)), np.ones(len(fn))]
    cw = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean())) / len(y)
    w1 = rng.normal(0.0, 1.0 / np.sqrt(a.shape[1]), (a.shape[1], HIDDEN))
    b1, w2, b2 = np.zeros(HIDDEN), rng.normal(0.0, 1.0 / np.sqrt(HIDDEN), HIDDEN), np.zeros(1)
    params = [w1, b1, w2, b2]
    m1, m2 = [np.zeros_like(p) for p in params], [np.zeros_like(p) for p in params]
    for t in range(1, FIT_STEPS + 1):
        h = np.maximum(a @ w1 + b1, 0.0)
        p = 1.0 / (1.0 + np.exp(-np.clip(h @ w2 + b2, -50, 50)))
        g = cw * (p - y)
        gh = np.outer(g, w2) * (h > 0)
        grads = [a.T @ gh + FIT_L2 * w1, gh.sum(axis=0), h.T @ g + FIT_L2 * w2, np.array([g.sum()])]
        for i, (param, grad) in enumerate(zip(params, grads)):
            m1[i] = 0.9 * m1[i] + 0.1 * grad
            m2[i] = 0.999 * m2[i] + 0.001 * grad**2
            param -= FIT_LR * (m1[i] / (1 - 0.9**t)) / (np.sqrt(m2[i] / (1 - 0.999**t)) + 1e-8)
    threshold = float(np.quantile(_score(_standard(fcal, mean, scale), w1, b1, w2, float(b2[0])), CALIBRATION_QUANTILE))
    fitted = {"digits": len(fd), "threshold_digits": len(fcal), "nondigits": len(fn),
              "quantile": CALIBRATION_QUANTILE, "hidden": HIDDEN,
              "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"), **(about or {})}
    return Detector(fingerprint(model), mean.tolist(), scale.tolist(), w1.tolist(), b1.tolist(), w2.tolist(),
                    float(b2[0]), threshold, fitted)


def carried(det: Detector, tuned: Model) -> Detector:
    """`det` for weights fine-tuned from the ones it was fitted for (Learn): the same classifier and
    threshold under the new weights' fingerprint, its `measured` rates still those of the weights
    it was fitted for (`fitted["carried_from"]` names them, also after a second carry). Fitting
    again takes minutes (rendering, 1,500 Adam steps); a Learn moves the features the classifier
    reads little: over three Learns it flagged 0.30-0.33 % of MNIST test and caught 87.8-88.0 %
    of non-digits on the new weights, one fitted again for them 0.27-0.36 % and 88.6-89.3 %
    (gemmpad/learn/NOTES.md, 2026-12-01)."""
    measured_on = det.fitted.get("carried_from", det.model_sha256)
    return replace(det, model_sha256=fingerprint(tuned), fitted={**det.fitted, "carried_from": measured_on})


def writers_entry(measured: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A detector's measured rate on real pen writers and which ones ("1-6"), as
    gemmpad.learn.unsure_fit.measure names it (StopIteration when it has none)."""
    key = next(k for k in measured if k.startswith("pendigits_writers_"))
    return key.removeprefix("pendigits_writers_"), measured[key]


def path_for(model_path: str | os.PathLike[str]) -> Path:
    """Where a model's detector lives: beside it, models/mnist-mlp.unsure.json."""
    p = Path(model_path)
    return p.with_name(p.stem + ".unsure.json")


def refuse_card_clash(model_path: str | os.PathLike[str], option: str,
                      error: type[GemmpadError] = GemmpadError) -> None:
    """Refuse a model file named X.unsure.npz: its card, X.unsure.json, would take the name of
    X.npz's unsure detector (and with --force replace it, leaving X.npz's detector a card)."""
    p = Path(model_path)
    if p.stem.endswith(".unsure"):
        owner = p.with_name(p.stem[: -len(".unsure")] + p.suffix)
        raise error(f"{option}: {p.name}'s card would be named {p.with_suffix('.json').name}, the name of "
                    f"{owner.name}'s unsure detector; name the model otherwise")


def save(detector: Detector, path: str | os.PathLike[str]) -> None:
    write_text(path, json.dumps(asdict(detector), separators=(",", ":")) + "\n")


def load(path: str | os.PathLike[str]) -> Detector:
    """Read a detector file; ModelFileError (one line) when it is not one."""
    raw = load_json(path, MAX_FILE_BYTES, ModelFileError, "unsure detector file")
    try:
        det = Detector(**raw)
        n, w1 = len(det.mean), np.asarray(det.w1, dtype=np.float64)
        numbers = [np.asarray(v, dtype=np.float64) for v in (det.mean, det.scale, det.b1, det.w2, det.b2, det.threshold)]
        ok = (isinstance(det.model_sha256, str) and n > 0 and len(det.scale) == n and w1.ndim == 2
              and w1.shape == (n, len(det.b1)) and len(det.w2) == len(det.b1)
              and all(np.all(np.isfinite(v)) for v in [w1, *numbers]))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ModelFileError(f"{path}: not a valid unsure detector file (expected the fields gemmpad unsure --fit writes)")
    return det


def for_model(model: Model) -> tuple[Detector | None, str]:
    """The model's detector, or None and why not (no file beside the model; fitted for
    other weights; a broken file): the window then shows plain readings and says so."""
    det, _, why = find(model)
    return det, why


def find(model: Model) -> tuple[Detector | None, Path | None, str]:
    """for_model, with the file the detector came from. The reason is said after "no unsure
    detector: " (predict, the window, `gemmpad unsure`), so it does not repeat those words."""
    if model.path is None:
        return None, None, "the weights were given in memory, not read from a file"
    beside = path_for(model.path)
    why = f"none beside the model ({beside.name}: make it with `gemmpad unsure --fit`)"
    for path in (user_path_for(model), beside):  # the user's own fit (gemmpad unsure --fit) first: they asked for it
        if not path.exists():
            continue
        try:
            det = load(path)
        except ModelFileError as exc:
            why = str(exc)
            continue
        if det.model_sha256 == fingerprint(model) and len(det.mean) == features(model, np.zeros(784)).shape[1]:
            return det, path, ""
        why = f"{path.name} was fitted for other weights: run `gemmpad unsure --fit`"
    return None, None, why


def user_path_for(model: Model) -> Path:
    """Where `gemmpad unsure --fit` writes a detector by default: the user's data folder, under the
    weights' fingerprint (never inside the installed package, whose shipped detector stays as shipped)."""
    from gemmpad.data import userdata

    return userdata.data_dir() / "unsure" / f"{fingerprint(model)[:16]}.unsure.json"
