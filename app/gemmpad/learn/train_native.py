"""Training the MLP on our own CUDA kernels (`gemmpad train --trainer native`).

Why a native engine: one SGD step of a 784-100-100-10 network is ~0.1 GFLOP,
far too little work to hide a framework's per-op launches and allocations.
Here a step is three fused kernels (native/cuda/train/), the dataset and every
buffer live on the GPU from the start, and a whole epoch is one CUDA-graph
launch. `gemmpad bench train` (gemmpad.bench.train) measures that against
PyTorch eager and PyTorch with CUDA graphs, and checks that both engines learn
the same model.

The batch order is shared with the torch engine through `batch_orders`, so a
run with the same seed and initial weights follows the same trajectory up to
float rounding (the parity check of `gemmpad bench train`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from gemmpad.runtime import native
from gemmpad.errors import CudaUnavailable, DataError, GemmpadError, InputShapeError, InputTypeError
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


def _check_inputs(
    x: Any, y: Any, weights: Any, epochs: int, batch_size: int, momentum: float, weight_decay: float, precision: str
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Every mistake a caller can make, reported before the GPU is touched."""
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


def cuda_trainer_class() -> Any:
    module = native.cuda()  # CudaUnavailable with the reason when there is no GPU
    cls = getattr(module, "Trainer", None)
    if cls is None:
        raise CudaUnavailable("this build of gemmpad._cuda has no native trainer (rebuild the extension)")
    return cls


EpochCallback = Callable[[int, float, float, dict[str, np.ndarray]], None]


def _epoch_order(batch_order: Callable[[int], np.ndarray], epoch: int, n: int) -> np.ndarray:
    order = np.asarray(batch_order(epoch))
    if order.shape != (n,) or not np.issubdtype(order.dtype, np.integer):
        raise InputShapeError(f"batch_order({epoch}) must return {n} integer row indices, got {order.dtype} {order.shape}")
    return np.ascontiguousarray(order, dtype=np.int32)  # the trainer checks the range


def fit(
    x: np.ndarray,
    y: np.ndarray,
    weights: dict[str, np.ndarray],
    *,
    epochs: int,
    batch_size: int = 64,
    lr_schedule: LrSchedule = 0.05,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    decay_biases: bool = True,
    seed: int = 0,
    batch_order: Callable[[int], np.ndarray] | None = None,
    precision: str = "fp32",
    callback: EpochCallback | None = None,
    use_graph: bool = True,
    targets: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Train the 784-100-100-10 MLP on the GPU with gemmpad's own kernels; return the weights.

    x: float32 [N, 784] (preprocessed images, the network's input as is);
    y: integer labels [N] in 0..9; weights: initial {"W1" [784,100], "b1" [100],
    "W2" [100,100], "b2" [100], "W3" [100,10], "b3" [10]} float32, the layout of
    gemmpad.runtime.model (x @ W + b). Not modified.
    epochs, batch_size: epoch e visits the rows batch_order(e) (an array of N
    row indices, usually a permutation) in consecutive slices of batch_size;
    the last slice may be shorter. Without batch_order the orders are
    batch_orders(N, seed). Give the torch engine the same orders for parity.
    lr_schedule: a constant, a per-epoch list, or a function epoch (0-based) -> lr.
    momentum, weight_decay: torch.optim.SGD semantics (dampening 0, no
    Nesterov: g += decay * p; v = momentum * v + g; p -= lr * v). The decay
    applies to every parameter, biases included, like
    torch.optim.SGD(model.parameters(), weight_decay=...) and gemmpad.learn.train's
    torch engine; decay_biases=False exempts b1..b3 (a no-decay group).
    Loss: mean softmax cross-entropy over the batch, against the labels, or
    against `targets` (float32 [N, 10], rows summing to 1) when given: soft
    targets, e.g. a teacher model's probabilities; y then only scores accuracy.
    precision: "fp32", or "mixed" (layer-1 matmuls on bf16 tensor cores, fp32
    accumulation, fp32 master weights and everything else in fp32).
    callback(epoch, loss, accuracy, weights) runs after every epoch (epoch
    0-based; loss and accuracy over that epoch's training samples, each taken
    with the weights it was trained with; weights a host copy as returned).
    use_graph=False launches the kernels one by one instead of replaying a
    CUDA graph (same results bit for bit; for measuring launch overhead).

    Returns the trained weights as float32 host arrays (same keys and shapes).
    Raises InputTypeError / InputShapeError / DataError for bad inputs (before
    touching the GPU), CudaUnavailable without a usable GPU, GemmpadError if
    the loss becomes NaN/Inf (diverged: lower the learning rate).
    """
    x, y, w = _check_inputs(x, y, weights, epochs, batch_size, momentum, weight_decay, precision)
    soft = check_targets(targets, len(x))
    lrs = [lr_at(lr_schedule, e) for e in range(epochs)]
    if batch_order is None:
        orders = batch_orders(len(x), seed)
        batch_order = lambda epoch: next(orders)  # noqa: E731  (called once per epoch, in order)
    trainer = cuda_trainer_class()(x, y, w, int(batch_size), precision == "mixed", soft)
    for epoch in range(epochs):
        order = _epoch_order(batch_order, epoch, len(x))
        result = trainer.epoch(order, lrs[epoch], float(momentum), float(weight_decay), use_graph, decay_biases)
        if not math.isfinite(result["loss"]):
            raise GemmpadError(f"training diverged in epoch {epoch + 1} (loss {result['loss']}); lower the learning rate")
        if callback is not None:
            callback(epoch, float(result["loss"]), float(result["accuracy"]), _host_weights(trainer))
    return _host_weights(trainer)


def _host_weights(trainer: Any) -> dict[str, np.ndarray]:
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in trainer.weights().items()}


__all__ = ["PRECISIONS", "batch_orders", "fit", "lr_at"]
