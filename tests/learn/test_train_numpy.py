"""gemmpad.learn.train_numpy: the CPU trainer of fine-tuning, against torch autograd + torch.optim.SGD
(float64, CPU) and, on a GPU, against the native CUDA trainer on the same data and orders."""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.learn import train_numpy
from gemmpad.errors import GemmpadError
from tests.conftest import rel_error
from tests.learn.test_train_native import random_data, random_targets, random_weights, sgd_reference, torch_reference

pytest.importorskip("torch")


def test_gradients_match_torch_autograd(rng: np.random.Generator) -> None:
    w = random_weights(rng)
    for n in (1, 13, 37):
        x, y = random_data(rng, n)
        loss, correct, g = train_numpy.gradients(w, x, y.astype(np.int64))
        ref_loss, ref_g = torch_reference(w, x, y)
        assert loss / n == pytest.approx(ref_loss, rel=1e-5)
        for k in g:
            assert rel_error(g[k], ref_g[k]) < 1e-4, k


def test_soft_target_gradients_match_torch_autograd(rng: np.random.Generator) -> None:
    """Distillation's loss: cross-entropy against a teacher's probabilities (gemmpad.learn.finetune's replay)."""
    w = random_weights(rng)
    x, y = random_data(rng, 37)
    q = random_targets(rng, 37)
    loss, correct, g = train_numpy.gradients(w, x, y.astype(np.int64), q)
    ref_loss, ref_g = torch_reference(w, x, y, q)
    assert loss / 37 == pytest.approx(ref_loss, rel=1e-5)
    for k in g:
        assert rel_error(g[k], ref_g[k]) < 1e-4, k
    onehot = train_numpy.gradients(w, x, y.astype(np.int64), np.eye(10, dtype=np.float32)[y])
    assert onehot[0] == pytest.approx(train_numpy.gradients(w, x, y.astype(np.int64))[0], rel=1e-6)


@pytest.mark.parametrize("decay_biases", [True, False])
def test_fit_follows_torch_sgd_over_the_same_batches(rng: np.random.Generator, decay_biases: bool) -> None:
    """Momentum, weight decay (with and without the biases), per-epoch lr, a short last batch.

    At lr 0.05 a ReLU that flips between float32 and float64 can grow into a difference of
    1e-4 over 15 steps (one draw in a few dozen); at these rates, over 30 draws: at most
    1.4e-7, while decaying the biases too or momentum 0.8 instead of 0.9 lands >= 3.5e-3 away."""
    w0 = random_weights(rng)
    x, y = random_data(rng, 70)
    orders = [rng.permutation(70).astype(np.int32) for _ in range(3)]
    lrs = [0.01, 0.005, 0.002]
    got = train_numpy.fit(x, y, w0, epochs=3, batch_size=16, lr_schedule=lrs, momentum=0.9, weight_decay=1e-2,
                          decay_biases=decay_biases, batch_order=lambda e: orders[e])
    ref, _ = sgd_reference(w0, x, y, orders, 16, lrs, 0.9, 1e-2, decay_biases)
    for k in ref:
        assert rel_error(got[k], ref[k]) < 1e-4, k
    assert not any(np.shares_memory(got[k], w0[k]) for k in w0), "the initial weights must not be modified"


def test_orders_may_repeat_rows_and_stop_early(rng: np.random.Generator) -> None:
    """Fine-tuning visits the person's few rows many times per epoch; a cancel stops within a step."""
    w0 = random_weights(rng)
    x, y = random_data(rng, 40)
    order = np.concatenate([np.zeros(20, np.int32), np.arange(20, 40, dtype=np.int32)])
    got = train_numpy.fit(x, y, w0, epochs=1, batch_size=10, lr_schedule=0.01, batch_order=lambda e: order)
    ref, _ = sgd_reference(w0, x, y, [order], 10, [0.01], 0.9, 0.0)
    assert rel_error(got["W1"], ref["W1"]) < 1e-4
    calls = []
    stopped = train_numpy.fit(x, y, w0, epochs=5, batch_size=10, lr_schedule=0.1,
                              should_stop=lambda: calls.append(1) or len(calls) > 2)
    assert len(calls) == 3 and not np.array_equal(stopped["W1"], w0["W1"])
    with pytest.raises(GemmpadError, match="outside"):
        train_numpy.fit(x, y, w0, epochs=1, batch_size=10, batch_order=lambda e: np.full(40, 40, np.int32))


@pytest.mark.gpu
def test_cpu_and_cuda_fine_tunes_end_close(rng: np.random.Generator) -> None:
    """The parity of the issue: the same fine-tune (gemmpad.learn.finetune.tune) on both engines."""
    from gemmpad.learn import finetune
    from gemmpad.learn.rehearsal_sets import Arrays

    w0 = random_weights(rng)
    ux, uy = random_data(rng, 40)
    rx, ry = random_data(rng, 2000)
    settings = finetune.Settings(steps=120, seed=int(rng.integers(1000)))
    replay = finetune.prepare(w0, Arrays(rx, ry.astype(np.int64)))  # distilled: soft targets on both engines
    cpu, name_cpu, _ = finetune.tune(w0, Arrays(ux, uy.astype(np.int64)), replay, settings, "numpy")
    gpu, name_gpu, _ = finetune.tune(w0, Arrays(ux, uy.astype(np.int64)), replay, settings, "native")
    assert (name_cpu, name_gpu) == ("numpy", "native")
    for k in cpu:
        assert rel_error(gpu[k], cpu[k].astype(np.float64)) < 1e-3, k
