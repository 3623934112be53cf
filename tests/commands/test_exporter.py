"""`gemmpad export --onnx`: the shipped model as ONNX, run by onnxruntime against float64."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from gemmpad.commands import cli
from gemmpad.commands.exporter import to_onnx
from gemmpad.runtime.model import load_model

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def probs64(weights: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    h = np.maximum(x @ w["W1"] + w["b1"], 0)
    z = np.maximum(h @ w["W2"] + w["b2"], 0) @ w["W3"] + w["b3"]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_onnxruntime_reads_the_exported_model_as_float64_does(rng: np.random.Generator) -> None:
    model = load_model()
    session = ort.InferenceSession(to_onnx(model), providers=["CPUExecutionProvider"])
    for batch in (1, 7, 256):
        x = rng.random((batch, 784), dtype=np.float32)
        got = session.run(None, {"image28": x})[0]
        want = probs64(model.weights, x.astype(np.float64))
        assert np.max(np.abs(got - want) / np.maximum(want, 1e-6)) < 1e-4


def test_the_file_says_what_input_it_expects() -> None:
    proto = onnx.load_model_from_string(to_onnx(load_model()))
    meta = {p.key: p.value for p in proto.metadata_props}
    assert "ink bright" in meta["input"] and "28x28" in meta["preprocess"]
    results = json.loads(meta["results"])  # whole JSON, however long the card's results grow
    card = load_model().card["results"]
    assert results["mnist_test_accuracy"] == card["mnist_test_accuracy"]
    writers = "real_writers" if card.get("real_writers") else "cross_validation"  # --folds: the folds' figures
    assert results[writers]["per_digit"] == card[writers]["per_digit"]
    assert "confusion" not in meta["results"]  # the bulk stays in the card
    assert "gemmpad.inputs.preprocess" in proto.doc_string


def test_the_export_command_writes_once_and_refuses_to_replace(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "m.onnx"
    assert cli.main(["export", "--onnx", str(out)]) == 0
    onnx.checker.check_model(onnx.load(str(out)))
    assert cli.main(["export", "--onnx", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"gemmpad: error: --onnx: {out} already exists; pass --force to replace it"
    assert cli.main(["export", "--onnx", str(tmp_path / "m.txt")]) == 2  # the format comes from the suffix
    assert not (tmp_path / "m.txt").exists()


def test_the_export_command_names_a_missing_onnx_first(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Without onnx, export loaded --model and checked --onnx first: a user was sent to mend those,
    then told that the command could not run here at all."""
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    assert cli.main(["export", "--onnx", str(tmp_path / "m.onnx"), "--model", str(tmp_path / "absent.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gemmpad: error: gemmpad export needs onnx, which cannot be imported here")
    assert "absent" not in err and err.strip().endswith("pip install onnx") and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("onnx_installed", [True, False])
def test_an_onnx_file_in_a_missing_folder_is_refused_and_no_folder_made(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       onnx_installed: bool) -> None:
    """`gemmpad export --onnx new/dir/c.onnx` made new/dir/ (a typo in a folder's name became a new
    tree) and wrote there; without onnx it left new/dir/ behind empty. The folder must exist, as for
    cp or gcc -o: one line naming it, before anything is loaded or written."""
    if not onnx_installed:
        monkeypatch.setitem(sys.modules, "onnx", None)  # import now raises ImportError, as when not installed
    out = tmp_path / "new" / "dir" / "c.onnx"
    with pytest.raises(SystemExit) as stop:
        cli.main(["export", "--onnx", str(out)])
    assert stop.value.code == 2
    assert capsys.readouterr().err == (f"gemmpad export: error: argument --onnx: {out}: folder {out.parent} does not "
                                       "exist; create it first (see gemmpad export --help)\n")
    assert list(tmp_path.iterdir()) == []
