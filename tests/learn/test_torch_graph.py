"""A captured training step (gemmpad.learn.torch_graph) against the eager loop it replaces: the same
weights after the same batches, for the MLP (AdamW on a schedule towards a teacher, SGD on soft
targets) and the CNN teacher's training."""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.learn import distill, train_torch
from tests.conftest import rel_error
from tests.learn.test_train_native import random_data, random_targets, random_weights

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")]


def _fit_both(**kw: object) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[float], list[float]]:
    eager_losses: list[float] = []
    graph_losses: list[float] = []
    eager = train_torch.fit(**kw, device="cuda", step_losses=eager_losses)
    graph = train_torch.fit(**kw, device="cuda", use_graph=True, step_losses=graph_losses)
    return eager, graph, eager_losses, graph_losses


# Seeds that once failed a check below, kept as fixed cases beside a fresh random one. When the eager loop's AdamW
# was torch's plain one (bias correction on the host) and the captured one's capturable, the two drifted apart
# through the optimizer's own rounding: under 1817165195 W2 by 1.1e-4 (over the 1e-4 then asked; H200, 2026-12-01
# 11:41 UTC), under 764 by 7.9e-2 (the worst of 1,001 seeds 1.0e-1, as far as one epoch fewer). One AdamW for
# both since.
FIXED_SEEDS = [1817165195, 764]


@pytest.mark.parametrize("seed", FIXED_SEEDS + [None], ids=lambda s: f"seed{s}" if s else "random")
def test_adamw_on_a_schedule_towards_a_teacher_replays_as_it_runs_eagerly(seed: int | None,
                                                                          rng: np.random.Generator) -> None:
    """70 rows in batches of 16 (four captured, one short and eager, an epoch), three epochs of a cosine
    rate: the shipped model's step. On a GPU AdamW steps on the device captured or not (capturable), so the
    replayed run is the eager one bit for bit, every weight and every step's loss; two epochs against three
    land far apart."""
    rng = np.random.default_rng(seed) if seed else rng
    w0 = random_weights(rng)
    x, y = random_data(rng, 70)
    teacher = rng.standard_normal((70, 10)).astype(np.float32) * 3
    orders = [rng.permutation(70).astype(np.int32) for _ in range(3)]
    kw = dict(x=x, y=y, weights=w0, epochs=3, batch_size=16, lr_schedule=[0.01, 0.005, 0.001], weight_decay=1e-2,
              batch_order=lambda e: orders[e], optimizer="adamw", teacher=teacher)
    eager, graph, le, lg = _fit_both(**kw)
    for k in eager:
        np.testing.assert_array_equal(graph[k], eager[k], err_msg=k)
    assert len(le) == len(lg) == 15 and le == lg
    fewer = train_torch.fit(**{**kw, "epochs": 2, "lr_schedule": [0.01, 0.005]}, device="cuda", use_graph=True)
    assert rel_error(fewer["W1"], eager["W1"].astype(np.float64)) > 1e-2  # 2.0e-2 to 8.2e-2 over 1,001 seeds


def test_sgd_on_soft_targets_replays_as_it_runs_eagerly(rng: np.random.Generator) -> None:
    """The same for SGD with momentum on soft targets: bit for bit (1,001 seeds on the H200, 2026-12-01)."""
    w0 = random_weights(rng)
    x, y = random_data(rng, 64)
    q = random_targets(rng, 64)
    kw = dict(x=x, y=y, weights=w0, epochs=2, batch_size=16, lr_schedule=0.02, momentum=0.9, targets=q, seed=5)
    eager, graph, le, lg = _fit_both(**kw)
    for k in eager:
        np.testing.assert_array_equal(graph[k], eager[k], err_msg=k)
    assert le == lg


def test_the_teacher_learns_on_the_gpu_through_its_captured_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Digits told apart by which of ten bands of rows is lit: a CNN reads them after two epochs. 600
    rows in batches of 256: two captured steps and one short eager one an epoch."""
    monkeypatch.setattr(distill, "EPOCHS", 2)
    rng = np.random.default_rng(1)
    y = rng.integers(0, 10, 600)
    x = rng.normal(0, 0.3, (600, 28, 28)).astype(np.float32)
    for i, d in enumerate(y):
        x[i, 2 + 2 * d : 4 + 2 * d, 4:24] += 2.0
    logits, val = distill.teacher_logits(x.reshape(600, 784), y, x[:100].reshape(100, 784), y[:100], 0, "cuda",
                                         lambda s: None, members=1)
    assert logits.shape == (600, 10) and np.isfinite(logits).all()
    np.testing.assert_allclose(np.exp(logits).sum(axis=1), 1.0, rtol=1e-4)
    assert (logits.argmax(1) == y).mean() > 0.9 and val > 0.9
