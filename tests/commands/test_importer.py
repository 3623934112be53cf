"""`gemmpad import`: a PyTorch or ONNX MLP in, checked against torch and onnxruntime in float64."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from gemmpad.commands import cli
from gemmpad.runtime.classifier import Classifier
from gemmpad.errors import GemmpadError, ModelFileError
from gemmpad.commands.exporter import to_onnx
from gemmpad.commands.importer import import_file
from gemmpad.runtime.model import load_model

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")


def torch_mlp(h1: int, h2: int, seed: int = 0) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(784, h1), torch.nn.ReLU(), torch.nn.Linear(h1, h2), torch.nn.ReLU(),
                               torch.nn.Linear(h2, 10))


def torch_probs64(net: torch.nn.Sequential, x: np.ndarray) -> np.ndarray:
    """The reference: torch's own network, in float64."""
    with torch.no_grad():
        return torch.softmax(net.double()(torch.tensor(x, dtype=torch.float64)), dim=1).numpy()


def max_rel_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-6)))


@pytest.mark.parametrize(("h1", "h2"), [(100, 100), (64, 32), (1, 7), (300, 129)])
def test_a_torch_state_dict_reads_as_torch_does(tmp_path: Path, rng: np.random.Generator, h1: int, h2: int) -> None:
    net = torch_mlp(h1, h2)
    torch.save(net.state_dict(), tmp_path / "net.pt")
    model, card = import_file(tmp_path / "net.pt")
    assert model.layers == (784, h1, h2, 10) and model.standard == ((h1, h2) == (100, 100))
    x = rng.random((33, 784), dtype=np.float32)
    want = torch_probs64(net, x)
    for backend in ("numpy", "cpu"):  # cpu: cpu.mlp_sparse for 100-100, else the top CPU GEMM rung
        clf = Classifier(model, backend=backend)
        assert max_rel_error(clf.predict(x), want) < 1e-4, (backend, clf.kernel)
    assert card["imported"]["format"] == "PyTorch state_dict" and "784" in card["architecture"]


def test_other_widths_run_on_every_gemm_rung_and_the_fused_kernels_say_why_not(tmp_path: Path,
                                                                               rng: np.random.Generator) -> None:
    net = torch_mlp(48, 20)
    torch.save(net.state_dict(), tmp_path / "net.pt")
    model, _ = import_file(tmp_path / "net.pt")
    x = rng.random((5, 784), dtype=np.float32)
    want = torch_probs64(net, x)
    clf = Classifier(model, backend="cpu")
    assert "cpu.mlp_sparse" not in clf.kernels()
    for kernel in clf.kernels():
        clf.configure(kernel=kernel)
        assert max_rel_error(clf.predict(x), want) < 1e-4, kernel
    with pytest.raises(GemmpadError, match=r"784-100-100-10.*784-48-20-10"):
        clf.configure(kernel="cpu.mlp_sparse")


def test_normalised_inputs_are_folded_into_the_first_layer(tmp_path: Path, rng: np.random.Generator) -> None:
    """A tutorial network trained on (x - 0.1307) / 0.3081 reads raw [0, 1] inputs once imported with both."""
    net = torch_mlp(100, 100, seed=3)
    torch.save(net.state_dict(), tmp_path / "net.pt")
    model, card = import_file(tmp_path / "net.pt", input_mean=0.1307, input_std=0.3081)
    x = rng.random((17, 784), dtype=np.float32)
    want = torch_probs64(net, (x.astype(np.float64) - 0.1307) / 0.3081)
    assert max_rel_error(Classifier(model, backend="numpy").predict(x), want) < 1e-4
    assert "folded" in card["input"]


def test_a_checkpoint_dict_wrapping_the_state_dict_is_read(tmp_path: Path) -> None:
    net = torch_mlp(100, 100)
    torch.save({"epoch": 3, "model_state_dict": net.state_dict()}, tmp_path / "ckpt.pth")
    assert import_file(tmp_path / "ckpt.pth")[0].standard


@pytest.mark.parametrize(("make", "message"), [
    (lambda: torch.nn.Sequential(torch.nn.Linear(784, 50), torch.nn.ReLU(), torch.nn.Linear(50, 10)).state_dict(),
     "found 2 linear layers"),
    (lambda: torch.nn.Sequential(torch.nn.Linear(784, 50), torch.nn.Linear(50, 50), torch.nn.Linear(50, 5)).state_dict(),
     "last layer has 5 outputs"),
    (lambda: torch.nn.Sequential(torch.nn.Linear(700, 50), torch.nn.Linear(50, 50), torch.nn.Linear(50, 10)).state_dict(),
     "layer 1 maps 700 inputs"),
    (lambda: {"conv.weight": torch.zeros(4, 1, 3, 3), "conv.bias": torch.zeros(4)}, "not a linear layer"),
    (lambda: torch.nn.Linear(784, 10),  # a pickled module: torch's advice, in colour, was cut off mid-sentence
     r"not a PyTorch state_dict that can be read safely \(it holds pickled Python objects, not only tensors: a whole "
     r"model saved with torch.save\(model\)\); save it with torch.save\(model.state_dict\(\), PATH\)$"),
    (lambda: [1, 2, 3], "not a state_dict"),
])
def test_what_is_not_an_mlp_state_dict_is_refused_in_one_line(tmp_path: Path, make, message: str) -> None:
    torch.save(make(), tmp_path / "x.pt")
    with pytest.raises(ModelFileError, match=message) as info:
        import_file(tmp_path / "x.pt")
    assert "\n" not in str(info.value)


def test_non_finite_or_overflowing_weights_are_refused(tmp_path: Path) -> None:
    net = torch_mlp(100, 100)
    with torch.no_grad():
        net[0].weight[3, 5] = float("nan")
    torch.save(net.state_dict(), tmp_path / "nan.pt")
    with pytest.raises(ModelFileError, match=f"^{tmp_path / 'nan.pt'}: W1 contains NaN or Inf$"):  # the file, not "weights"
        import_file(tmp_path / "nan.pt")


@pytest.mark.parametrize("name", ["empty.pt", "empty.onnx"])
def test_an_empty_file_is_called_empty(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"")  # it was "found 0 linear layers": ONNX reads no bytes as an empty graph
    with pytest.raises(ModelFileError, match=f"^{tmp_path / name}: the file is empty$"):
        import_file(tmp_path / name)


def test_truncated_and_foreign_files_are_refused(tmp_path: Path) -> None:
    buf = io.BytesIO()
    torch.save(torch_mlp(100, 100).state_dict(), buf)
    (tmp_path / "cut.pt").write_bytes(buf.getvalue()[:5000])
    with pytest.raises(ModelFileError, match="cut.pt"):
        import_file(tmp_path / "cut.pt")
    (tmp_path / "junk.onnx").write_bytes(b"\x08\x07garbage" * 50)
    with pytest.raises(ModelFileError, match="junk.onnx"):
        import_file(tmp_path / "junk.onnx")


@pytest.mark.parametrize("onnx_installed", [True, False])
def test_a_file_of_neither_kind_is_refused_before_any_package_is_asked_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx_installed: bool) -> None:
    """A PNG (renamed c.pt, or as it is) was taken for ONNX: "importing an ONNX file needs onnx, which cannot be
    imported here" without onnx, "not an ONNX model (and not a PyTorch file): DecodeError" with it. Its bytes
    are neither, and say so in one line; only a file that may be ONNX asks for the onnx package."""
    from PIL import Image

    (tmp_path / "m.onnx").write_bytes(to_onnx(load_model()))
    if not onnx_installed:
        monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError, as when not installed
    png = io.BytesIO()
    Image.new("L", (28, 28)).save(png, "PNG")
    for name in ("c.pt", "c.png"):
        (tmp_path / name).write_bytes(png.getvalue())
        with pytest.raises(ModelFileError) as info:
            import_file(tmp_path / name)
        assert str(info.value) == (f"{tmp_path / name}: not a PyTorch file and not an ONNX model (gemmpad imports a "
                                   "network saved with torch.save(model.state_dict(), PATH) or exported to ONNX)")
    if not onnx_installed:
        with pytest.raises(GemmpadError, match="^importing an ONNX file needs onnx, which cannot be imported here"):
            import_file(tmp_path / "m.onnx")


# -------------------------------------------------------------------------------- ONNX
def test_our_onnx_export_imports_back_bit_for_bit(tmp_path: Path) -> None:
    shipped = load_model()
    (tmp_path / "m.onnx").write_bytes(to_onnx(shipped))
    model, card = import_file(tmp_path / "m.onnx")
    assert card["imported"]["format"] == "ONNX"
    for k, v in shipped.weights.items():
        np.testing.assert_array_equal(model.weights[k], v)


def _matmul_add_mlp(w: dict[str, np.ndarray], extra: list | None = None) -> bytes:
    """An ONNX MLP written the way torch.onnx writes some: Flatten, then MatMul + Add per layer."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Flatten", ["x"], ["f"])]
    prev = "f"
    for i in (1, 2, 3):
        nodes += [helper.make_node("MatMul", [prev, f"W{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"z{i}"])]
        prev = f"z{i}"
        if i < 3:
            nodes.append(helper.make_node("Relu", [prev], [f"h{i}"]))
            prev = f"h{i}"
    nodes += (extra or []) + [helper.make_node("LogSoftmax", [prev], ["y"], axis=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, 28, 28])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 10])],
                              initializer=[numpy_helper.from_array(v, k) for k, v in w.items()])
    return helper.make_model(graph).SerializeToString()


def test_an_onnx_matmul_add_mlp_reads_as_onnxruntime_does(tmp_path: Path, rng: np.random.Generator) -> None:
    ort = pytest.importorskip("onnxruntime")
    w = {"W1": rng.normal(0, 0.1, (784, 40)), "b1": rng.normal(0, 0.1, 40), "W2": rng.normal(0, 0.1, (40, 24)),
         "b2": rng.normal(0, 0.1, 24), "W3": rng.normal(0, 0.1, (24, 10)), "b3": rng.normal(0, 0.1, 10)}
    w = {k: v.astype(np.float32) for k, v in w.items()}
    data = _matmul_add_mlp(w)
    (tmp_path / "net.onnx").write_bytes(data)
    model, _ = import_file(tmp_path / "net.onnx")
    x = rng.random((9, 784), dtype=np.float32)
    log_probs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x.reshape(9, 1, 28, 28)})[0]
    assert max_rel_error(Classifier(model, backend="cpu").predict(x), np.exp(log_probs.astype(np.float64))) < 1e-4


def test_an_onnx_file_damaged_inside_is_said_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A model's start is ONNX's, but its graph does not parse (a byte gone wrong inside it): the line
    ended in protobuf's "DecodeError". It says the file is damaged, exit 2, and nothing is written."""
    data = bytearray(to_onnx(load_model()))
    graph = onnx.load_model_from_string(bytes(data)).graph.SerializeToString()
    data[bytes(data).index(graph)] = 0x0F  # the graph's first field key: field 1 of wire type 7, which no field has
    (tmp_path / "x.onnx").write_bytes(data)
    assert cli.main(["import", str(tmp_path / "x.onnx"), "-o", str(tmp_path / "m.npz")]) == 2
    assert capsys.readouterr().err == (f"gemmpad: error: {tmp_path / 'x.onnx'}: not a readable ONNX model (damaged "
                                       "or truncated); export or copy it again\n")
    assert list(tmp_path.iterdir()) == [tmp_path / "x.onnx"]


@pytest.mark.parametrize("keep", [0.2, 0.5, 0.99])
def test_a_truncated_onnx_file_is_said_to_be_damaged(tmp_path: Path, capsys: pytest.CaptureFixture, keep: float) -> None:
    """An ONNX export cut short inside its graph (a copy interrupted) was "not a PyTorch file and not an
    ONNX model": its top-level fields no longer filled the file. It is ONNX, damaged, in one line."""
    data = to_onnx(load_model())
    (tmp_path / "x.onnx").write_bytes(data[: int(len(data) * keep)])
    assert cli.main(["import", str(tmp_path / "x.onnx"), "-o", str(tmp_path / "m.npz")]) == 2
    assert capsys.readouterr().err == (f"gemmpad: error: {tmp_path / 'x.onnx'}: not a readable ONNX model (damaged "
                                       "or truncated); export or copy it again\n")
    assert list(tmp_path.iterdir()) == [tmp_path / "x.onnx"]


@pytest.mark.parametrize("damage", ["shape", "type"])
def test_an_onnx_tensor_that_cannot_be_read_is_said_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                    damage: str) -> None:
    """A weight whose bytes do not fill its shape, or of a type ONNX has no number for, parses as protobuf:
    the import ended in an internal error (ValueError "cannot reshape", KeyError 99), exit 3."""
    model = onnx.load_model_from_string(to_onnx(load_model()))
    if damage == "shape":
        model.graph.initializer[0].dims[0] += 1
    else:
        model.graph.initializer[0].data_type = 99
    (tmp_path / "x.onnx").write_bytes(model.SerializeToString())
    assert cli.main(["import", str(tmp_path / "x.onnx"), "-o", str(tmp_path / "m.npz")]) == 2
    assert capsys.readouterr().err == (f"gemmpad: error: {tmp_path / 'x.onnx'}: not a readable ONNX model (damaged "
                                       "or truncated): its tensor 'W1' does not hold what its shape and type say; "
                                       "export or copy it again\n")
    assert list(tmp_path.iterdir()) == [tmp_path / "x.onnx"]


def test_an_onnx_model_with_its_weights_in_another_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """ONNX's external data keeps a tensor's values in a file the model names: the import read it from the
    current folder (an internal error elsewhere), a file the user never named. It asks for one file."""
    model = onnx.load_model_from_string(to_onnx(load_model()))
    onnx.save_model(model, str(tmp_path / "x.onnx"), save_as_external_data=True, location="x.data", size_threshold=0)
    for cwd in (tmp_path.parent, tmp_path):
        monkeypatch.chdir(cwd)
        assert cli.main(["import", str(tmp_path / "x.onnx"), "-o", str(tmp_path / "m.npz")]) == 2
        assert capsys.readouterr().err == (f"gemmpad: error: {tmp_path / 'x.onnx'}: its tensor 'W1' keeps its values "
                                           "in another file (ONNX external data); gemmpad imports one file: make it "
                                           "one with onnx.save(onnx.load(FILE), 'one.onnx')\n")
    assert sorted(tmp_path.iterdir()) == [tmp_path / "x.data", tmp_path / "x.onnx"]


def test_an_onnx_graph_with_other_operations_is_refused_naming_the_node(tmp_path: Path, rng: np.random.Generator) -> None:
    from onnx import helper

    w = {k: rng.normal(0, 0.1, s).astype(np.float32) for k, s in
         {"W1": (784, 8), "b1": (8,), "W2": (8, 8), "b2": (8,), "W3": (8, 10), "b3": (10,)}.items()}
    (tmp_path / "sig.onnx").write_bytes(_matmul_add_mlp(w, [helper.make_node("Sigmoid", ["z3"], ["s"], name="squash")]))
    with pytest.raises(ModelFileError, match=r"Sigmoid 'squash'.*not part of a 784-h1-h2-10 ReLU MLP"):
        import_file(tmp_path / "sig.onnx")


# --------------------------------------------------------------------------------- CLI
def test_the_import_command_writes_a_model_that_predict_reads(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    torch.save(torch_mlp(64, 32).state_dict(), tmp_path / "net.pt")
    out = tmp_path / "mine.npz"
    assert cli.main(["import", str(tmp_path / "net.pt"), "--output", str(out)]) == 0
    assert "784-64-32-10" in capsys.readouterr().out and load_model(out).layers == (784, 64, 32, 10)
    assert cli.main(["import", str(tmp_path / "net.pt"), "--output", str(out)]) == 2  # no silent replace
    assert capsys.readouterr().err.strip() == (f"gemmpad: error: --output: {out}, {out.with_suffix('.json')} already "
                                               "exist; pass --force to replace them")  # the card is in the way too
    assert cli.main(["import", str(tmp_path / "net.pt"), "--output", str(out), "--force"]) == 0


def test_a_normalisation_no_pixels_have_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--input-std 1e-30 wrote a model that read every image as "0 at 1.0000"; --input-mean 1e39 was refused as
    "b1 contains NaN or Inf"."""
    torch.save(torch_mlp(100, 100).state_dict(), tmp_path / "net.pt")
    for option, value, message in (("--input-std", "1e-30", "--input-std 1e-30: must be between 0.001 and 10"),
                                   ("--input-std", "0", "--input-std 0.0: must be between"),
                                   ("--input-std", "78.5", "0-255 pixels: 1/255"),  # 0-255 units
                                   ("--input-std", "nan", "--input-std nan: must be between"),
                                   ("--input-mean", "1e39", "--input-mean 1e+39: must be between -10 and 10"),
                                   ("--input-mean", "-inf", "--input-mean -inf: must be between")):
        assert cli.main(["import", str(tmp_path / "net.pt"), "-o", str(tmp_path / "q.npz"), f"{option}={value}"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == [tmp_path / "net.pt"]
    for mean, std in ((0.0, 1 / 255), (0.5, 0.5), (-10.0, 10.0)):  # a network fed 0-255 pixels, [-1, 1], the bounds
        assert import_file(tmp_path / "net.pt", mean, std)[0].layers == (784, 100, 100, 10)


def test_an_output_that_is_no_file_is_named_for_what_it_is(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """-o DIR and -o /dev/full said "a model file ends in .npz, not no suffix"."""
    torch.save(torch_mlp(100, 100).state_dict(), tmp_path / "net.pt")
    fifo = tmp_path / "fifo"  # stands in for /dev/full: a device is refused as a FIFO is
    os.mkfifo(fifo)
    for output, message in ((tmp_path, "is a directory; name a file"), (fifo, "not a regular file (a device"),
                            (tmp_path / "q", "a model file ends in .npz, not no suffix")):
        assert cli.main(["import", str(tmp_path / "net.pt"), "-o", str(output)]) == 2
        assert message in capsys.readouterr().err
