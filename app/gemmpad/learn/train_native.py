"""Training the MLP on our own CUDA kernels (`gemmpad train --trainer native`).

Why a native engine: one SGD step of a 784-100-100-10 network is ~0.1 GFLOP,
far too little work to hide a framework's per-op launches and allocations.
Here a step is three fused kernels (native/cuda/train/), the dataset and every
buffer live on the GPU from the start, and a whole epoch is one launch: in fp32
a persistent kernel that runs every step between grid barriers, in mixed
precision a CUDA graph of the steps' launches. `gemmpad bench train`
(gemmpad.bench.train) measures that against
PyTorch eager and PyTorch with CUDA graphs, and checks that both engines learn
the same model.

The batch order is every trainer's `trainer.batch_orders`, so a run with the same seed and
initial weights follows the torch trainer's trajectory up to float rounding (the parity
check of `gemmpad bench train`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gemmpad.errors import CudaUnavailable, GemmpadError
from gemmpad.learn.trainer import BatchOrder, EpochCallback, LrSchedule, check_loss, plan
from gemmpad.runtime import native


ENGINES = ("persistent", "graph", "launches")


def persistent_runs(trainer: Any) -> bool:
    """Whether the persistent epoch runs for this trainer: fp32 on a GPU with the SMs and shared memory it
    needs (persistent_available), and batches up to persistent_max_batch."""
    return bool(trainer.persistent_available) and trainer.batch <= trainer.persistent_max_batch


def default_engine(trainer: Any) -> str:
    """The persistent epoch where it runs, else the graph: one launch an epoch instead of three a step
    (the epoch times of both: native/cuda/train/README.md)."""
    return "persistent" if persistent_runs(trainer) else "graph"


def cuda_trainer_class() -> Any:
    module = native.cuda()  # CudaUnavailable with the reason when there is no GPU
    cls = getattr(module, "Trainer", None)
    if cls is None:
        raise CudaUnavailable("this build of gemmpad._cuda has no native trainer (rebuild the extension)")
    return cls


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
    batch_order: BatchOrder | None = None,
    precision: str = "fp32",
    callback: EpochCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    engine: str | None = None,
    targets: np.ndarray | None = None,
    step_losses: list[float] | None = None,
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
    should_stop() is polled before each epoch (an epoch is one launch).
    engine: None for default_engine(); "persistent" runs each epoch as one
    kernel (fp32, batches up to the trainer's persistent_max_batch, GPUs of
    120+ SMs); "graph"
    replays the steps' launches from a CUDA graph (fp32 results equal to the
    persistent engine's up to float rounding: layer 1's sums are split
    differently); "launches" launches them one by one (the graph's results bit
    for bit; for measuring launch overhead).
    step_losses, when given, gets each step's mean batch loss appended (the
    per-step curve of `gemmpad bench train`'s parity run).

    Returns the trained weights as float32 host arrays (same keys and shapes).
    Raises InputTypeError / InputShapeError / DataError for bad inputs (before
    touching the GPU), CudaUnavailable without a usable GPU, GemmpadError if
    the loss becomes NaN/Inf (diverged: lower the learning rate).
    """
    if engine is not None and engine not in ENGINES:
        raise GemmpadError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "persistent" and precision != "fp32":
        raise GemmpadError("the persistent engine trains fp32 only: use engine='graph' for mixed precision")
    p = plan(x, y, weights, epochs=epochs, batch_size=batch_size, lr_schedule=lr_schedule, momentum=momentum,
             weight_decay=weight_decay, seed=seed, batch_order=batch_order, targets=targets, precision=precision)
    trainer = cuda_trainer_class()(p.x, p.y, p.weights, int(batch_size), precision == "mixed", p.targets)
    engine = default_engine(trainer) if engine is None else engine
    if engine == "persistent" and trainer.batch > trainer.persistent_max_batch:
        raise GemmpadError(f"the persistent engine takes batches of at most {trainer.persistent_max_batch} rows: "
                           "use engine='graph'")
    if engine == "persistent" and not trainer.persistent_available:
        raise GemmpadError("this GPU cannot run the persistent engine (native/cuda/train/README.md says what it "
                           "needs): use engine='graph'")
    for epoch in range(epochs):
        if should_stop is not None and should_stop():
            break
        result = trainer.epoch(p.order(epoch), p.lrs[epoch], float(momentum), float(weight_decay), engine,
                               decay_biases)
        check_loss(epoch, result["loss"])
        if step_losses is not None:
            losses = trainer.samples()[0]
            step_losses += [float(losses[o : o + batch_size].mean()) for o in range(0, len(p.x), batch_size)]
        if callback is not None:
            callback(epoch, float(result["loss"]), float(result["accuracy"]), _host_weights(trainer))
    return _host_weights(trainer)


def _host_weights(trainer: Any) -> dict[str, np.ndarray]:
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in trainer.weights().items()}


__all__ = ["ENGINES", "default_engine", "fit", "persistent_runs"]
