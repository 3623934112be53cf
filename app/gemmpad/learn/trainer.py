"""What every trainer of the MLP shares (NumPy: gemmpad.learn.train_numpy, CUDA:
gemmpad.learn.train_native, torch: gemmpad.learn.train_torch; gemmpad.learn.trainers picks one by
name): the `Trainer` interface; the one initialisation and the one batch order, so trainers given
the same seed start from the same weights and see the same batches; the checks of their inputs,
made before any work; and the learning-rate schedule and per-epoch callback of their `fit()`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from gemmpad.errors import DataError, GemmpadError, InputShapeError, InputTypeError
from gemmpad.runtime.model import LAYERS, SHAPES

PRECISIONS = ("fp32", "mixed")
LrSchedule = float | Sequence[float] | Callable[[int], float]
EpochCallback = Callable[[int, float, float, dict[str, np.ndarray]], None]
BatchOrder = Callable[[int], np.ndarray]


class Trainer(Protocol):
    """One way to run SGD on the 784-100-100-10 MLP (gemmpad.learn.trainers.pick gives one by name).

    x float32 [N, 784], y integer labels [N] in 0..9, weights the six float32 arrays of
    gemmpad.runtime.model (not modified). Epoch e visits the rows batch_order(e) in consecutive
    slices of batch_size (the last may be shorter); without batch_order, batch_orders(N, seed).
    lr_schedule: a constant, a per-epoch list or epoch -> lr. momentum and weight_decay as
    torch.optim.SGD (decay_biases=False exempts b1..b3). Loss: mean softmax cross-entropy against
    y, or against `targets` (float32 [N, 10], rows summing to 1) when given. callback(epoch,
    loss, accuracy, weights) after every epoch; should_stop() polled between steps or epochs (the
    weights reached so far are returned). Returns the trained weights; GemmpadError on divergence.
    What only one trainer has (precision, device, optimizer...) is bound when it is picked.
    """

    name: str

    def fit(self, x: np.ndarray, y: np.ndarray, weights: dict[str, np.ndarray], *, epochs: int,
            batch_size: int = ..., lr_schedule: LrSchedule = ..., momentum: float = ...,
            weight_decay: float = ..., decay_biases: bool = ..., seed: int = ...,
            batch_order: BatchOrder | None = ..., callback: EpochCallback | None = ...,
            should_stop: Callable[[], bool] | None = ...,
            targets: np.ndarray | None = ...) -> dict[str, np.ndarray]: ...


INITS = ("he", "torch")


def init_weights(seed: int, kind: str = "he") -> dict[str, np.ndarray]:
    """Initial weights from NumPy, so every trainer starts from the same point.

    "he": He-uniform weights (+-sqrt(6/fan_in)), zero biases, from default_rng([seed, 2]): what
    trained the shipped model (its card: "init"). "torch": torch.nn.Linear's default (weights and
    biases uniform in +-1/sqrt(fan_in)) from default_rng(seed): what `gemmpad bench train`'s
    committed parity figures (assets/benchmarks/*/train.json) started from.
    """
    if kind not in INITS:
        raise GemmpadError(f"unknown initialisation {kind!r}; choose one of {', '.join(INITS)}")
    rng = np.random.default_rng([seed, 2] if kind == "he" else seed)
    w: dict[str, np.ndarray] = {}
    for i, (fan_in, fan_out) in enumerate(zip(LAYERS[:-1], LAYERS[1:]), start=1):
        bound = math.sqrt(6.0 / fan_in) if kind == "he" else 1.0 / math.sqrt(fan_in)
        w[f"W{i}"] = rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32)
        w[f"b{i}"] = (np.zeros(fan_out, dtype=np.float32) if kind == "he"
                      else rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return w


ORDERS = ("epoch", "stream")


def batch_orders(n: int, seed: int, kind: str = "epoch") -> BatchOrder:
    """epoch -> the row order of that epoch, a permutation of n; batches are its consecutive slices.

    "epoch": default_rng([seed, 3, epoch]).permutation(n), what trained the shipped model, any
    epoch on its own. "stream": successive permutations of one default_rng(seed), what
    `gemmpad bench train`'s committed figures (assets/benchmarks/*/train.json) used.
    """
    if kind not in ORDERS:
        raise GemmpadError(f"unknown batch order {kind!r}; choose one of {', '.join(ORDERS)}")
    if kind == "epoch":
        return lambda epoch: np.random.default_rng([seed, 3, epoch]).permutation(n).astype(np.int32)
    rng, made = np.random.default_rng(seed), []

    def stream(epoch: int) -> np.ndarray:
        while len(made) <= epoch:
            made.append(rng.permutation(n).astype(np.int32))
        return made[epoch]

    return stream


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


@dataclass(frozen=True)
class Plan:
    """A fit()'s inputs checked and its per-epoch learning rates and orders settled, before any work."""

    x: np.ndarray
    y: np.ndarray  # int32
    weights: dict[str, np.ndarray]
    targets: np.ndarray | None
    lrs: list[float]
    batch_order: BatchOrder

    def order(self, epoch: int) -> np.ndarray:
        """The caller's batch_order(epoch), checked: n int32 row indices in 0..n-1 (a permutation,
        or rows repeated as a fine-tune's plan repeats the person's)."""
        n = len(self.x)
        order = np.asarray(self.batch_order(epoch))
        if order.shape != (n,) or not np.issubdtype(order.dtype, np.integer):
            raise InputShapeError(f"batch_order({epoch}) must return {n} integer row indices, got {order.dtype} {order.shape}")
        order = np.ascontiguousarray(order, dtype=np.int32)
        if order.min() < 0 or order.max() >= n:
            raise GemmpadError(f"batch_order({epoch}) holds a row index outside 0..{n - 1}")
        return order


def plan(x: Any, y: Any, weights: Any, *, epochs: int, batch_size: int, lr_schedule: LrSchedule, momentum: float,
         weight_decay: float, seed: int, batch_order: BatchOrder | None, targets: Any,
         precision: str = "fp32") -> Plan:
    """Everything a trainer checks and derives the same way (check_inputs, check_targets, lr_at,
    batch_orders) in one call."""
    x, yi, w = check_inputs(x, y, weights, epochs, batch_size, momentum, weight_decay, precision)
    return Plan(x, yi, w, check_targets(targets, len(x)), [lr_at(lr_schedule, e) for e in range(epochs)],
                batch_order if batch_order is not None else batch_orders(len(x), seed))


def check_loss(epoch: int, loss: float) -> None:
    """A NaN/Inf epoch loss: no later epoch can recover, so every trainer stops with this line."""
    if not math.isfinite(loss):
        raise GemmpadError(f"training diverged in epoch {epoch + 1} (loss {loss}); lower the learning rate")
