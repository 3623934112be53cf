"""The one trainer interface (gemmpad.learn.trainer, gemmpad.learn.trainers): the torch trainer
against torch.optim.SGD in float64 and against the NumPy trainer, picking by name, and the one
initialisation the shipped model and the committed bench figures were made with."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gemmpad.errors import CudaUnavailable, GemmpadError
from gemmpad.learn import finetune, train_torch, trainer, trainers
from gemmpad.learn.rehearsal_sets import Arrays
from gemmpad.runtime import native
from tests.conftest import rel_error
from tests.learn.test_train_native import random_data, random_targets, random_weights, sgd_reference

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("decay_biases", [True, False])
def test_torch_trainer_follows_torch_sgd_over_the_same_batches(rng: np.random.Generator, decay_biases: bool) -> None:
    """The tolerance of test_train_numpy's twin: at these rates, float32 against float64 stays
    near 1e-7 while decaying the biases or not lands >= 3.5e-3 away."""
    w0 = random_weights(rng)
    x, y = random_data(rng, 70)
    orders = [rng.permutation(70).astype(np.int32) for _ in range(3)]
    lrs = [0.01, 0.005, 0.002]
    stats: list = []
    got = train_torch.fit(x, y, w0, epochs=3, batch_size=16, lr_schedule=lrs, momentum=0.9, weight_decay=1e-2,
                          decay_biases=decay_biases, batch_order=lambda e: orders[e],
                          callback=lambda *a: stats.append(a))
    ref, losses = sgd_reference(w0, x, y, orders, 16, lrs, 0.9, 1e-2, decay_biases)
    for k in ref:
        assert rel_error(got[k], ref[k]) < 1e-4, k
    sizes = np.array([min(16, 70 - o) for o in range(0, 70, 16)])
    assert stats[0][1] == pytest.approx(float(losses[:5] @ sizes) / 70, rel=1e-4)  # per-sample mean, like the others
    assert [s[0] for s in stats] == [0, 1, 2] and all(np.array_equal(stats[2][3][k], got[k]) for k in got)
    assert not any(np.shares_memory(got[k], w0[k]) for k in w0)


def test_torch_and_numpy_trainers_agree_on_soft_targets(rng: np.random.Generator) -> None:
    """A fine-tune's loss (soft targets, rows repeated in an order) gives the same weights on both."""
    w0 = random_weights(rng)
    x, y = random_data(rng, 60)
    q = random_targets(rng, 60)
    kw = dict(epochs=2, batch_size=12, lr_schedule=[0.01, 0.004], momentum=0.9, targets=q,
              batch_order=lambda e: np.concatenate([np.zeros(20, np.int32), np.arange(20, 60, dtype=np.int32)]))
    a = trainers.pick("numpy").fit(x, y, w0, **kw)
    b = trainers.pick("torch").fit(x, y, w0, **kw)
    for k in a:
        assert rel_error(b[k], a[k].astype(np.float64)) < 1e-4, k


def test_a_fine_tune_in_torch_is_the_numpy_fine_tune(rng: np.random.Generator) -> None:
    """`gemmpad bench learn` times "the same fine-tune in torch": finetune.tune given the torch trainer."""
    w0 = random_weights(rng)
    ux, uy = random_data(rng, 30)
    rx, ry = random_data(rng, 500)
    settings = finetune.Settings(steps=30, seed=3)
    replay = finetune.prepare(w0, Arrays(rx, ry.astype(np.int64)))
    cpu, name_cpu, steps = finetune.tune(w0, Arrays(ux, uy.astype(np.int64)), replay, settings, "numpy")
    tt, name_tt, steps_tt = finetune.tune(w0, Arrays(ux, uy.astype(np.int64)), replay, settings, trainers.pick("torch"))
    assert (name_cpu, name_tt, steps_tt) == ("numpy", "torch", steps)
    for k in cpu:
        assert rel_error(tt[k], cpu[k].astype(np.float64)) < 1e-4, k


def test_the_torch_trainer_stops_reports_and_refuses(rng: np.random.Generator) -> None:
    w0 = random_weights(rng)
    x, y = random_data(rng, 40)
    calls: list[int] = []
    stopped = train_torch.fit(x, y, w0, epochs=5, batch_size=10, lr_schedule=0.1,
                              should_stop=lambda: calls.append(1) or len(calls) > 2)
    assert len(calls) == 3 and not np.array_equal(stopped["W1"], w0["W1"])
    with pytest.raises(GemmpadError, match="diverged in epoch 1"):
        train_torch.fit(x * 1e18, y, random_weights(rng, scale=30.0), epochs=2, batch_size=10, lr_schedule=1e6)
    with pytest.raises(GemmpadError, match="use_graph captures an fp32 step on a CUDA device only"):
        train_torch.fit(x, y, w0, epochs=1, use_graph=True, device="cpu")
    with pytest.raises(GemmpadError, match="use_graph with SGD needs one learning rate"):  # before the device is asked
        train_torch.fit(x, y, w0, epochs=2, lr_schedule=[0.1, 0.05], use_graph=True, device="cuda")
    if not torch.cuda.is_available():
        with pytest.raises(CudaUnavailable, match="torch sees no CUDA device"):
            train_torch.fit(x, y, w0, epochs=1, device="cuda")
    with pytest.raises(GemmpadError, match="optimizer"):
        train_torch.fit(x, y, w0, epochs=1, optimizer="adam")
    with pytest.raises(GemmpadError, match="teacher logits"):
        train_torch.fit(x, y, w0, epochs=1, teacher=np.zeros((3, 10), np.float32))


def test_trainers_are_picked_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    assert trainers.pick("numpy").name == "numpy" and trainers.pick("torch", device="cpu").name == "torch"
    with pytest.raises(GemmpadError, match="unknown trainer 'cuda'"):
        trainers.pick("cuda")
    monkeypatch.setattr(native, "cuda_status", lambda: native.CudaStatus(available=False, reason="no GPU here", built=False))
    assert trainers.pick("auto").name == "numpy"
    with pytest.raises(CudaUnavailable, match="--trainer native trains on the GPU: no GPU here"):
        trainers.pick("native")


def test_the_initialisations_are_those_of_the_shipped_model_and_the_committed_bench() -> None:
    """"he" is the card's "He-uniform, zero biases" (models/mnist-mlp.json); "torch" made the parity
    figures of assets/benchmarks/*/train.json. Pinned: changing either changes what they record."""
    he = trainer.init_weights(4)
    rng = np.random.default_rng([4, 2])
    expected = rng.uniform(-math.sqrt(6 / 784), math.sqrt(6 / 784), (784, 100)).astype(np.float32)
    assert np.array_equal(he["W1"], expected) and not he["b3"].any()
    rng = np.random.default_rng(4)
    linear = trainer.init_weights(4, "torch")
    assert np.array_equal(linear["W1"], rng.uniform(-1 / 28, 1 / 28, (784, 100)).astype(np.float32))
    assert np.array_equal(linear["b1"], rng.uniform(-1 / 28, 1 / 28, 100).astype(np.float32))
    assert {k: v.shape for k, v in he.items()} == {k: v.shape for k, v in linear.items()}
    with pytest.raises(GemmpadError, match="unknown initialisation"):
        trainer.init_weights(4, "xavier")
    with pytest.raises(GemmpadError, match="unknown batch order"):
        trainer.batch_orders(10, 4, "shuffled")
