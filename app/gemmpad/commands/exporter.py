"""`gemmpad export --onnx`: our MLP out, as an ONNX file any runtime can read.

The graph is the model's own formula and nothing else: three Gemm nodes, Relu between
them and a Softmax, on a [batch, 784] float input. What the input must be (gemmpad's
preprocessing: 28x28 in [0, 1], ink bright, centred by mass) cannot be expressed as ONNX
nodes without shipping the preprocessor, so it travels in the file's metadata and doc
string, beside the model card's figures.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from gemmpad import __version__
from gemmpad.commands.args import output_path
from gemmpad.errors import OutputFileError, require
from gemmpad.inputs.files import check_output_file, refuse_existing, write_bytes
from gemmpad.runtime.model import Model, load_model

OPSET = 17  # ONNX 1.12 (2022) and newer: every runtime of the last years reads it
PREPROCESS = ("gemmpad.inputs.preprocess: grey image -> ink bright, cropped to the ink, scaled into a 20x20 box keeping "
              "the aspect ratio, placed by centre of mass in 28x28, values in [0,1], flattened row-major")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--onnx", required=True, type=output_path, metavar="PATH", help="the ONNX file to write")
    parser.add_argument("--model", default=None, help="model .npz file (default: the shipped model)")
    parser.add_argument("--force", action="store_true", help="replace PATH if it exists")


def run(args: argparse.Namespace) -> int:
    require("onnx", "gemmpad export", "onnx")  # first: without it, nothing else the command checks can matter
    out = check_output_file(args.onnx, "--onnx", {".onnx"})
    refuse_existing([out], "--onnx", force=args.force, error=OutputFileError)
    model = load_model(args.model)
    write_bytes(out, to_onnx(model))
    print(f"wrote {out}: {'-'.join(map(str, model.layers))} MLP, input 'image28' [batch, 784] float32, "
          f"output 'probs' [batch, 10]; the preprocessing it expects is in its metadata")
    return 0


def to_onnx(model: Model) -> bytes:
    """The serialised ONNX model of `model` (checked by onnx.checker)."""
    require("onnx", "exporting ONNX", "onnx")
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = model.weights
    inits = [numpy_helper.from_array(np.ascontiguousarray(w[k], dtype=np.float32), k) for k in w]
    nodes = [
        helper.make_node("Gemm", ["image28", "W1", "b1"], ["z1"], name="layer1"),
        helper.make_node("Relu", ["z1"], ["h1"]),
        helper.make_node("Gemm", ["h1", "W2", "b2"], ["z2"], name="layer2"),
        helper.make_node("Relu", ["z2"], ["h2"]),
        helper.make_node("Gemm", ["h2", "W3", "b3"], ["logits"], name="layer3"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    n_in, n_out = model.layers[0], model.layers[-1]
    graph = helper.make_graph(
        nodes, "gemmpad-mlp",
        [helper.make_tensor_value_info("image28", TensorProto.FLOAT, ["batch", n_in])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", n_out])],
        initializer=inits,
    )
    card = model.card if isinstance(model.card, dict) else {}
    onnx_model = helper.make_model(graph, producer_name="gemmpad", producer_version=__version__,
                                   opset_imports=[helper.make_opsetid("", OPSET)],
                                   doc_string=f"{card.get('architecture', 'MLP')}. Input: {PREPROCESS}.")
    onnx_model.ir_version = 8  # what opset 17 needs; older onnxruntime builds refuse newer IR versions
    meta = {
        "gemmpad_version": __version__,
        "architecture": str(card.get("architecture", "-".join(map(str, model.layers)) + " MLP")),
        "input": str(card.get("input", PREPROCESS)),
        "preprocess": PREPROCESS,
        "results": json.dumps(_without_confusions(card.get("results", {})), sort_keys=True),
    }
    helper.set_model_props(onnx_model, meta)
    onnx.checker.check_model(onnx_model)
    return onnx_model.SerializeToString()


def _without_confusions(value: Any) -> Any:
    """The card's results without their confusion matrices (the bulk of them): whole JSON in the
    file's metadata, never cut (a cut at 4,096 characters once left invalid JSON there)."""
    if isinstance(value, dict):
        return {k: _without_confusions(v) for k, v in value.items() if k != "confusion"}
    if isinstance(value, list):
        return [_without_confusions(v) for v in value]
    return value
