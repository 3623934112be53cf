"""The network's weights: loading, validating, saving, and the NumPy reference forward.

The file format is a plain .npz of six float32 arrays (see models/README.md),
loaded with allow_pickle=False so a model file can never run code.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad.errors import ModelFileError
from gemmpad.files import atomic_path, write_text

LAYERS = (784, 100, 100, 10)
SHAPES: dict[str, tuple[int, ...]] = {
    "W1": (784, 100),
    "b1": (100,),
    "W2": (100, 100),
    "b2": (100,),
    "W3": (100, 10),
    "b3": (10,),
}
MODELS_DIR = Path(__file__).resolve().parent / "models"


def default_model_path() -> Path:
    """The shipped model: installed inside the package, or models/ in a source checkout."""
    packaged = MODELS_DIR / "mnist-mlp.npz"
    if packaged.exists():
        return packaged
    return Path(__file__).resolve().parents[2] / "models" / "mnist-mlp.npz"


@dataclass
class Model:
    """softmax(relu(relu(x@W1+b1)@W2+b2)@W3+b3) for x in [0,1]^784, ink bright."""

    weights: dict[str, np.ndarray]
    card: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    def __post_init__(self) -> None:
        validate(self.weights, source=str(self.path or "weights"))

    def __getitem__(self, name: str) -> np.ndarray:
        return self.weights[name]

    def scores(self) -> list[str]:
        """What the model card says these weights scored, as short phrases for the app
        and `gemmpad info` ("MNIST test 98.74 %", "drawn digits 99.8 %"); [] without a card."""
        results = self.card.get("results", {}) if isinstance(self.card, dict) else {}
        out = []
        acc = results.get("mnist_test_accuracy")
        if isinstance(acc, (int, float)):
            out.append(f"MNIST test {100 * acc:.2f} %")
        drawn = results.get("drawn_accuracy")
        if isinstance(drawn, dict) and isinstance(drawn.get("all"), (int, float)):
            out.append(f"drawn digits {100 * drawn['all']:.1f} %")
        return out

    def hidden(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The two hidden layers' activations [B, 100] (after ReLU) for inputs [B, 784]."""
        w = self.weights
        h1 = np.maximum(x @ w["W1"] + w["b1"], 0.0)
        return h1, np.maximum(h1 @ w["W2"] + w["b2"], 0.0)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Probabilities [B, 10] for inputs [B, 784]: the reference every backend matches."""
        w = self.weights
        return softmax(self.hidden(x)[1] @ w["W3"] + w["b3"])

    def save(self, path: str | os.PathLike[str], card: dict[str, Any] | None = None) -> None:
        """Write the .npz (and the .json card beside it when given) atomically."""
        target = Path(path)
        with atomic_path(target) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **{k: self.weights[k].astype(np.float32) for k in SHAPES})
        if card is not None:
            write_text(target.with_suffix(".json"), json.dumps(card, indent=2, sort_keys=False) + "\n")


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax, stable for large logits."""
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def validate(weights: dict[str, np.ndarray], source: str = "weights") -> None:
    """Raise ModelFileError naming the first missing, misshapen, mistyped or non-finite array."""
    missing = [k for k in SHAPES if k not in weights]
    if missing:
        raise ModelFileError(f"{source}: missing arrays {missing} (expected {list(SHAPES)})")
    for name, shape in SHAPES.items():
        arr = weights[name]
        if arr.shape != shape:
            raise ModelFileError(f"{source}: {name} has shape {arr.shape}, expected {shape}")
        if arr.dtype != np.float32:
            raise ModelFileError(f"{source}: {name} has dtype {arr.dtype}, expected float32")
        if not np.all(np.isfinite(arr)):
            raise ModelFileError(f"{source}: {name} contains NaN or Inf")


def load_model(path: str | os.PathLike[str] | None = None) -> Model:
    """Load and validate a model file; its .json card is read when present."""
    p = Path(path) if path is not None else default_model_path()
    if not p.exists() and path is None:
        raise ModelFileError(f"the bundled model is missing (looked for {MODELS_DIR / p.name} and {p}): "
                             "reinstall gemmpad, or name a model file")
    if not p.exists():
        raise ModelFileError(f"model file not found: {p}")
    if p.is_file() and not zipfile.is_zipfile(p):
        # checked first: NumPy would try such a file as a pickle and advise loading it unsafely
        raise ModelFileError(f"{p}: not an .npz model file (no zip archive: corrupt, truncated or another kind of file)")
    try:
        with np.load(p, allow_pickle=False) as data:
            weights = {k: np.ascontiguousarray(data[k]) for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ModelFileError(f"{p}: not a readable .npz model file ({exc})") from None
    card: dict[str, Any] = {}
    card_path = p.with_suffix(".json")
    if card_path.exists():
        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelFileError(f"{card_path}: model card is not valid JSON ({exc})") from None
    return Model(weights=weights, card=card, path=p)
