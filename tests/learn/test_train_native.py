"""gemmpad.learn.train_native and the native trainer (native/cuda/train/).

The gradient references are torch autograd in float64 on the CPU, on fresh
random problems with batch sizes that are not multiples of any tile (1, 13,
37) and a short last batch, so a wrong index, a missing bias term or a row
past the batch shows up as a relative error, not as a lucky match.
"""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.learn import train_native, trainer
from gemmpad.bench import train as bench_train
from gemmpad.errors import CudaUnavailable, DataError, GemmpadError, InputShapeError, InputTypeError
from gemmpad.runtime.model import SHAPES, accuracy
from tests.conftest import rel_error
from tests.mnist_data import mnist_dir

torch = pytest.importorskip("torch")

NAMES = tuple(SHAPES)


def random_weights(rng: np.random.Generator, scale: float = 1.0) -> dict[str, np.ndarray]:
    """Uniform +-scale/sqrt(fan_in): about half the ReLUs active, logits of order 1."""
    w = {}
    for name, shape in SHAPES.items():
        fan_in = shape[0] if len(shape) == 2 else 100
        w[name] = (rng.uniform(-1, 1, shape) * scale / np.sqrt(fan_in)).astype(np.float32)
    return w


def random_data(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.uniform(0, 1, (n, 784)).astype(np.float32)
    y = rng.integers(0, 10, n).astype(np.int32)
    return x, y


def torch_reference(w: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray,
                    targets: np.ndarray | None = None) -> tuple[float, dict[str, np.ndarray]]:
    """Mean cross-entropy (against the labels, or soft targets when given) and its gradients in
    float64 (CPU autograd)."""
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in w.items()}
    xt = torch.tensor(x, dtype=torch.float64)
    h = torch.relu(xt @ p["W1"] + p["b1"])
    h = torch.relu(h @ p["W2"] + p["b2"])
    want = torch.tensor(y, dtype=torch.int64) if targets is None else torch.tensor(targets, dtype=torch.float64)
    loss = torch.nn.functional.cross_entropy(h @ p["W3"] + p["b3"], want)
    loss.backward()
    return float(loss.detach()), {k: v.grad.numpy() for k, v in p.items()}


def sgd_reference(w, x, y, order, batch, lrs, momentum, weight_decay, decay_biases=True):
    """torch.optim.SGD over the same batches, float64 on the CPU; returns weights and per-batch losses."""
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in w.items()}
    groups = [{"params": [p[k] for k in ("W1", "W2", "W3")]},
              {"params": [p[k] for k in ("b1", "b2", "b3")], "weight_decay": weight_decay if decay_biases else 0.0}]
    opt = torch.optim.SGD(groups, lr=lrs[0], momentum=momentum, weight_decay=weight_decay)
    xt = torch.tensor(x, dtype=torch.float64)
    yt = torch.tensor(y, dtype=torch.int64)
    losses = []
    for epoch, perm in enumerate(order):
        for group in opt.param_groups:
            group["lr"] = lrs[epoch]
        for o in range(0, len(x), batch):
            idx = torch.from_numpy(perm[o : o + batch].astype(np.int64))
            opt.zero_grad()
            h = torch.relu(xt[idx] @ p["W1"] + p["b1"])
            h = torch.relu(h @ p["W2"] + p["b2"])
            loss = torch.nn.functional.cross_entropy(h @ p["W3"] + p["b3"], yt[idx])
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return {k: v.detach().numpy() for k, v in p.items()}, np.array(losses)


# --------------------------------------------------------------- input checks (no GPU needed)


def random_targets(rng: np.random.Generator, n: int) -> np.ndarray:
    """Soft targets [n, 10]: a random teacher's probabilities, some rows nearly one-hot."""
    z = rng.normal(0, 1, (n, 10)) * rng.uniform(0.1, 8.0, (n, 1))
    q = np.exp(z - z.max(1, keepdims=True))
    return (q / q.sum(1, keepdims=True)).astype(np.float32)


def good_args(rng: np.random.Generator) -> dict:
    x, y = random_data(rng, 20)
    return {"x": x, "y": y, "weights": random_weights(rng), "epochs": 1, "batch_size": 8}


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda a: a.update(x=a["x"].astype(np.float64)), InputTypeError, "float32"),
        (lambda a: a.update(x=a["x"][:, :783].copy()), InputShapeError, r"\[N, 784\]"),
        (lambda a: a.update(x=a["x"][:0]), InputShapeError, "N >= 1"),
        (lambda a: a.update(y=a["y"].astype(np.float32)), InputTypeError, "integer"),
        (lambda a: a.update(y=a["y"][:5]), InputShapeError, "labels"),
        (lambda a: a["y"].__setitem__(3, 10), DataError, "0..9"),
        (lambda a: a["x"].__setitem__((7, 100), np.nan), DataError, "row 7"),
        (lambda a: a["x"].__setitem__((2, 0), np.inf), DataError, "row 2"),
        (lambda a: a["weights"].pop("b2"), InputShapeError, "missing b2"),
        (lambda a: a["weights"].update(W2=np.zeros((100, 99), np.float32)), InputShapeError, "W2"),
        (lambda a: a["weights"].update(W3=np.zeros((100, 10), np.float64)), InputTypeError, "W3"),
        (lambda a: a["weights"]["b1"].__setitem__(0, np.nan), DataError, "b1"),
        (lambda a: a.update(epochs=0), InputShapeError, "epochs"),
        (lambda a: a.update(batch_size=0), InputShapeError, "batch size"),
        (lambda a: a.update(precision="fp8"), InputShapeError, "precision"),
        (lambda a: a.update(momentum=1.0), DataError, "momentum"),
        (lambda a: a.update(lr_schedule=float("nan")), DataError, "learning rate"),
        (lambda a: a.update(epochs=3, lr_schedule=[0.1, 0.05]), InputShapeError, "schedule"),
        (lambda a: a.update(targets=np.full((20, 10), 0.1)), InputTypeError, "targets"),
        (lambda a: a.update(targets=np.full((19, 10), 0.1, np.float32)), InputShapeError, "targets"),
        (lambda a: a.update(targets=np.full((20, 10), 0.2, np.float32)), DataError, "sum to 1"),
        (lambda a: a.update(targets=np.eye(10, dtype=np.float32)[np.zeros(20, int)] * 2 - 0.1), DataError, ">= 0"),
    ],
)
def test_bad_input_is_reported_before_the_gpu(rng, change, error, match):
    args = good_args(rng)
    change(args)
    with pytest.raises(error, match=match):
        train_native.fit(**args)


@pytest.mark.parametrize("kind", trainer.ORDERS)
def test_batch_orders_are_seeded_permutations(kind):
    a = trainer.batch_orders(1000, seed=5, kind=kind)
    b = trainer.batch_orders(1000, seed=5, kind=kind)
    first, second = a(0), a(1)
    assert np.array_equal(second, b(1)) and np.array_equal(first, b(0))  # any epoch first
    assert not np.array_equal(first, second) and not np.array_equal(first, trainer.batch_orders(1000, 6, kind)(0))
    assert np.array_equal(np.sort(first), np.arange(1000)) and first.dtype == np.int32


def test_batch_orders_are_those_of_the_shipped_model_and_the_committed_bench():
    """"epoch" trained models/mnist-mlp.npz (gemmpad train's order); "stream" made the parity
    figures of assets/benchmarks/*/train.json. Pinned: changing either changes what they record."""
    epoch = trainer.batch_orders(50, 1)
    assert np.array_equal(epoch(2), np.random.default_rng([1, 3, 2]).permutation(50))
    rng = np.random.default_rng(7)
    stream = trainer.batch_orders(50, 7, "stream")
    assert [list(stream(e)) for e in range(3)] == [list(rng.permutation(50)) for _ in range(3)]


def test_lr_schedule_forms():
    assert trainer.lr_at(0.1, 7) == 0.1
    assert trainer.lr_at([0.3, 0.2], 1) == 0.2
    assert trainer.lr_at(lambda e: 0.1 * 0.5**e, 2) == pytest.approx(0.025)


def test_without_gpu_fit_says_why(rng):
    from gemmpad.runtime import native

    if native.cuda_status().available:
        pytest.skip("a GPU is present; this checks the message without one")
    with pytest.raises(CudaUnavailable):
        train_native.fit(**good_args(rng))


class TorchStandIn:
    """gemmpad._cuda.Trainer's interface on torch float64 (CPU), so fit()'s plumbing
    (orders, lr schedule, callback) is checked without a GPU."""

    persistent_max_batch = 256
    persistent_available = True  # as on the H200; a test sets False for a GPU without the SMs for it

    def __init__(self, x, y, w, batch, mixed, targets):
        self.x, self.y, self.w, self.batch, self.history, self.engines = x, y, dict(w), batch, [], []

    def epoch(self, perm, lr, momentum, weight_decay, engine, decay_biases):
        self.engines.append(engine)
        self.history.append((perm.copy(), lr, momentum, weight_decay))
        orders = [h[0] for h in self.history]
        lrs = [h[1] for h in self.history]
        w, losses = sgd_reference(self.initial, self.x, self.y, orders, self.batch, lrs, momentum, weight_decay,
                                  decay_biases)
        self.w = {k: v.astype(np.float32) for k, v in w.items()}
        return {"loss": float(losses[-1]), "accuracy": 0.5, "gpu_ms": 0.0}

    def weights(self):
        return self.w


def test_fit_plumbing_with_a_stand_in_trainer(rng, monkeypatch):
    x, y = random_data(rng, 90)
    w0 = random_weights(rng)

    def make(*args):
        trainer = TorchStandIn(*args)
        assert all(np.array_equal(args[2][k], w0[k]) for k in NAMES) and args[4] is False  # fp32, not mixed
        trainer.initial = args[2]  # what fit() handed over, not the test's own copy
        return trainer

    monkeypatch.setattr(train_native, "cuda_trainer_class", lambda: make)
    orders = [rng.permutation(90) for _ in range(3)]
    seen = []
    got = train_native.fit(x, y, w0, epochs=3, batch_size=16, lr_schedule=lambda e: 0.1 / (e + 1), momentum=0.5,
                           weight_decay=1e-3, batch_order=lambda e: orders[e],
                           callback=lambda *a: seen.append(a))
    ref, _ = sgd_reference(w0, x, y, orders, 16, [0.1, 0.05, 0.1 / 3], 0.5, 1e-3)  # biases decayed by default
    for name in NAMES:
        assert rel_error(got[name], ref[name]) < 1e-6, name
    exempt = train_native.fit(x, y, w0, epochs=3, batch_size=16, lr_schedule=lambda e: 0.1 / (e + 1), momentum=0.5,
                              weight_decay=1e-3, decay_biases=False, batch_order=lambda e: orders[e])
    ref_exempt, _ = sgd_reference(w0, x, y, orders, 16, [0.1, 0.05, 0.1 / 3], 0.5, 1e-3, decay_biases=False)
    assert rel_error(exempt["b1"], ref_exempt["b1"]) < 1e-6 and rel_error(exempt["b1"], ref["b1"]) > 1e-6
    assert [a[0] for a in seen] == [0, 1, 2] and all(isinstance(a[3], dict) for a in seen)
    with pytest.raises(InputShapeError, match="batch_order"):
        train_native.fit(x, y, w0, epochs=1, batch_order=lambda e: np.arange(89))


def test_fit_takes_the_persistent_engine_only_where_it_runs(rng, monkeypatch):
    """fp32 on a GPU that runs it: persistent; a GPU without the SMs or shared memory for it (an A100, a
    laptop's): the graph, and asking for it is a clear error, not the kernel's RuntimeError."""
    x, y = random_data(rng, 40)
    w0 = random_weights(rng)
    made = []

    def make(available):
        def trainer(*args):
            t = TorchStandIn(*args)
            t.initial, t.persistent_available = args[2], available
            made.append(t)
            return t
        return trainer

    for available, engine in ((True, "persistent"), (False, "graph")):
        monkeypatch.setattr(train_native, "cuda_trainer_class", lambda: make(available))
        train_native.fit(x, y, w0, epochs=2, batch_size=16)
        assert made[-1].engines == [engine, engine]
    with pytest.raises(GemmpadError, match="cannot run the persistent engine"):
        train_native.fit(x, y, w0, epochs=1, batch_size=16, engine="persistent")


@pytest.mark.parametrize("options,match", [({"engine": "cuda graph"}, "engine must be one of"),
                                           ({"engine": "persistent", "precision": "mixed"}, "fp32 only")])
def test_an_engine_that_cannot_run_is_refused_before_the_gpu(rng, options, match):
    with pytest.raises(GemmpadError, match=match):
        train_native.fit(**good_args(rng), **options)


# --------------------------------------------------------------- native kernels (GPU)


def gradients(trainer, idx: np.ndarray) -> dict[str, np.ndarray]:
    """One step with lr = momentum = decay = 0 leaves the weights and puts the gradient in the momentum buffers."""
    trainer.step(idx.astype(np.int32), 0.0, 0.0, 0.0)
    return trainer.velocities()


@pytest.mark.gpu
@pytest.mark.parametrize("batch,rows", [(1, 1), (13, 13), (37, 37), (40, 13)])
def test_gradients_match_float64_autograd(rng, batch, rows):
    from gemmpad.runtime import native

    x, y = random_data(rng, 53)
    w = random_weights(rng, scale=2.0)
    trainer = native.cuda().Trainer(x, y, w, batch, False)
    idx = rng.choice(53, rows, replace=False)
    got = gradients(trainer, idx)
    _, ref = torch_reference(w, x[idx], y[idx])
    for name in NAMES:
        assert rel_error(got[name], ref[name]) < 1e-5, name
    after = trainer.weights()
    for name in NAMES:  # lr = 0: untouched
        assert np.array_equal(after[name], w[name]), name


@pytest.mark.gpu
@pytest.mark.parametrize("batch,rows", [(13, 13), (40, 37)])
def test_soft_target_gradients_match_float64_autograd(rng, batch, rows):
    """Distillation's loss (a fine-tune's replay rows, gemmpad.learn.finetune): cross-entropy against a
    teacher's probabilities; one-hot targets give the labels' gradients exactly."""
    from gemmpad.runtime import native

    x, y = random_data(rng, 53)
    q = random_targets(rng, 53)
    w = random_weights(rng, scale=2.0)
    idx = rng.choice(53, rows, replace=False)
    got = gradients(native.cuda().Trainer(x, y, w, batch, False, q), idx)
    _, ref = torch_reference(w, x[idx], y[idx], q[idx])
    for name in NAMES:
        assert rel_error(got[name], ref[name]) < 1e-5, name
    onehot = gradients(native.cuda().Trainer(x, y, w, batch, False, np.eye(10, dtype=np.float32)[y]), idx)
    labels = gradients(native.cuda().Trainer(x, y, w, batch, False), idx)
    for name in NAMES:
        assert np.array_equal(onehot[name], labels[name]), name
    stats = []
    train_native.fit(x, y, w, epochs=1, batch_size=batch, lr_schedule=0.0, targets=q,
                     callback=lambda *a: stats.append(a))
    ref_loss, _ = torch_reference(w, x, y, q)
    assert stats[0][1] == pytest.approx(ref_loss, rel=1e-5)


def mixed_reference(w: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The mixed mode's arithmetic in float64: X, W1 and dZ1 rounded to bf16 where the kernels round them."""

    def bf16(a: np.ndarray) -> np.ndarray:
        return torch.tensor(a, dtype=torch.float32).to(torch.bfloat16).to(torch.float64).numpy()

    w64 = {k: v.astype(np.float64) for k, v in w.items()}
    xb = bf16(x)
    h1 = np.maximum(xb @ bf16(w["W1"]) + w64["b1"], 0)
    h2 = np.maximum(h1 @ w64["W2"] + w64["b2"], 0)
    z3 = h2 @ w64["W3"] + w64["b3"]
    p = np.exp(z3 - z3.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dz3 = (p - np.eye(10)[y]) / len(x)
    dz2 = (dz3 @ w64["W3"].T) * (h2 > 0)
    dz1 = (dz2 @ w64["W2"].T) * (h1 > 0)
    return {"W1": xb.T @ bf16(dz1.astype(np.float32)), "b1": dz1.sum(0), "W2": h1.T @ dz2, "b2": dz2.sum(0),
            "W3": h2.T @ dz3, "b3": dz3.sum(0)}


@pytest.mark.gpu
def test_mixed_precision_gradients_match_bf16_arithmetic(rng):
    """Against exact math the bf16 forward moves gradients by 2-6% on random data (ReLU masks flip,
    measured with the emulation below), so the tight check is against that emulation in float64."""
    from gemmpad.runtime import native

    x, y = random_data(rng, 300)
    w = random_weights(rng, scale=2.0)
    trainer = native.cuda().Trainer(x, y, w, 100, True)
    idx = rng.choice(300, 93, replace=False)
    got = gradients(trainer, idx)
    emulated = mixed_reference(w, x[idx], y[idx])
    _, exact = torch_reference(w, x[idx], y[idx])
    for name in NAMES:
        assert rel_error(got[name], emulated[name]) < 2e-3, name
        assert rel_error(got[name], exact[name]) < 0.15, name


@pytest.mark.gpu
@pytest.mark.parametrize("n,batch", [(1, 1), (53, 53), (53, 13), (300, 256), (700, 256), (700, 129)])
def test_persistent_epoch_gradients_match_float64_autograd(rng, n, batch):
    """lr = momentum = decay = 0: every step leaves the weights and its gradient in the momentum buffers,
    so after the epoch they hold the last batch's. Its layer-1 sums come from the W1 tiles the step
    before updated (25 k tiles of 32, the last with the bias row); batches over 128 rows take two
    passes of the forward, short last batches follow."""
    from gemmpad.runtime import native

    x, y = random_data(rng, n)
    w = random_weights(rng, scale=2.0)
    trainer = native.cuda().Trainer(x, y, w, batch, False)
    perm = rng.permutation(n).astype(np.int32)
    trainer.epoch(perm, 0.0, 0.0, 0.0, "persistent")
    last = perm[(n - 1) // batch * batch :]
    _, ref = torch_reference(w, x[last], y[last])
    got = trainer.velocities()
    for name in NAMES:
        assert rel_error(got[name], ref[name]) < 1e-5, name
    after = trainer.weights()
    for name in NAMES:  # lr = 0: untouched
        assert np.array_equal(after[name], w[name]), name
    loss, correct = trainer.samples()
    ref_loss = [torch_reference(w, x[perm[o : o + batch]], y[perm[o : o + batch]])[0] for o in range(0, n, batch)]
    sizes = [min(batch, n - o) for o in range(0, n, batch)]
    assert float(np.mean(loss)) == pytest.approx(np.dot(ref_loss, sizes) / n, rel=1e-5)


@pytest.mark.gpu
def test_persistent_engine_refuses_mixed_precision_large_batches_and_unknown_engines(rng):
    from gemmpad.runtime import native

    x, y = random_data(rng, 40)
    perm = np.arange(40, dtype=np.int32)
    with pytest.raises(ValueError, match="fp32 only"):
        native.cuda().Trainer(x, y, random_weights(rng), 16, True).epoch(perm, 0.1, 0.0, 0.0, "persistent")
    with pytest.raises(ValueError, match="engine must be"):
        native.cuda().Trainer(x, y, random_weights(rng), 16, False).epoch(perm, 0.1, 0.0, 0.0, "graphs")
    details = native.cuda_status().details  # an H100 or H200 of 132 SMs runs it (A100s, H100 PCIe, GeForces do not)
    if str(details.get("compute_capability")) == "9.0" and details.get("multiprocessors", 0) >= 132:
        assert native.cuda().Trainer(x, y, random_weights(rng), 16, False).persistent_available
    assert not native.cuda().Trainer(x, y, random_weights(rng), 16, True).persistent_available
    x, y = random_data(rng, 300)
    big = native.cuda().Trainer(x, y, random_weights(rng), 257, False)
    assert big.persistent_max_batch == 256
    with pytest.raises(ValueError, match="at most 256 rows"):
        big.epoch(np.arange(300, dtype=np.int32), 0.1, 0.0, 0.0, "persistent")
    with pytest.raises(GemmpadError, match="at most 256 rows"):
        train_native.fit(x, y, random_weights(rng), epochs=1, batch_size=257, engine="persistent")
    stats = []  # fit's default for a batch the persistent engine does not take: the graph
    train_native.fit(x, y, random_weights(rng), epochs=1, batch_size=257, callback=lambda *a: stats.append(a))
    assert len(stats) == 1


@pytest.mark.gpu
@pytest.mark.parametrize("precision,decay_biases,engine", [("fp32", True, "persistent"), ("fp32", False, "persistent"),
                                                           ("fp32", True, "graph"), ("mixed", True, "graph")])
def test_training_matches_torch_sgd_steps(rng, precision, decay_biases, engine):
    """Two epochs of 650 rows, batch 64 (a short last batch), lr schedule, momentum and decay vs torch.optim.SGD."""
    x, y = random_data(rng, 650)
    teacher = random_weights(rng, scale=3.0)  # learnable labels: a random teacher network
    h = np.maximum(np.maximum(x @ teacher["W1"] + teacher["b1"], 0) @ teacher["W2"] + teacher["b2"], 0)
    y = np.argmax(h @ teacher["W3"] + teacher["b3"], axis=1).astype(np.int32)
    w0 = random_weights(rng)
    # A decay large enough to tell the two bias rules apart. The learning rate keeps the run out of the
    # chaotic regime: at lr 0.1 one ReLU that flips between float32 and float64 grew into a 3.6e-3
    # difference over these 22 steps in fp32 (and 28% with bf16) for some draws; at 0.01, over 60
    # draws on an H200: fp32 at most 2.1e-5, mixed at most 2.0e-3, while the same run without
    # weight decay lands >= 2.8e-2 away. One fp32 draw in ~100 still meets a flip
    # (GEMMPAD_TEST_SEED=1060384661: 1.8e-4 in W1), so fp32 gets 1e-3, still 28x inside that gap.
    lrs, momentum, decay, seed = [0.01, 0.005], 0.9, 3e-2, 11
    stats = []
    got = train_native.fit(x, y, w0, epochs=2, batch_size=64, lr_schedule=lrs, momentum=momentum,
                           weight_decay=decay, decay_biases=decay_biases, seed=seed, precision=precision,
                           engine=engine, callback=lambda *args: stats.append(args))
    order = trainer.batch_orders(650, seed)  # fit's default
    ref, losses = sgd_reference(w0, x, y, [order(0), order(1)], 64, lrs, momentum, decay, decay_biases)
    # bf16 forward moves each step's gradients by 2-6% (see the test above), which at this learning
    # rate leaves the weights within 2e-3 of torch's: mixed precision gets 2e-2, 10x that.
    tol = 1e-3 if precision == "fp32" else 2e-2
    for name in NAMES:
        assert rel_error(got[name], ref[name]) < tol, name
    steps = len(losses) // 2
    sizes = np.array([min(64, 650 - o) for o in range(0, 650, 64)])
    # The absolute floor: a sample the model already gets right has a loss of -log(p), p within a few
    # 1e-5 of 1, and float32 holds the softmax's sum near 1 to ~6e-8, the size of the whole loss
    # there (GEMMPAD_TEST_SEED=1084426423: epoch loss 8.028e-5 vs torch's float64 8.033e-5).
    for e in range(2):  # the epoch loss is the per-sample mean; torch's per-batch means weighted by batch size
        ref_epoch = float(np.sum(losses[e * steps : (e + 1) * steps] * sizes) / 650)
        assert stats[e][0] == e
        assert stats[e][1] == pytest.approx(ref_epoch, rel=1e-4 if precision == "fp32" else 2e-2, abs=1e-6)
    assert stats[1][1] < stats[0][1]
    assert all(np.array_equal(stats[1][3][k], got[k]) for k in NAMES)  # the callback's weights are the epoch's


def two_epochs(x, y, w, batch, mixed, engine, perm):
    trainer = native_trainer(x, y, w, batch, mixed)
    stats = [trainer.epoch(perm, 0.05, 0.9, 1e-4, engine) for _ in range(2)]
    return [s["loss"] for s in stats], trainer.weights(), trainer.samples()[0]


def native_trainer(*args):
    from gemmpad.runtime import native

    return native.cuda().Trainer(*args)


@pytest.mark.gpu
@pytest.mark.parametrize("mixed", [False, True])
def test_graph_replay_equals_direct_launches(rng, mixed):
    x, y = random_data(rng, 500)
    w = random_weights(rng)
    perm = rng.permutation(500).astype(np.int32)
    (s_g, w_g, l_g), (s_d, w_d, l_d) = (two_epochs(x, y, w, 48, mixed, e, perm) for e in ("graph", "launches"))
    assert s_g == s_d  # deterministic kernels: bit-identical
    for name in NAMES:
        assert np.array_equal(w_g[name], w_d[name]), name
    assert np.array_equal(l_g, l_d)


@pytest.mark.gpu
def test_persistent_epochs_repeat_exactly(rng):
    """Fixed-order sums and no atomics: two runs are bit-identical. (Against torch's float64 SGD:
    test_training_matches_torch_sgd_steps; against the graph only layer 1's summation order differs.)"""
    x, y = random_data(rng, 500)
    w = random_weights(rng)
    perm = rng.permutation(500).astype(np.int32)
    (s_a, w_a, l_a), (s_b, w_b, l_b) = (two_epochs(x, y, w, 48, False, "persistent", perm) for _ in range(2))
    assert s_a == s_b and np.array_equal(l_a, l_b)
    for name in NAMES:
        assert np.array_equal(w_a[name], w_b[name]), name


@pytest.mark.gpu
def test_real_digits_learn(rng):
    """If MNIST is at hand: one epoch on 10,000 images must reach > 85% on 2,000 others."""
    x, y, _, _ = bench_train.load_mnist(mnist_dir())
    w = trainer.init_weights(int(rng.integers(1 << 30)), "torch")
    out = train_native.fit(x[:10000], y[:10000], w, epochs=1, batch_size=32, lr_schedule=0.05, precision="fp32")
    assert accuracy(out, x[50000:52000], y[50000:52000]) > 0.85


@pytest.mark.gpu
def test_divergence_is_an_error(rng):
    x, y = random_data(rng, 200)
    w = random_weights(rng, scale=30.0)
    with pytest.raises(GemmpadError, match="diverged"):
        train_native.fit(x * 1e18, y, w, epochs=3, batch_size=50, lr_schedule=1e6, momentum=0.0)


@pytest.mark.gpu
def test_row_index_outside_the_dataset_is_an_error(rng):
    from gemmpad.runtime import native

    x, y = random_data(rng, 30)
    trainer = native.cuda().Trainer(x, y, random_weights(rng), 8, False)
    with pytest.raises(ValueError, match="outside the dataset"):
        trainer.step(np.array([3, 30], np.int32), 0.1, 0.0, 0.0)
    bad = np.arange(30, dtype=np.int32)
    bad[5] = -1
    with pytest.raises(ValueError, match="outside the dataset"):
        trainer.epoch(bad, 0.1, 0.0, 0.0)
