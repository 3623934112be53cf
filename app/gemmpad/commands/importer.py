"""`gemmpad import`: your MLP in. A PyTorch state_dict or an ONNX file of a 784-h1-h2-10
ReLU MLP becomes a gemmpad model file, so a network trained elsewhere runs on these kernels.

What a file holds is read, never run: torch files through `torch.load(weights_only=True)`
(tensors and plain containers only, no pickled code), ONNX files as a graph whose every
node must be one of the few a ReLU MLP is made of. Anything else is refused in one line
that says what was found. A network whose hidden layers are not 100 wide runs on the
layer-by-layer rungs (`gemmpad.runtime.classifier.LayerByLayer`); the fused kernels say why not.

The imported weights expect what the shipped model expects: `gemmpad.inputs.preprocess`'s
28x28 in [0, 1], ink bright. A network trained on normalised inputs ((x - mean) / std,
as most MNIST tutorials do) has that step folded into its first layer (--input-mean,
--input-std), so no kernel has to know about it.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import re
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad import __version__
from gemmpad.commands.args import output_path
from gemmpad.errors import ModelFileError, OutputFileError, require
from gemmpad.inputs.files import check_output_file, refuse_existing
from gemmpad.inputs.reads import read_input
from gemmpad.runtime import unsure
from gemmpad.runtime.model import LAYERS, MAX_HIDDEN, Model, fold_normalisation, network_format

MAX_IMPORT_BYTES = 512 << 20  # 784-4096-4096-10 in float32 is 80 MB; a cap keeps a hostile file bounded
# The normalisation's bounds, in the [0, 1] pixels the model reads: real ones lie well inside (MNIST's 0.1307 /
# 0.3081, [-1, 1]'s 0.5 / 0.5, a network fed 0-255 pixels 0 / 1/255 = 0.0039). A mean or std past 10 is in 0-255
# units, and a std of 1e-30 folds into a W1 that reads every image as one digit (float32 keeps no digit's detail).
MAX_INPUT_MEAN = 10.0
INPUT_STD = (1e-3, 10.0)
INPUT = ("gemmpad.inputs.preprocess output flattened row-major: 28x28 float32 in [0,1], ink bright (white digit on "
         "black), the digit's mass centred in a 20x20 box as MNIST does")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="FILE", help="a PyTorch state_dict (.pt/.pth, torch.save(model.state_dict())) "
                        "or an ONNX file of a 784-h1-h2-10 MLP with ReLU between its layers")
    parser.add_argument("--output", "-o", required=True, type=output_path, metavar="PATH", help="the model file to write (.npz; its card "
                        "is written beside it as .json)")
    parser.add_argument("--input-mean", type=float, default=0.0, metavar="M",
                        help="the mean your network's inputs were normalised with, e.g. 0.1307 (default 0: none)")
    parser.add_argument("--input-std", type=float, default=1.0, metavar="S",
                        help="the standard deviation they were divided by, e.g. 0.3081 (default 1: none)")
    parser.add_argument("--force", action="store_true", help="replace --output if it exists")


def run(args: argparse.Namespace) -> int:
    out = check_output_file(args.output, "--output")  # first: a directory or a device is that, whatever its suffix
    if out.suffix.lower() != ".npz":
        raise OutputFileError(f"--output: a model file ends in .npz, not {out.suffix or 'no suffix'}")
    unsure.refuse_card_clash(out, "--output", OutputFileError)
    check_output_file(out.with_suffix(".json"), "--output's card")
    refuse_existing([out, out.with_suffix(".json")], "--output", force=args.force, error=OutputFileError)
    model, card = import_file(args.source, args.input_mean, args.input_std)
    model.save(out, card)
    shape = "-".join(map(str, model.layers))
    runs = "every kernel" if model.standard else "the layer-by-layer kernels (the fused ones need 784-100-100-10)"
    print(f"wrote {out}: a {shape} MLP from {card['imported']['format']}; it runs on {runs}")
    print(f"  try it: gemmpad predict --model {out} IMAGE.png   or   gemmpad app --model {out}")
    return 0


def import_file(source: str | Path, input_mean: float = 0.0, input_std: float = 1.0) -> tuple[Model, dict[str, Any]]:
    """(model, card) from a PyTorch state_dict or ONNX file, the input normalisation folded in."""
    if not abs(input_mean) <= MAX_INPUT_MEAN:  # (NaN too)
        raise ModelFileError(f"--input-mean {input_mean}: must be between -{MAX_INPUT_MEAN:g} and {MAX_INPUT_MEAN:g}, "
                             "in the [0, 1] pixels gemmpad reads (MNIST's is 0.1307; 0-255 units: divide by 255)")
    if not INPUT_STD[0] <= input_std <= INPUT_STD[1]:
        raise ModelFileError(f"--input-std {input_std}: must be between {INPUT_STD[0]:g} and {INPUT_STD[1]:g}, in the "
                             "[0, 1] pixels gemmpad reads (MNIST's is 0.3081; a network fed 0-255 pixels: 1/255 = "
                             "0.0039)")
    p = Path(source)
    data = read_input(p, MAX_IMPORT_BYTES, ModelFileError, "network file")
    if not data:  # ONNX parses no bytes as an empty graph: "found 0 linear layers" would blame the network
        raise ModelFileError(f"{p}: the file is empty")
    kind = network_format(data)  # first: only a file that may be ONNX asks for the onnx package
    if kind is None:
        raise ModelFileError(f"{p}: not a PyTorch file and not an ONNX model (gemmpad imports a network saved with "
                             "torch.save(model.state_dict(), PATH) or exported to ONNX)")
    onnx_file = kind == "ONNX"
    layers = onnx_layers(data, str(p)) if onnx_file else torch_layers(data, str(p))
    weights = fold_normalisation(chain(layers, str(p)), input_mean, input_std)
    model = Model(weights=weights, source=str(p))  # validates shapes, finiteness, and overflow on probe inputs
    shape = "-".join(map(str, model.layers))
    card: dict[str, Any] = {
        "name": p.stem,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "architecture": f"{shape} MLP, ReLU, softmax: softmax(relu(relu(x@W1+b1)@W2+b2)@W3+b3)",
        "input": INPUT + (f"; the normalisation (x-{input_mean})/{input_std} is folded into W1/b1"
                          if (input_mean, input_std) != (0.0, 1.0) else ""),
        "imported": {"file": p.name, "sha256": hashlib.sha256(data).hexdigest(),
                     "format": "ONNX" if onnx_file else "PyTorch state_dict", "gemmpad": __version__},
        "results": {},
        "notes": "imported, not measured here: `gemmpad eval --model FILE --pendigits` or `gemmpad eval --model "
                 "FILE DIR` measures it on real writers",
    }
    return model, card


Layer = tuple[np.ndarray, np.ndarray]  # (W [in, out], b [out]) as y = x @ W + b
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def chain(layers: list[Layer], source: str) -> dict[str, np.ndarray]:
    """The six arrays of a 784-h1-h2-10 network, or ModelFileError saying which layer does not fit."""
    if len(layers) != 3:
        raise ModelFileError(f"{source}: found {len(layers)} linear layers; gemmpad imports an MLP of exactly 3 "
                             "(784 -> h1 -> h2 -> 10)")
    n_in = LAYERS[0]
    for i, (w, b) in enumerate(layers, start=1):
        if w.ndim != 2 or w.shape[0] != n_in or b.shape != (w.shape[1],):
            raise ModelFileError(f"{source}: layer {i} maps {w.shape[0] if w.ndim == 2 else w.shape} inputs with bias "
                                 f"{b.shape}; expected {n_in} inputs (784 -> h1 -> h2 -> 10)")
        n_in = w.shape[1]
    if n_in != LAYERS[-1]:
        raise ModelFileError(f"{source}: the last layer has {n_in} outputs; a digit reader has 10")
    names = ("W1", "b1", "W2", "b2", "W3", "b3")
    flat = [a for layer in layers for a in layer]
    hidden = max(layers[0][0].shape[1], layers[1][0].shape[1])
    if hidden > MAX_HIDDEN:
        raise ModelFileError(f"{source}: a hidden layer has {hidden} units; gemmpad runs 1 to {MAX_HIDDEN}")
    return {k: np.ascontiguousarray(a, dtype=np.float32) for k, a in zip(names, flat)}


# ----------------------------------------------------------------------- PyTorch
def torch_layers(data: bytes, source: str) -> list[Layer]:
    """The Linear layers of a state_dict, in the order they were saved (nn.Sequential's order)."""
    require("torch", "importing a PyTorch file", "torch", "or export your network to ONNX and import that")
    import torch

    try:
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch reports a pickled module, a bad zip or a truncated file with many types
        text = _ANSI.sub("", str(exc)).strip()  # torch's message carries terminal colour codes
        if text.startswith("Weights only load failed"):  # its long advice on unpickling, for a whole saved model
            why = "it holds pickled Python objects, not only tensors: a whole model saved with torch.save(model)"
        else:
            first = text.splitlines()[0] if text else type(exc).__name__
            why = first if len(first) <= 200 else first[:197] + "..."
        raise ModelFileError(f"{source}: not a PyTorch state_dict that can be read safely ({why}); save "
                             "it with torch.save(model.state_dict(), PATH)") from None
    if isinstance(state, dict):
        for key in ("state_dict", "model_state_dict", "model"):  # checkpoints wrap it
            if isinstance(state.get(key), dict):
                state = state[key]
                break
    if not isinstance(state, dict) or not state:
        raise ModelFileError(f"{source}: holds a {type(state).__name__}, not a state_dict (a dict of tensors)")
    tensors = {str(k): v for k, v in state.items() if isinstance(v, torch.Tensor)}
    weights = [k for k, v in tensors.items() if k.endswith("weight") and v.ndim == 2]
    layers = []
    for key in weights:
        bias_key = key[: -len("weight")] + "bias"
        if bias_key not in tensors:
            raise ModelFileError(f"{source}: {key} has no bias {bias_key}; gemmpad's layers are x @ W + b")
        w, b = (tensors[k].detach().to(torch.float64).numpy() for k in (key, bias_key))
        layers.append((w.T, b))  # nn.Linear stores W as [out, in]
    other = [k for k, v in tensors.items() if v.ndim not in (1, 2) or (v.ndim == 2 and k not in weights)]
    if other:
        raise ModelFileError(f"{source}: tensors {other[:3]} are not a linear layer's weight or bias; gemmpad "
                             "imports an MLP of 3 nn.Linear layers with ReLU between them")
    return layers


# -------------------------------------------------------------------------- ONNX
_PASS_THROUGH = {"Identity", "Flatten", "Reshape", "Dropout"}  # no arithmetic on a [B, 784] input
_OUTPUT_OPS = {"Softmax", "LogSoftmax"}  # the argmax and gemmpad's own softmax read the same digit


def onnx_layers(data: bytes, source: str) -> list[Layer]:
    """The layers of an ONNX MLP: Gemm (or MatMul then Add) nodes with constant weights, Relu
    between them, nothing else but shape-only nodes at the start and a softmax at the end."""
    require("onnx", "importing an ONNX file", "onnx")
    import onnx

    try:
        graph = onnx.load_model_from_string(data).graph
    except Exception:  # protobuf's DecodeError and friends: network_format saw a model's fields, they do not parse
        raise ModelFileError(f"{source}: not a readable ONNX model (damaged or truncated); "
                             "export or copy it again") from None
    consts = {t.name: _array(t, source) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute:
            consts[node.output[0]] = _array(node.attribute[0].t, source)
    layers: list[Layer] = []
    pending: np.ndarray | None = None  # a MatMul's W waiting for its Add
    relus = 0
    for i, node in enumerate(n for n in graph.node if n.op_type != "Constant"):
        op = node.op_type
        where = f"{source}: node {i} ({op}{f' {node.name!r}' if node.name else ''})"
        if op in _PASS_THROUGH and not layers and pending is None or op in _OUTPUT_OPS and len(layers) == 3:
            continue
        if op == "Gemm":
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
                raise ModelFileError(f"{where}: a Gemm with transA, alpha or beta is not a plain linear layer")
            w = _const(consts, node.input, 1, where)
            w = w.T if attrs.get("transB", 0) else w
            b = _const(consts, node.input, 2, where) if len(node.input) > 2 and node.input[2] else np.zeros(1)
            layers.append((w, _bias(b, w, where)))
        elif op == "MatMul" and pending is None:
            pending = _const(consts, node.input, 1, where)
        elif op == "Add" and pending is not None:
            b = next((consts[n] for n in node.input if n in consts), None)
            if b is None:
                raise ModelFileError(f"{where}: the bias of a MatMul must be a constant")
            layers.append((pending, _bias(b, pending, where)))
            pending = None
        elif op == "Relu" and pending is None and len(layers) in (1, 2) and relus < len(layers):
            relus += 1
        else:
            raise ModelFileError(f"{where}: not part of a 784-h1-h2-10 ReLU MLP (Gemm or MatMul+Add, Relu between "
                                 "layers, an optional Softmax at the end)")
    if pending is not None:
        layers.append((pending, np.zeros(pending.shape[1])))
    if len(layers) == 3 and relus != 2:
        raise ModelFileError(f"{source}: found {relus} Relu between the 3 layers; gemmpad's MLP has one after each "
                             "hidden layer")
    return layers


def _array(tensor: Any, source: str) -> np.ndarray:
    """An ONNX tensor's values in float64, or ModelFileError. What is imported is the file named: a
    tensor whose values ONNX keeps in another file (external data, at a path the model names, which
    onnx reads from the current folder) is refused, not looked for; one whose bytes do not fit its
    shape or type (protobuf parses it) is damage, said as such rather than as numpy's reshape error."""
    from onnx import TensorProto, numpy_helper

    if tensor.data_location == TensorProto.EXTERNAL:
        raise ModelFileError(f"{source}: its tensor {tensor.name!r} keeps its values in another file (ONNX external "
                             "data); gemmpad imports one file: make it one with onnx.save(onnx.load(FILE), 'one.onnx')")
    try:
        return numpy_helper.to_array(tensor).astype(np.float64)
    except Exception:  # ValueError (a shape its bytes do not fill), KeyError (a type number ONNX lacks), ...
        raise ModelFileError(f"{source}: not a readable ONNX model (damaged or truncated): its tensor {tensor.name!r} "
                             "does not hold what its shape and type say; export or copy it again") from None


def _bias(b: np.ndarray, w: np.ndarray, where: str) -> np.ndarray:
    """A layer's bias as [out]: ONNX broadcasts a scalar or a [1, out] row; anything else does not fit."""
    out = w.shape[-1] if w.ndim == 2 else 0
    if b.size not in (1, out):
        raise ModelFileError(f"{where}: a bias of shape {b.shape} does not fit a weight of shape {w.shape}")
    return np.broadcast_to(b.reshape(-1), (out,)).copy()


def _const(consts: dict[str, np.ndarray], inputs: Any, index: int, where: str) -> np.ndarray:
    name = inputs[index] if len(inputs) > index else ""
    if name not in consts:
        raise ModelFileError(f"{where}: its weight {name!r} is not a constant (an initializer)")
    return consts[name]
