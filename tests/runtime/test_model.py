"""Model files: round trip, corrupt files, and the shipped model's accuracy measured with NumPy alone."""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from gemmpad.data import mnist, synthetic, pendigits
from gemmpad.commands import evaluate
from gemmpad.errors import ModelFileError
from gemmpad.runtime.model import CARD_HASH, SHAPES, Model, default_model_path, accuracy, load_model, shapes, softmax
from gemmpad.inputs.preprocess import preprocess_batch
from tests.hostile_files import allocation_peak
from tests.mnist_data import mnist_dir
from tests.pendigits_data import pendigits_file


def random_weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {k: rng.normal(0, 0.1, s).astype(np.float32) for k, s in SHAPES.items()}


def forward64(w: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    h = np.maximum(x @ w["W1"].astype(np.float64) + w["b1"], 0)
    h = np.maximum(h @ w["W2"].astype(np.float64) + w["b2"], 0)
    z = h @ w["W3"].astype(np.float64) + w["b3"]
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_round_trip_with_card(tmp_path: Path, rng: np.random.Generator) -> None:
    w = random_weights(rng)
    card = {"name": "t", "results": {"mnist_test_accuracy": 0.5}}
    Model(w).save(tmp_path / "m.npz", card)
    m = load_model(tmp_path / "m.npz")
    for k in SHAPES:
        np.testing.assert_array_equal(m[k], w[k])
    assert {k: v for k, v in m.card.items() if k != CARD_HASH} == card  # plus the weights' hash
    x = rng.uniform(0, 1, (5, 784)).astype(np.float32)
    p = m.forward(x)
    np.testing.assert_allclose(p, forward64(w, x.astype(np.float64)), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-5)
    assert not list(tmp_path.glob(".*tmp*"))  # the atomic write left no temporary behind


def test_softmax_is_stable() -> None:
    p = softmax(np.array([[1000.0, 0.0, -1000.0]]))
    assert np.all(np.isfinite(p)) and p[0, 0] == pytest.approx(1.0)


def _save_raw(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as f:
        np.savez(f, **arrays)


@pytest.mark.parametrize(
    "corrupt,message",
    [
        (lambda w: w.pop("W2"), "missing"),
        (lambda w: w.__setitem__("W1", w["W1"][:, :99]), "shape"),
        (lambda w: w.__setitem__("b3", w["b3"].astype(np.float64)), "dtype"),
        (lambda w: w["W3"].__setitem__((3, 4), np.nan), "NaN"),
        (lambda w: w["b1"].__setitem__(7, np.inf), "NaN or Inf"),
    ],
    ids=["missing array", "wrong shape", "wrong dtype", "NaN", "Inf"],
)
def test_corrupt_arrays(tmp_path: Path, rng: np.random.Generator, corrupt, message: str) -> None:
    w = random_weights(rng)
    corrupt(w)
    _save_raw(tmp_path / "m.npz", w)
    with pytest.raises(ModelFileError, match=message):
        load_model(tmp_path / "m.npz")


@pytest.mark.parametrize("where", ["file", "memory"])
def test_a_misshapen_layer_is_told_the_width_it_may_choose(where: str, tmp_path: Path, rng: np.random.Generator) -> None:
    """The hidden widths are read from W1's and W2's columns: a W1 stored transposed, (100, 784),
    was told "expected (784, 784)", its own width echoed back."""
    w = random_weights(rng)
    w["W1"] = np.ascontiguousarray(w["W1"].T)
    _save_raw(tmp_path / "m.npz", w)
    source = str(tmp_path / "m.npz") if where == "file" else "weights"
    with pytest.raises(ModelFileError) as info:
        load_model(tmp_path / "m.npz") if where == "file" else Model(w)
    assert str(info.value) == (f"{source}: W1 has shape (100, 784), expected (784, first hidden width) "
                               "(stored transposed?)")
    w = random_weights(rng)
    w["W2"] = np.zeros((64, 99), np.float32)
    with pytest.raises(ModelFileError, match=r"^weights: W2 has shape \(64, 99\), expected \(100, second hidden width\)$"):
        Model(w)


@pytest.mark.parametrize("where", ["file", "memory"])
@pytest.mark.parametrize(("name", "shape", "want"), [("b1", (64, 1), "(64,)"), ("b2", (), "(32,)"),
                                                     ("W3", (32,), "(32, 10)")])
def test_a_misshapen_array_is_told_the_shape_of_its_own_network(where: str, name: str, shape: tuple[int, ...],
                                                                want: str, tmp_path: Path) -> None:
    """A file's ranks were checked against the shipped 784-100-100-10 before its widths were read:
    a 784-64-32-10 file's b1 of shape (64, 1) was told "expected (100,)"; weights in memory were
    told "(64,)". Both now name what the file's own W1 and W2 make of it."""
    w = {k: np.zeros(s, np.float32) for k, s in shapes(64, 32).items()}
    w[name] = np.zeros(shape, np.float32)
    _save_raw(tmp_path / "m.npz", w)
    source = str(tmp_path / "m.npz") if where == "file" else "weights"
    with pytest.raises(ModelFileError) as info:
        load_model(tmp_path / "m.npz") if where == "file" else Model(w)
    assert str(info.value) == f"{source}: {name} has shape {shape}, expected {want}"


def test_not_a_zip_truncated_missing_and_pickles(tmp_path: Path, rng: np.random.Generator) -> None:
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ModelFileError, match="not an .npz model file") as info:
        load_model(tmp_path / "text.npz")
    assert "unsafe" not in str(info.value)  # NumPy's own advice for non-zip files: never pass it on
    (tmp_path / "png.npz").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    with pytest.raises(ModelFileError, match="not an .npz model file"):
        load_model(tmp_path / "png.npz")
    with pytest.raises(ModelFileError, match="is a directory, not a model file"):
        load_model(tmp_path)  # a directory
    Model(random_weights(rng)).save(tmp_path / "good.npz")
    raw = (tmp_path / "good.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelFileError):
        load_model(tmp_path / "cut.npz")
    with pytest.raises(ModelFileError, match="not found"):
        load_model(tmp_path / "absent.npz")
    w = random_weights(rng)
    obj = np.empty(1, dtype=object)
    obj[0] = {"evil": 1}
    _save_raw(tmp_path / "pickle.npz", {**w, "W1": obj})
    with pytest.raises(ModelFileError):
        load_model(tmp_path / "pickle.npz")  # allow_pickle=False: never runs code


def test_a_network_of_another_framework_is_named_with_the_command_that_converts_it(tmp_path: Path) -> None:
    """`predict --model net.pt` said "unexpected member 'net/data.pkl' (a model file holds exactly W1.npy...)":
    a PyTorch file (torch.save's zip, or its older pickle) or an ONNX file is named as such, with the import
    command that makes a gemmpad model of it."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from gemmpad.commands.exporter import to_onnx

    torch.save(torch.nn.Linear(784, 10).state_dict(), tmp_path / "net.pt")
    torch.save(torch.nn.Linear(784, 10).state_dict(), tmp_path / "old.pth", _use_new_zipfile_serialization=False)
    (tmp_path / "net.onnx").write_bytes(to_onnx(load_model()))
    for name, kind in (("net.pt", "a PyTorch"), ("old.pth", "a PyTorch"), ("net.onnx", "an ONNX")):
        with pytest.raises(ModelFileError) as info:
            load_model(tmp_path / name)
        assert str(info.value) == (f"{tmp_path / name} is {kind} file, not a gemmpad model: convert it with "
                                   f"`gemmpad import {tmp_path / name} -o model.npz`")


def test_bad_card_json(tmp_path: Path, rng: np.random.Generator) -> None:
    Model(random_weights(rng)).save(tmp_path / "m.npz")
    (tmp_path / "m.json").write_text("{not json")
    with pytest.raises(ModelFileError, match="JSON"):
        load_model(tmp_path / "m.npz")


@pytest.mark.parametrize("text,kind", [("[1, 2]", "an array"), ('"card"', "a string"), ("7", "a number"),
                                       ("null", "null")])
def test_a_card_that_is_not_an_object_is_refused(text: str, kind: str, tmp_path: Path, rng: np.random.Generator) -> None:
    Model(random_weights(rng)).save(tmp_path / "m.npz")
    (tmp_path / "m.json").write_text(text)
    with pytest.raises(ModelFileError) as info:
        load_model(tmp_path / "m.npz")
    assert str(info.value) == f"{tmp_path / 'm.json'}: not a valid model card (JSON) ({kind}, expected an object of fields)"


def test_not_a_zip_is_badzip_not_crash(tmp_path: Path) -> None:
    p = tmp_path / "m.npz"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("W1.npy", b"garbage")
    with pytest.raises(ModelFileError):
        load_model(p)


# ---------------------------------------------------------------- the shipped model


@pytest.fixture(scope="module")
def shipped() -> Model:
    return load_model(default_model_path())


def test_shipped_card_is_complete(shipped: Model) -> None:
    card = shipped.card
    assert card["data"]["canonical_mnist"] is True
    assert set(card["data"]["md5"]) == set(mnist.CANONICAL_MD5)
    for key in ("training", "results", "history", "time_s", "versions"):
        assert key in card
    assert card["results"]["mnist_test_accuracy"] >= 0.985
    assert card["results"]["drawn_accuracy"]["all"] >= 0.96
    assert json.dumps(card)  # plain JSON types only


def test_shipped_model_mnist_test_accuracy_numpy_only(shipped: Model) -> None:
    test = mnist.load_split("test", mnist_dir())
    x, ok = preprocess_batch(test.images)
    assert ok.all()
    pred = shipped.forward(x.reshape(-1, 784)).argmax(1)
    acc = float((pred == test.labels).mean())
    print(f"shipped model, MNIST test: {100 * acc:.2f}%")
    assert acc >= 0.985
    assert acc == pytest.approx(shipped.card["results"]["mnist_test_accuracy"], abs=1e-6)  # the card is honest


def test_shipped_model_reads_drawn_digits(shipped: Model) -> None:
    ds = synthetic.generate(600, seed=synthetic.EVAL_SEED + 1)  # fresh digits, not the card's evaluation set
    acc = float((shipped.forward(ds.images.reshape(-1, 784)).argmax(1) == ds.labels).mean())
    print(f"shipped model, 600 drawn digits: {100 * acc:.2f}%")
    assert acc >= 0.93  # the full 5,000-digit set must reach 96%; a 600 sample has ~1% standard error


def test_shipped_card_measures_writers_it_never_trained_on(shipped: Model) -> None:
    """Split by writer: one held-out group the model never trained on, or (trained on every writer,
    `gemmpad train --folds`) folds that each measured writers their own model never trained on."""
    results = shipped.card["results"]
    trained = set(shipped.card["training"]["pendigits_writers"])
    real, cv = results.get("real_writers"), results.get("cross_validation")
    assert trained and (real or cv)
    if real:
        assert real["writers"] and not trained & set(real["writers"])
        styles, mean, worst = real["styles"], real["mean"], real["worst"]
    else:
        held = [w for f in cv["folds"] for w in f["writers"]]
        assert sorted(held) == sorted(set(held)) == sorted(trained) == cv["writers"]  # each writer in one fold
        for f in cv["folds"]:
            assert set(f["trained_on"]) == trained - set(f["writers"])  # the fold's model never saw its writers
        n = np.array([f["samples"] for f in cv["folds"]], dtype=float)
        assert cv["mean"] == pytest.approx(np.average([f["mean"] for f in cv["folds"]], weights=n), abs=1e-12)
        styles, mean, worst = cv["styles"], cv["mean"], cv["worst_style"]
    assert set(styles) == set(pendigits.STYLES)
    assert mean == pytest.approx(np.mean(list(styles.values())), abs=1e-12)
    assert worst == min(styles.values())
    assert shipped.scores()[0] == f"unseen writers {100 * mean:.1f} %"  # what the app and `gemmpad info` show first


def test_models_readme_shows_the_shipped_cards_results(shipped: Model) -> None:
    """models/README.md's results tables are generated from the card: a figure typed by hand,
    or a model shipped without regenerating them, fails here."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "models" / "README.md").read_text()
    block = text.split("<!-- card:results begin -->\n", 1)[1].split("\n<!-- card:results end -->", 1)[0]
    assert block == evaluate.card_tables(shipped.card)


def test_models_readme_shows_the_shipped_detectors_rates(shipped: Model) -> None:
    """The unsure detector's rates in models/README.md are generated from the file shipped beside the
    weights (`measured`), as the results are from the card."""
    from pathlib import Path

    from gemmpad.learn import unsure_fit
    from gemmpad.runtime import unsure

    assert shipped.path is not None
    measured = unsure.load(unsure.path_for(shipped.path)).measured
    text = (Path(__file__).resolve().parents[2] / "models" / "README.md").read_text()
    block = text.split("<!-- unsure:measured begin -->\n", 1)[1].split("\n<!-- unsure:measured end -->", 1)[0]
    assert block == unsure_fit.markdown(measured)
    assert "| MNIST test (real digits) | 10,000 |" in block


@pytest.mark.slow
@pytest.mark.parametrize("style", ["thin-4px-dark", "thick-32px-light"])
def test_shipped_card_real_writer_figures_recomputed(shipped: Model, style: str) -> None:
    """The card's per-style figure, recomputed from the saved file: drawing and preprocessing are
    deterministic, so it must match exactly."""
    if not shipped.card["results"].get("real_writers"):
        pytest.skip("trained on every writer: its unseen-writer figures come from its folds' models, not shipped")
    held = set(shipped.card["results"]["real_writers"]["writers"])
    samples = [s for s in pendigits.read_pendigits(pendigits_file()) if s.writer in held]
    acc = evaluate.pendigits_scores(shipped, samples, [style])[style].accuracy
    print(f"shipped model, unseen writers, {style}: {100 * acc:.2f}%")
    assert acc == pytest.approx(shipped.card["results"]["real_writers"]["styles"][style], abs=1e-12)


def test_missing_bundled_model_says_where_it_looked(monkeypatch, tmp_path: Path) -> None:
    from gemmpad.runtime import model as model_module

    monkeypatch.setattr(model_module, "MODELS_DIR", tmp_path / "pkg" / "models")
    monkeypatch.setattr(model_module, "default_model_path", lambda: tmp_path / "checkout" / "mnist-mlp.npz")
    with pytest.raises(ModelFileError, match=r"bundled model is missing \(looked for .*pkg/models/mnist-mlp.npz and "
                                             r".*checkout/mnist-mlp.npz\)"):
        load_model()


# ---- issue 20: hostile model files


def test_extra_members_are_refused(tmp_path: Path, rng: np.random.Generator) -> None:
    """Finding 8: an extra string array gave `could not convert string to float` (exit 3);
    a non-.npy member or an extra numeric array was read, or accepted."""
    w = random_weights(rng)
    cases = {"str.npz": {**w, "note": np.array(["hello"])}, "zeros.npz": {**w, "Z": np.zeros(1000, np.float32)}}
    for name, arrays in cases.items():
        _save_raw(tmp_path / name, arrays)
        with pytest.raises(ModelFileError, match="unexpected member '(note|Z).npy'"):
            load_model(tmp_path / name)
    _save_raw(tmp_path / "txt.npz", w)
    with zipfile.ZipFile(tmp_path / "txt.npz", "a") as zf:
        zf.writestr("README.txt", "not an array")
    with pytest.raises(ModelFileError, match="unexpected member 'README.txt'"):
        load_model(tmp_path / "txt.npz")


def _with_zeros_member(path: Path, name: str, head: bytes, mib: int = 64) -> None:
    """Append member `name` to the archive: `head`, then `mib` MiB of zeros (deflated to ~1/1000)."""
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as zf, zf.open(name, "w", force_zip64=True) as f:
        f.write(head)
        for _ in range(mib):
            f.write(bytes(1 << 20))


def test_headers_are_checked_before_any_data_is_inflated(tmp_path: Path, rng: np.random.Generator) -> None:
    """Finding 3: a 9.7 MB file holding a 9 GiB array of zeros took 27.6 s and 9.3 GB. Here W1's
    header declares a 64 MiB array (deflated to ~64 KB): refused with no large allocation."""
    w = random_weights(rng)
    _save_raw(tmp_path / "m.npz", {k: v for k, v in w.items() if k != "W1"})
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (784, 21400)})
    _with_zeros_member(tmp_path / "m.npz", "W1.npy", buf.getvalue())
    with allocation_peak() as peak, pytest.raises(ModelFileError, match=r"first hidden layer has 21400 units"):
        load_model(tmp_path / "m.npz")
    assert peak[0] < 8 << 20, f"{peak[0] / 2**20:.1f} MiB allocated while refusing the file"


def test_data_past_the_declared_size_is_refused_unread(tmp_path: Path, rng: np.random.Generator) -> None:
    """Finding 3: a right header followed by far more data than it declares (64 MiB of zeros):
    one byte past the declared end is read, and the file is refused."""
    w = random_weights(rng)
    _save_raw(tmp_path / "m.npz", {k: v for k, v in w.items() if k != "b3"})
    buf = io.BytesIO()
    np.lib.format.write_array(buf, w["b3"])
    _with_zeros_member(tmp_path / "m.npz", "b3.npy", buf.getvalue())
    with allocation_peak() as peak, pytest.raises(ModelFileError, match=r"b3 holds more data than its header declares"):
        load_model(tmp_path / "m.npz")
    assert peak[0] < 8 << 20, f"{peak[0] / 2**20:.1f} MiB allocated while refusing the file"


def test_weights_that_overflow_are_refused_naming_the_file(tmp_path: Path, rng: np.random.Generator) -> None:
    """Finding 4: every weight finite, W1 = 3e38: the forward pass gives NaN, which printed as a result."""
    w = random_weights(rng)
    w["W1"] = np.full(SHAPES["W1"], 3e38, np.float32)
    _save_raw(tmp_path / "huge.npz", w)
    with pytest.raises(ModelFileError, match="huge.npz: the network's output is not finite"):
        load_model(tmp_path / "huge.npz")
    m = Model(random_weights(rng))
    with pytest.raises(ModelFileError, match="^weights: the network's output is not finite"):
        m.check_output(np.array([[np.nan] * 10], np.float32))
    m.weights["W1"][:] = 3e38  # past the load-time probe: overflow on this input only is still said once,
    with warnings.catch_warnings():  # by check_output, not by NumPy's RuntimeWarning tied to no file
        warnings.simplefilter("error")
        with pytest.raises(ModelFileError, match="output is not finite"):
            m.check_output(m.forward(np.ones((1, 784), np.float32)))


def test_weights_that_are_not_arrays_are_model_errors(rng: np.random.Generator) -> None:
    """Finding 8: Model(weights) with a list for an array was an AttributeError."""
    w = random_weights(rng)
    with pytest.raises(ModelFileError, match="W2 is a list, expected a NumPy array"):
        Model({**w, "W2": w["W2"].tolist()})


def test_card_nested_deeply_is_a_model_file_error(tmp_path: Path, rng: np.random.Generator) -> None:
    """Finding 8: a card nested 100,000 levels gave RecursionError (exit 3)."""
    Model(random_weights(rng)).save(tmp_path / "m.npz")
    (tmp_path / "m.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ModelFileError, match="nested 100000 levels deep"):
        load_model(tmp_path / "m.npz")


def test_fortran_order_and_big_endian_arrays_load(tmp_path: Path, rng: np.random.Generator) -> None:
    w = random_weights(rng)
    odd = {**w, "W1": np.asfortranarray(w["W1"]), "W2": w["W2"].astype(">f4")}
    _save_raw(tmp_path / "m.npz", odd)
    m = load_model(tmp_path / "m.npz")
    for k in SHAPES:
        np.testing.assert_array_equal(m[k], w[k])
        assert m[k].dtype == np.float32 and m[k].flags.c_contiguous


def test_a_mangled_npy_header_is_a_model_file_error(tmp_path: Path, rng: np.random.Generator) -> None:
    """Found by the fuzz test (seed 3, case 1653): NumPy parses a header that is not a Python
    literal with tokenize, whose TokenError escaped as an internal error."""
    w = random_weights(rng)
    _save_raw(tmp_path / "m.npz", {k: v for k, v in w.items() if k != "W2"})
    text = "{'descr': '<f4', 'fortran_order': False, 'shape': (100, 100"  # never closed
    text = text + " " * (127 - 10 - len(text)) + "\n"
    header = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")
    with zipfile.ZipFile(tmp_path / "m.npz", "a") as zf:
        zf.writestr("W2.npy", header + w["W2"].tobytes())
    with pytest.raises(ModelFileError, match=r"m.npz: not a readable .npz model file \(TokenError"):
        load_model(tmp_path / "m.npz")


def test_a_python2_header_loads_without_a_warning(tmp_path: Path, rng: np.random.Generator) -> None:
    """Found by the fuzz test (seed 20, case 2581 of 3000): a header NumPy must re-parse as
    Python 2 text ("100L") loads, but NumPy's UserWarning about it reached stderr, tied to no file."""
    w = random_weights(rng)
    _save_raw(tmp_path / "m.npz", {k: v for k, v in w.items() if k != "b1"})
    text = "{'descr': '<f4', 'fortran_order': False, 'shape': (100L,), }"
    text = text + " " * (127 - 10 - len(text)) + "\n"
    header = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")
    with zipfile.ZipFile(tmp_path / "m.npz", "a") as zf:
        zf.writestr("b1.npy", header + w["b1"].tobytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(load_model(tmp_path / "m.npz")["b1"], w["b1"])


def test_a_model_that_is_neither_a_model_nor_a_path_is_named():
    from gemmpad.runtime.classifier import Classifier

    for wrong in (7, 3.5, ["models/mnist-mlp.npz"]):
        with pytest.raises(ModelFileError, match="a model is a Model or a file path, not"):
            Classifier(model=wrong)


def test_one_accuracy_for_training_fine_tuning_and_the_benchmark() -> None:
    """gemmpad.runtime.model.accuracy replaced three copies (train, finetune, bench train): the
    same figure from weights or a Model, whatever the chunk size, and NaN with nothing to read."""
    rng = np.random.default_rng(41)
    w = {k: rng.normal(0, 0.3, s).astype(np.float32) for k, s in SHAPES.items()}
    x = rng.random((257, 784), dtype=np.float32)
    y = Model(w).forward(x).argmax(1)
    y[:57] = (y[:57] + 1) % 10  # 57 of 257 read otherwise
    assert accuracy(w, x, y) == accuracy(Model(w), x, y, batch=10) == pytest.approx(200 / 257)
    assert np.isnan(accuracy(w, x[:0], y[:0]))
