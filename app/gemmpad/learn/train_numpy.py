"""SGD with momentum for the 784-100-100-10 MLP in NumPy: the trainer that runs anywhere.

`gemmpad.learn.finetune` needs a trainer in the window, where torch is not loaded and a GPU
may be missing. This one takes the arguments of gemmpad.learn.trainer.Trainer.fit and
computes the same thing (mean softmax cross-entropy, torch.optim.SGD's update:
g += decay * p; v = momentum * v + g; p -= lr * v), so a fine-tune gives the same
model on either engine up to float rounding (tests/learn/test_train_numpy.py checks it
against torch, and on a GPU against the native trainer).

A step of batch 128 is ~30 MFLOP: a fraction of a millisecond of BLAS, so a few
hundred steps take well under a second. BLAS runs on one thread here: products this
small gain little from a second one, and where other programs keep the cores busy a
multi-threaded call waits for its helper thread to be scheduled (on the shared 2-core
development VM, 300 steps took 3.7-10 s with OpenBLAS's 2 threads and 0.7 s with one,
2026-11-26); one thread also leaves the window a core to draw on.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from gemmpad.learn.trainer import BatchOrder, EpochCallback, LrSchedule, check_loss, plan

NAMES = ("W1", "b1", "W2", "b2", "W3", "b3")


def gradients(w: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray,
              targets: np.ndarray | None = None) -> tuple[float, int, dict[str, np.ndarray]]:
    """(summed loss, correct count, gradients of the mean cross-entropy) for one batch x [B, 784], y [B],
    against the labels y or, when given, soft targets [B, 10] (y then only counts the correct)."""
    z1 = x @ w["W1"] + w["b1"]
    h1 = np.maximum(z1, 0.0)
    z2 = h1 @ w["W2"] + w["b2"]
    h2 = np.maximum(z2, 0.0)
    logits = h2 @ w["W3"] + w["b3"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    rows = np.arange(len(y))
    correct = int(np.sum(logits.argmax(axis=1) == y))
    d3 = e / total
    if targets is None:
        loss = float(np.sum(np.log(total[:, 0]) - shifted[rows, y]))
        d3[rows, y] -= 1.0
    else:
        loss = float(np.sum(targets * (np.log(total) - shifted)))
        d3 -= targets
    d3 *= np.float32(1.0 / len(y))
    d2 = (d3 @ w["W3"].T) * (z2 > 0)
    d1 = (d2 @ w["W2"].T) * (z1 > 0)
    g = {"W3": h2.T @ d3, "b3": d3.sum(axis=0), "W2": h1.T @ d2, "b2": d2.sum(axis=0),
         "W1": x.T @ d1, "b1": d1.sum(axis=0)}
    return loss, correct, g


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
    callback: EpochCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    targets: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Train on the CPU; the arguments and result are those of gemmpad.learn.train_native.fit
    (fp32 only; soft targets too), plus should_stop, polled between steps (a cancelled
    fine-tune stops within a step; the weights reached so far are returned)."""
    with threadpool_limits(1, user_api="blas"):
        return _fit(x, y, weights, epochs, batch_size, lr_schedule, momentum, weight_decay, decay_biases, seed,
                    batch_order, callback, should_stop, targets)


def _fit(x: np.ndarray, y: np.ndarray, weights: dict[str, np.ndarray], epochs: int, batch_size: int,
         lr_schedule: LrSchedule, momentum: float, weight_decay: float, decay_biases: bool, seed: int,
         batch_order: BatchOrder | None, callback: EpochCallback | None,
         should_stop: Callable[[], bool] | None, targets: np.ndarray | None) -> dict[str, np.ndarray]:
    p = plan(x, y, weights, epochs=epochs, batch_size=batch_size, lr_schedule=lr_schedule, momentum=momentum,
             weight_decay=weight_decay, seed=seed, batch_order=batch_order, targets=targets)
    x, soft, y64 = p.x, p.targets, p.y.astype(np.int64)
    w = {k: v.copy() for k, v in p.weights.items()}
    v = {k: np.zeros_like(p) for k, p in w.items()}
    decay = {k: weight_decay if (decay_biases or k[0] == "W") else 0.0 for k in NAMES}
    for epoch in range(epochs):
        order = p.order(epoch)
        loss_sum, correct = 0.0, 0
        lr = np.float32(p.lrs[epoch])
        for start in range(0, len(order), batch_size):
            if should_stop is not None and should_stop():
                return w
            idx = order[start : start + batch_size]
            # a diverging run overflows float32 here: the loss check below says so in one line, where
            # NumPy's RuntimeWarnings would print lines of their own before it (--lr 10)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                loss, right, g = gradients(w, x[idx], y64[idx], None if soft is None else soft[idx])
                loss_sum += loss
                correct += right
                for k in NAMES:
                    if decay[k]:
                        g[k] += np.float32(decay[k]) * w[k]
                    v[k] *= np.float32(momentum)
                    v[k] += g[k]
                    w[k] -= lr * v[k]
            if not math.isfinite(loss_sum):  # no later step can recover: stop now, not at the epoch's end
                break
        mean_loss = loss_sum / len(order)
        check_loss(epoch, mean_loss)
        if callback is not None:
            callback(epoch, mean_loss, correct / len(order), {k: a.copy() for k, a in w.items()})
    return w
