"""Function matching (gemmpad.learn.matching): the views are the digit, moved a little and never shifted;
blank stays blank; a mixed row takes at most half its neighbour; the trainer learns the teacher's reading
of exactly the views it trains on, reproducibly; a captured step draws fresh views on every replay."""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.errors import GemmpadError
from gemmpad.learn import distill, matching, train_torch
from tests.learn.test_train_native import random_weights

torch = pytest.importorskip("torch")

BACKGROUND = -0.4  # a normalised blank pixel, as (0 - mean) / std is in training


def digits(n: int) -> np.ndarray:
    """n normalised 28x28 rows holding a bar (a "1") of random place and width inside the field."""
    rng = np.random.default_rng(7)
    x = np.full((n, 28, 28), BACKGROUND, np.float32)
    for img in x:
        c, w = rng.integers(10, 17), rng.integers(2, 5)
        img[5:23, c : c + w] = 2.5
    return x.reshape(n, 784)


def views(x: np.ndarray, mix: float = 0.0, seed: int = 0) -> np.ndarray:
    torch.manual_seed(seed)
    return matching.Views(BACKGROUND, "cpu", mix)(torch.from_numpy(x)).numpy()


def test_a_view_moves_the_ink_a_little_and_leaves_blank_paper_blank() -> None:
    x = digits(2000)
    v = views(x)
    ink, ink_v = (x - BACKGROUND).reshape(-1, 28, 28), (v - BACKGROUND).reshape(-1, 28, 28)
    unchanged = np.all(np.abs(v - x) < 1e-5, axis=1)
    assert 0.15 < unchanged.mean() < 0.25  # CLEAN of the rows as they are
    cols = np.arange(28)
    centre = (ink.sum(1) * cols).sum(1) / ink.sum((1, 2))
    centre_v = (ink_v.sum(1) * cols).sum(1) / ink_v.sum((1, 2))
    shift = np.percentile(np.abs(centre_v - centre), [50, 99])
    assert shift[0] < 0.5 and shift[1] < 2  # px: no shift of its own (preprocess centred the digit), the field's
    stretch = np.percentile(np.abs(ink_v.sum((1, 2)) / ink.sum((1, 2)) - 1), [50, 99])
    assert stretch[0] < 0.1 and stretch[1] < 0.5  # scale +-6 % and the field's local stretch of a thin bar
    assert np.abs(v - x)[~unchanged].mean() > 0.05  # the others are new rows
    blank = np.full((64, 784), BACKGROUND, np.float32)
    np.testing.assert_allclose(views(blank, mix=1.0), BACKGROUND, atol=1e-6)


def test_a_mixed_row_takes_at_most_half_of_its_neighbour(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the field, rotation and scale at zero a view is the row itself; mixed, row i of constant
    value i becomes (1 - w) i + w (i - 1) = i - w with w in [0, 0.5]."""
    for name in ("ELASTIC_ALPHA", "ROTATION_DEG", "SCALE", "CLEAN"):
        monkeypatch.setattr(matching, name, 0.0)
    x = np.repeat(np.arange(1, 201, dtype=np.float32)[:, None], 784, axis=1)
    np.testing.assert_allclose(views(x), x, rtol=1e-6)
    w = (x[:, 0] - views(x, mix=1.0)[:, 0])[1:]  # row 0's neighbour is the last row
    assert np.all(w >= -1e-4) and np.all(w <= matching.MIX_WEIGHT + 1e-4) and w.std() > 0.1
    w_half = (x[:, 0] - views(x, mix=0.5)[:, 0])[1:]
    assert 0.3 < np.mean(np.abs(w_half) > 1e-3) < 0.7  # about half the rows mixed
    with pytest.raises(ValueError, match="share between 0 and 1"):
        matching.Views(BACKGROUND, "cpu", 1.5)


def test_the_loss_is_the_teacher_reading_alone() -> None:
    logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]])
    team = matching.Matching(None, None)  # type: ignore[arg-type]  # the loss needs neither
    assert float(team.loss(logits, torch.tensor([1, 1]), torch.log_softmax(logits, 1))) == pytest.approx(0, abs=1e-6)
    other = torch.tensor([[0.0, 3.0, 0.0], [0.0, 3.0, 0.0]])
    assert float(team.loss(logits, torch.tensor([0, 2]), other)) > 0.5  # the labels agree with the student, not the teacher
    assert matching.describe_loss() == "KL(teacher || MLP) at temperature 1 (scaled by T^2)"


class Spy(distill.Team):
    """A one-CNN team that keeps every batch it was asked to read."""

    def __init__(self) -> None:
        torch.manual_seed(1)
        super().__init__([distill._network()], "cpu")
        self.seen: list[np.ndarray] = []

    def read(self, xb):  # type: ignore[no-untyped-def]
        self.seen.append(xb.detach().numpy().copy())
        return super().read(xb)


def test_the_trainer_learns_the_teacher_reading_of_the_views_it_trains_on(rng: np.random.Generator) -> None:
    x, y = digits(96), rng.integers(0, 10, 96)
    w0 = random_weights(rng)

    def fit(spy: Spy, epochs: int = 2) -> dict[str, np.ndarray]:
        return train_torch.fit(x, y, w0, epochs=epochs, batch_size=32, lr_schedule=0.01, optimizer="adamw", seed=3,
                               match=matching.Matching(spy, matching.Views(BACKGROUND, "cpu", 0.5)))

    spy, again = Spy(), Spy()
    w = fit(spy)
    assert len(spy.seen) == 6 and all(s.shape == (32, 784) for s in spy.seen)
    assert not any(np.allclose(s, x[: len(s)]) for s in spy.seen)  # views, not the rows
    assert not np.allclose(spy.seen[0], spy.seen[3])  # fresh ones every epoch
    w_again = fit(again)  # the same seed: the same views, the same weights
    for k in w:
        np.testing.assert_array_equal(w[k], w_again[k])
        assert not np.array_equal(w[k], w0[k])
    with pytest.raises(GemmpadError, match="not both"):
        train_torch.fit(x, y, w0, epochs=1, batch_size=32, optimizer="adamw", teacher=np.zeros((96, 10), np.float32),
                        match=matching.Matching(spy, matching.Views(BACKGROUND, "cpu")))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
def test_a_captured_step_draws_fresh_views_on_every_replay() -> None:
    """gemmpad train captures the step (gemmpad.learn.torch_graph): its random numbers must advance
    with each replay, or every epoch would train on one frozen set of views."""
    views = matching.Views(BACKGROUND, "cuda", 0.5)
    x = torch.from_numpy(digits(256)).cuda()
    views(x)  # warm-up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = views(x)
    seen = []
    for _ in range(3):
        graph.replay()
        seen.append(out.cpu().numpy().copy())
    assert not np.allclose(seen[0], seen[1]) and not np.allclose(seen[1], seen[2])
    assert np.isfinite(np.stack(seen)).all()


# Seeds that once failed the check below, kept as fixed cases beside a fresh random one. Under 2198472894 the
# captured step's W2 differed from the eager one's by 1.03e-4 of its scale (H200, 2026-12-01 07:01 UTC), under 6
# and 9 by up to 2.76e-3 (09:38 UTC). Not the bf16 teacher, as first thought: the eager loop's AdamW was torch's
# plain one, the captured one's capturable; with one AdamW for both the runs agree bit for bit (11:55 UTC).
FIXED_SEEDS = [2198472894, 6, 9]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
@pytest.mark.parametrize("seed", FIXED_SEEDS + [None], ids=lambda s: f"seed{s}" if s else "random")
def test_a_captured_matching_step_trains_as_the_eager_one(monkeypatch: pytest.MonkeyPatch, seed: int | None,
                                                          rng: np.random.Generator) -> None:
    """gemmpad train's matching step captured in a CUDA graph (views, the teacher's reading in bf16, the MLP's
    AdamW step) against the same step run eagerly: with the views made the identity the random draws do not
    matter, and the two runs agree bit for bit. A wrong replay (a stale batch or target, a step skipped) would
    land as far off as one epoch fewer does: 1.5-3.8 % of W1's scale (13 seeds, the H200)."""
    rng = np.random.default_rng(seed) if seed else rng
    for name in ("ELASTIC_ALPHA", "ROTATION_DEG", "SCALE", "CLEAN"):
        monkeypatch.setattr(matching, name, 0.0)
    torch.manual_seed(2)
    team = distill.Team([distill._network().cuda().to(memory_format=torch.channels_last)], "cuda")
    x, y = digits(200), rng.integers(0, 10, 200)
    kw = dict(epochs=3, batch_size=32, lr_schedule=[0.01, 0.005, 0.001], weight_decay=1e-2, optimizer="adamw",
              seed=4, device="cuda", match=matching.Matching(team, matching.Views(BACKGROUND, "cuda")))
    w0 = random_weights(rng)
    eager = train_torch.fit(x, y, w0, **kw)
    graph = train_torch.fit(x, y, w0, use_graph=True, **kw)
    fewer = train_torch.fit(x, y, w0, use_graph=True, **{**kw, "epochs": 2, "lr_schedule": [0.01, 0.005]})
    for k in eager:
        np.testing.assert_array_equal(graph[k], eager[k], err_msg=k)
    assert np.abs(fewer["W1"] - eager["W1"]).max() > 1e-2 * np.abs(eager["W1"]).max()
