"""What every trainer of the MLP shares (NumPy: gemmpad.learn.train_numpy, CUDA:
gemmpad.learn.train_native): the checks of its inputs, made before any work; the batch order,
one seeded permutation per epoch, so trainers given the same seed see the same batches; and the
learning-rate schedule and per-epoch callback of their `fit()`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from gemmpad.errors import DataError, InputShapeError, InputTypeError
from gemmpad.runtime.model import SHAPES

PRECISIONS = ("fp32", "mixed")
LrSchedule = float | Sequence[float] | Callable[[int], float]


def batch_orders(n: int, seed: int) -> Iterator[np.ndarray]:
    """The row order of each epoch: rng.permutation(n) from default_rng(seed), epoch after epoch.

    Batches are consecutive slices of it (the last one may be shorter). The
    torch engine uses the same generator so both engines see the same batches.
    """
    rng = np.random.default_rng(seed)
    while True:
        yield rng.permutation(n).astype(np.int32)


def lr_at(schedule: LrSchedule, epoch: int) -> float:
    """The learning rate of `epoch`: a constant, the epoch's entry of a list, or schedule(epoch)."""
    if callable(schedule):
        value = schedule(epoch)
    elif isinstance(schedule, (int, float)):
        value = schedule
    else:
        values = list(schedule)
        if epoch >= len(values):
            raise InputShapeError(f"the lr schedule has {len(values)} entries but epoch {epoch + 1} was reached")
        value = values[epoch]
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise DataError(f"learning rate for epoch {epoch + 1} is {value}; it must be finite and >= 0")
    return value


def check_inputs(
    x: Any, y: Any, weights: Any, epochs: int, batch_size: int, momentum: float, weight_decay: float, precision: str
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Every mistake a caller can make, reported before any work (before the GPU is touched)."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise InputTypeError(f"x must be a float32 NumPy array, got {getattr(x, 'dtype', type(x).__name__)}")
    if x.ndim != 2 or x.shape[1] != 784 or x.shape[0] == 0:
        raise InputShapeError(f"x must have shape [N, 784] with N >= 1, got {x.shape}")
    if not isinstance(y, np.ndarray) or not np.issubdtype(y.dtype, np.integer):
        raise InputTypeError(f"labels must be an integer NumPy array, got {getattr(y, 'dtype', type(y).__name__)}")
    if y.shape != (x.shape[0],):
        raise InputShapeError(f"labels must have shape ({x.shape[0]},) to match x, got {y.shape}")
    finite = np.isfinite(x).all(axis=1)
    if not finite.all():
        raise DataError(f"x contains NaN or Inf (first at row {int(np.argmin(finite))})")
    if y.min() < 0 or y.max() > 9:
        raise DataError(f"labels must be in 0..9, got values from {y.min()} to {y.max()}")
    if not isinstance(weights, dict):
        raise InputTypeError("weights must be a dict of W1 b1 W2 b2 W3 b3")
    w: dict[str, np.ndarray] = {}
    for name, shape in SHAPES.items():
        if name not in weights:
            raise InputShapeError(f"weights: missing {name} (expected {list(SHAPES)})")
        arr = weights[name]
        if not isinstance(arr, np.ndarray) or arr.dtype != np.float32:
            raise InputTypeError(f"weights: {name} must be a float32 array, got {getattr(arr, 'dtype', type(arr))}")
        if arr.shape != shape:
            raise InputShapeError(f"weights: {name} has shape {arr.shape}, expected {shape}")
        if not np.isfinite(arr).all():
            raise DataError(f"weights: {name} contains NaN or Inf")
        w[name] = np.ascontiguousarray(arr)
    if int(epochs) != epochs or epochs < 1:
        raise InputShapeError(f"epochs must be a positive integer, got {epochs}")
    if int(batch_size) != batch_size or batch_size < 1:
        raise InputShapeError(f"batch size must be a positive integer, got {batch_size}")
    if not (0.0 <= momentum < 1.0):
        raise DataError(f"momentum must be in [0, 1), got {momentum}")
    if not (math.isfinite(weight_decay) and weight_decay >= 0.0):
        raise DataError(f"weight decay must be finite and >= 0, got {weight_decay}")
    if precision not in PRECISIONS:
        raise InputShapeError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return np.ascontiguousarray(x), np.ascontiguousarray(y, dtype=np.int32), w


def check_targets(targets: Any, n: int) -> np.ndarray | None:
    """Soft targets [n, 10] float32 (each row a probability distribution), or None for the labels'
    one-hot rows. A fine-tune passes the base model's own probabilities on the replay rows
    (distillation: gemmpad.learn.finetune), so replay pulls it back to what the base read."""
    if targets is None:
        return None
    if not isinstance(targets, np.ndarray) or targets.dtype != np.float32:
        raise InputTypeError(f"targets must be a float32 NumPy array, got {getattr(targets, 'dtype', type(targets).__name__)}")
    if targets.shape != (n, 10):
        raise InputShapeError(f"targets must have shape ({n}, 10) to match x, got {targets.shape}")
    if not np.isfinite(targets).all() or targets.min() < 0 or np.abs(targets.sum(axis=1) - 1).max() > 1e-3:
        raise DataError("targets must be finite, >= 0, and each row must sum to 1")
    return np.ascontiguousarray(targets)


EpochCallback = Callable[[int, float, float, dict[str, np.ndarray]], None]


def epoch_order(batch_order: Callable[[int], np.ndarray], epoch: int, n: int) -> np.ndarray:
    """A caller's batch_order(epoch), checked: a permutation's worth of int32 row indices."""
    order = np.asarray(batch_order(epoch))
    if order.shape != (n,) or not np.issubdtype(order.dtype, np.integer):
        raise InputShapeError(f"batch_order({epoch}) must return {n} integer row indices, got {order.dtype} {order.shape}")
    return np.ascontiguousarray(order, dtype=np.int32)  # the trainer checks the range
