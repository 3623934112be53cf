"""The network's weights: loading, validating, saving, and the NumPy reference forward.

The file format is a plain .npz of six float32 arrays (see models/README.md),
loaded with allow_pickle=False so a model file can never run code.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
import struct
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from gemmpad.errors import ModelFileError
from gemmpad.inputs.files import atomic_path, atomic_paths, write_text
from gemmpad.inputs.reads import load_json, read_input
from gemmpad.terminal import printable

LAYERS = (784, 100, 100, 10)
MAX_HIDDEN = 4096  # an imported network's widest hidden layer; the shipped one has 100 units


def shapes(h1: int = LAYERS[1], h2: int = LAYERS[2]) -> dict[str, tuple[int, ...]]:
    """The six arrays of a 784-h1-h2-10 network. The shipped model and every fused kernel
    are 784-100-100-10; an imported network may have other hidden widths and then runs on
    the layer-by-layer kernels (see `Model.standard`)."""
    n_in, n_out = LAYERS[0], LAYERS[-1]
    return {"W1": (n_in, h1), "b1": (h1,), "W2": (h1, h2), "b2": (h2,), "W3": (h2, n_out), "b3": (n_out,)}


SHAPES: dict[str, tuple[int, ...]] = shapes()


def _hidden_widths(w1_shape: tuple[int, ...], w2_shape: tuple[int, ...], source: str) -> tuple[int, int]:
    """(h1, h2) as W1 and W2 declare them, each checked against 1..MAX_HIDDEN: a file cannot
    make us allocate a layer of a billion units."""
    if len(w1_shape) != 2 or len(w2_shape) != 2:
        raise ModelFileError(f"{source}: W1 and W2 must be matrices, got shapes {w1_shape} and {w2_shape}")
    h1, h2 = int(w1_shape[1]), int(w2_shape[1])
    for name, h in (("first", h1), ("second", h2)):
        if not 1 <= h <= MAX_HIDDEN:
            raise ModelFileError(f"{source}: the {name} hidden layer has {h} units; gemmpad runs 1 to {MAX_HIDDEN}")
    return h1, h2


def _shape_error(source: str, name: str, shape: tuple[int, ...], expected: tuple[int, ...]) -> ModelFileError:
    """`name` has the wrong shape. The hidden widths are read from W1's and W2's own columns, so
    their expected shape names that width rather than echoing the array's value back (a W1 stored
    transposed, (100, 784), was told "expected (784, 784)")."""
    free = {"W1": "first hidden width", "W2": "second hidden width"}
    want = f"({expected[0]}, {free[name]})" if name in free else str(expected)
    hint = " (stored transposed?)" if name in free and len(shape) == 2 and shape[1] == expected[0] else ""
    return ModelFileError(f"{source}: {name} has shape {shape}, expected {want}{hint}")


MODELS_DIR = Path(__file__).resolve().parents[1] / "models"


def default_model_path() -> Path:
    """The shipped model: installed inside the package, or models/ in a source checkout."""
    packaged = MODELS_DIR / "mnist-mlp.npz"
    if packaged.exists():
        return packaged
    return Path(__file__).resolve().parents[3] / "models" / "mnist-mlp.npz"


@dataclass
class Model:
    """softmax(relu(relu(x@W1+b1)@W2+b2)@W3+b3) for x in [0,1]^784, ink bright."""

    weights: dict[str, np.ndarray]
    card: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    source: str = ""  # what messages call weights with no path (an imported file): the file the user gave

    def __post_init__(self) -> None:
        validate(self.weights, source=self.name)
        # Finite weights can still overflow float32 on the way (W1 = 3e38): try blank, full and
        # random inputs now, so such a file is refused when loaded rather than answering "nan %"
        probe = np.random.default_rng(0).random((8, LAYERS[0]), dtype=np.float32)
        probe[0], probe[1] = 0.0, 1.0
        self.check_output(self.forward(probe))

    @property
    def name(self) -> str:
        """How messages name these weights: the file they came from, if any."""
        return str(self.path) if self.path is not None else self.source or "weights"

    def check_output(self, probs: np.ndarray) -> np.ndarray:
        """`probs`, or ModelFileError when any is NaN or Inf: the weights overflowed float32 on
        this input, and a NaN answer would otherwise read like a result."""
        if not np.all(np.isfinite(probs)):
            raise ModelFileError(f"{self.name}: the network's output is not finite (NaN or Inf): "
                                 "its weights are too large for float32 arithmetic")
        return probs

    def __getitem__(self, name: str) -> np.ndarray:
        return self.weights[name]

    @property
    def layers(self) -> tuple[int, int, int, int]:
        """(784, h1, h2, 10): the widths of this network's layers."""
        return (LAYERS[0], self.weights["W1"].shape[1], self.weights["W2"].shape[1], LAYERS[-1])

    @property
    def standard(self) -> bool:
        """True for 784-100-100-10, the shape the fused kernels and the native MLPs are built for."""
        return self.layers == LAYERS

    @property
    def trained_writers(self) -> list[int]:
        """The pendigits writers the card says training used, sorted; [] when the card does not
        say so in the form `gemmpad train` writes (a list of writer numbers)."""
        training = self.card.get("training") if isinstance(self.card, dict) else None
        writers = training.get("pendigits_writers") if isinstance(training, dict) else None
        if not isinstance(writers, list):
            return []
        return sorted({w for w in writers if isinstance(w, int) and not isinstance(w, bool)})

    def scores(self) -> list[str]:
        """What the model card says these weights scored, as short phrases for the app
        and `gemmpad info`, real writers first ("unseen writers 98.9 %", "MNIST test
        98.74 %", "drawn digits 99.8 %"); [] without a card. A model trained on every writer
        (`gemmpad train --folds`) reports its cross-validation's unseen writers."""
        results = self.card.get("results", {}) if isinstance(self.card, dict) else {}
        results = results if isinstance(results, dict) else {}
        real, drawn = results.get("real_writers"), results.get("drawn_accuracy")
        if not isinstance(real, dict):  # trained on every writer: they were unseen by the folds' models
            real = results.get("cross_validation")
        found = [("unseen writers", real.get("mean") if isinstance(real, dict) else None, 1),
                 ("MNIST test", results.get("mnist_test_accuracy"), 2),
                 ("drawn digits", drawn.get("all") if isinstance(drawn, dict) else None, 1)]
        return [f"{label} {100 * v:.{digits}f} %" for label, v, digits in found if _fraction(v)]

    def hidden(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The two hidden layers' activations [B, 100] (after ReLU) for inputs [B, 784].
        Overflow is not warned about here: check_output reports it, naming the file,
        where NumPy's RuntimeWarning would reach stderr tied to no file."""
        w = self.weights
        with np.errstate(over="ignore", invalid="ignore"):
            h1 = np.maximum(x @ w["W1"] + w["b1"], 0.0)
            return h1, np.maximum(h1 @ w["W2"] + w["b2"], 0.0)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Probabilities [B, 10] for inputs [B, 784]: the reference every backend matches."""
        w = self.weights
        with np.errstate(over="ignore", invalid="ignore"):
            return softmax(self.hidden(x)[1] @ w["W3"] + w["b3"])

    def save(self, path: str | os.PathLike[str], card: dict[str, Any] | None = None) -> None:
        """Write the .npz (and the .json card beside it when given) as one unit (files.atomic_paths):
        both are written before either is renamed, so a full disk leaves the old pair; the card
        goes in first and the weights last, and names the weights' hash, so a kill between the
        two renames leaves a pair that load_model refuses rather than one that misdescribes."""
        target = Path(path)
        buf = io.BytesIO()
        np.savez(buf, **{k: self.weights[k].astype(np.float32) for k in SHAPES})
        data = buf.getvalue()
        if card is None:
            with atomic_path(target) as tmp:
                tmp.write_bytes(data)
            return
        with atomic_paths(target.with_suffix(".json"), target) as (card_tmp, weights_tmp):
            card_tmp.write_bytes(_card_text(card, data).encode("utf-8"))
            weights_tmp.write_bytes(data)


def save_card(model_path: str | os.PathLike[str], card: dict[str, Any]) -> None:
    """Write (or rewrite) the card of the weights already saved at `model_path` (same name,
    .json), atomically, stamped with their hash (see Model.save)."""
    p = Path(model_path)
    write_text(p.with_suffix(".json"), _card_text(card, read_input(p, MAX_FILE_BYTES, ModelFileError, "model file")))


def _card_text(card: dict[str, Any], weights_file: bytes) -> str:
    """The card as written: `card` with CARD_HASH set to the SHA-256 of the weights file's bytes."""
    return json.dumps({**card, CARD_HASH: hashlib.sha256(weights_file).hexdigest()}, indent=2) + "\n"


def _fraction(value: Any) -> bool:
    """Whether a card's value is an accuracy: a number in [0, 1]. A hand-edited or hostile card
    holds anything (true, NaN, 1e308), which would otherwise show as "100.0 %", "nan %", "inf %"."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax, stable for large logits."""
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def validate(weights: dict[str, np.ndarray], source: str = "weights") -> None:
    """Raise ModelFileError naming the first missing, misshapen, mistyped or non-finite array."""
    missing = [k for k in SHAPES if k not in weights]
    if missing:
        raise ModelFileError(f"{source}: missing arrays {missing} (expected {list(SHAPES)})")
    for name in SHAPES:
        if not isinstance(weights[name], np.ndarray):
            raise ModelFileError(f"{source}: {name} is a {type(weights[name]).__name__}, expected a NumPy array")
    expected = shapes(*_hidden_widths(weights["W1"].shape, weights["W2"].shape, source))
    for name, shape in expected.items():
        arr = weights[name]
        if arr.shape != shape:
            raise _shape_error(source, name, arr.shape, shape)
        if arr.dtype != np.float32:
            raise ModelFileError(f"{source}: {name} has dtype {arr.dtype}, expected float32")
        if not np.all(np.isfinite(arr)):
            raise ModelFileError(f"{source}: {name} contains NaN or Inf")


MAX_FILE_BYTES = 64 << 20  # the real file is ~360 KB; a cap keeps a hostile one from filling memory
MAX_CARD_BYTES = 4 << 20
CARD_HASH = "weights_sha256"  # the card's field naming the .npz it describes (cards written before it have none)


def load_model(path: str | os.PathLike[str] | None = None) -> Model:
    """Load and validate a model file; its .json card is read when present."""
    if path is not None and not isinstance(path, (str, os.PathLike)):  # Classifier(model=7): say so, not TypeError
        raise ModelFileError(f"a model is a Model or a file path, not {type(path).__name__} {path!r:.40}")
    p = Path(path) if path is not None else default_model_path()
    if path is None and not p.exists():
        raise ModelFileError(f"the bundled model is missing (looked for {MODELS_DIR / p.name} and {p}): "
                             "reinstall gemmpad, or name a model file")
    data = read_input(p, MAX_FILE_BYTES, ModelFileError, "model file")
    try:
        weights = read_npz(data, str(p))
    except ModelFileError:
        kind = network_format(data)  # only a file that is no model is sniffed: not every start's
        if kind is None:
            raise
        # a network saved by another framework: read_npz said "unexpected member 'net/data.pkl'"
        raise ModelFileError(f"{p} is {'an' if kind == 'ONNX' else 'a'} {kind} file, not a gemmpad model: convert "
                             f"it with `gemmpad import {shlex.quote(str(p))} -o model.npz`") from None
    card: dict[str, Any] = {}
    card_path = p.with_suffix(".json")
    if card_path != p and card_path.exists():
        card = load_json(card_path, MAX_CARD_BYTES, ModelFileError, "model card (JSON)")
        if not isinstance(card, dict):  # every reader asks it for fields: a list would pass for a card with none
            kind = {list: "an array", str: "a string", bool: "true or false", type(None): "null"}.get(type(card), "a number")
            raise ModelFileError(f"{card_path}: not a valid model card (JSON) ({kind}, expected an object of fields)")
        named = card.get(CARD_HASH)
        if named is not None and named != hashlib.sha256(data).hexdigest():
            raise ModelFileError(f"{card_path} describes other weights than {p} (a save was cut off between "
                                 "the two files?): save the model again, or remove the card")
    return Model(weights=weights, card=card, path=p)


def model_line(model: Model, given: str | None) -> str:
    """How a command's messages name the weights it reads with (predict's and eval's first line):
    the file the user named, as typed, or "the shipped model" for the default, never its install
    location's path, which means nothing to a user; with the card's name and date when it has them."""
    card = model.card if isinstance(model.card, dict) else {}
    about = ", ".join(str(card[k])[:10] if k == "created" else str(card[k]) for k in ("name", "created") if card.get(k))
    where = printable(given) if given else "the shipped model"
    return f"{where} ({about})" if about else where


# ModelProto's top-level fields (onnx.proto) by number, each with its protobuf wire type (0: varint,
# 2: length-delimited); 7 is the graph. Exporters write ir_version (1) first, so the file starts 0x08.
_ONNX_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}
_ONNX_GRAPH = 7
# A model's top level is a handful of fields (opset imports and metadata entries repeat): a walk past
# this many is no network gemmpad imports, and stops so that a hostile file costs milliseconds.
MAX_ONNX_FIELDS = 10_000


def network_format(data: bytes) -> str | None:
    """"PyTorch", "ONNX" or None: which other framework's network file `data` is, told from its
    bytes alone (neither torch nor onnx need be installed), so that `gemmpad import` refuses a
    file of neither kind in one line before asking for a package to read it, and load_model
    names a network given where a gemmpad model belongs rather than listing its zip members.

    PyTorch: torch.save's zip, which holds <name>/data.pkl, or the pickle it wrote before torch
    1.6 (first byte 0x80, pickle's PROTO opcode). ONNX: a serialised ModelProto, whose top-level
    protobuf fields, of ModelProto's numbers and wire types, fill the file exactly, its graph
    among them, or run off its end once the graph has begun (a truncated file: _onnx_model). A
    gemmpad .npz is a zip without data.pkl: None.
    """
    if data[:1] == b"\x80" or (data[:4] == b"PK\x03\x04" and any(
            name == "data.pkl" or name.endswith("/data.pkl") for name in _zip_names(data))):
        return "PyTorch"
    return "ONNX" if _onnx_model(data) else None


def _zip_names(data: bytes) -> list[str]:
    """The member names of the zip `data`; of one cut short (its central directory, at the end, lost),
    the first local header's name: torch.save writes data.pkl first, so a truncated .pt is still one."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return zf.namelist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error):  # read_npz says why, if it is read
        return [data[30 : 30 + int.from_bytes(data[26:28], "little")].decode("utf-8", "replace")]


def _onnx_model(data: bytes) -> bool:
    """Whether `data` walks as a ModelProto's top-level fields to its last byte, the graph among them;
    or, cut short, runs off its end inside a field once the graph has begun, after ir_version
    (exporters write it first): a truncated ONNX file is still one, so `gemmpad import` says it is
    damaged rather than "not an ONNX model"."""
    seen: set[int] = set()

    def cut() -> bool:
        return _ONNX_GRAPH in seen and data[:1] == b"\x08"

    at = 0
    for _ in range(MAX_ONNX_FIELDS):
        if at >= len(data):  # at its last byte, or past it: the last field cut short
            return _ONNX_GRAPH in seen if at == len(data) else cut()
        key, at = _varint(data, at)
        if key is None or _ONNX_FIELDS.get(key >> 3) != key & 7:
            return key is None and at >= len(data) and cut()
        seen.add(key >> 3)
        value, at = _varint(data, at)
        if value is None:
            return at >= len(data) and cut()
        at += value if key & 7 == 2 else 0  # past the end: the field was cut short
    return False


def _varint(data: bytes, at: int) -> tuple[int | None, int]:
    """(value, the index after it) of the protobuf varint at `at`; (None, at) where none ends within the data."""
    value = 0
    for shift in range(0, 70, 7):  # at most 10 bytes, as protobuf's 64-bit varints
        if at >= len(data):
            return None, at
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
    return None, at


def read_npz(data: bytes, source: str) -> dict[str, np.ndarray]:
    """The six arrays of an .npz held in `data`. Every member's name and its .npy
    header (shape, dtype) are checked before any array data is inflated, and each
    array is read to exactly the size its header declares, plus one byte to notice
    more: a file can hide neither an extra member (a string array, a 9 GiB run of
    zeros), nor data past an array's declared end, nor a pickle."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error) as exc:
        raise ModelFileError(f"{source}: not an .npz model file (no zip archive: corrupt, truncated or another "
                             f"kind of file; {exc})") from None
    try:
        with zf:
            members = _npy_members(zf, source)
            headers = {name: _npy_header(zf, info, source) for name, info in members.items()}
            expected = shapes(*_hidden_widths(headers["W1"][0], headers["W2"][0], source))
            for name, (shape, _, _) in headers.items():
                if shape != expected[name]:
                    raise _shape_error(source, name, shape, expected[name])
            return {name: _npy_data(zf, members[name], *headers[name], source) for name in SHAPES}
    except ModelFileError:
        raise
    except Exception as exc:  # any failure to parse is the file's: zipfile, zlib and NumPy's header
        # parser (ast and tokenize) report corruption with a dozen types (BadZipFile, zlib.error,
        # RuntimeError for an encrypted member, SyntaxError and TokenError for a mangled header...)
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ModelFileError(f"{source}: not a readable .npz model file ({type(exc).__name__}"
                             f"{': ' + first if first else ''})") from None


def _npy_members(zf: zipfile.ZipFile, source: str) -> dict[str, zipfile.ZipInfo]:
    """The members by array name; anything but the six expected .npy arrays is an error."""
    members: dict[str, zipfile.ZipInfo] = {}
    for info in zf.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else None
        if name not in SHAPES or name in members:
            raise ModelFileError(f"{source}: unexpected member {info.filename!r} "
                                 f"(a model file holds exactly {', '.join(k + '.npy' for k in SHAPES)})")
        members[name] = info
    missing = [k for k in SHAPES if k not in members]
    if missing:
        raise ModelFileError(f"{source}: missing arrays {missing} (expected {list(SHAPES)})")
    return members


def _npy_header(zf: zipfile.ZipFile, info: zipfile.ZipInfo, source: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran order, dtype) from one member's .npy header, after checking the dtype. The
    shape is checked with the others once every header is read: what b1, W2, b2 and W3 should be
    comes from the file's own W1 and W2 (a rank checked here against SHAPES told a 784-64-64-10
    file's b1 of shape (64, 1) "expected (100,)")."""
    name = info.filename[:-4]
    with zf.open(info) as f:
        shape, fortran, dtype = _read_header(f, name, source)
    if dtype.kind != "f" or dtype.itemsize != 4:
        raise ModelFileError(f"{source}: {name} has dtype {dtype}, expected float32")
    return tuple(int(d) for d in shape), bool(fortran), dtype


_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _read_header(f: IO[bytes], name: str, source: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran order, dtype) of the open .npy member `f`, which is left at its data.
    NumPy's warning that a header needed Python 2 parsing is dropped: the header was read,
    and the advice (save the file again) is the writer's, not this user's."""
    version = np.lib.format.read_magic(f)
    if version not in _HEADER_READERS:
        raise ModelFileError(f"{source}: {name} has an unknown .npy format version {version}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _HEADER_READERS[version](f)


def _npy_data(zf: zipfile.ZipFile, info: zipfile.ZipInfo, shape: tuple[int, ...], fortran: bool, dtype: np.dtype,
              source: str) -> np.ndarray:
    """One array, reading exactly the bytes its (already checked) header declares."""
    name = info.filename[:-4]
    nbytes = int(np.prod(shape)) * dtype.itemsize
    with zf.open(info) as f:
        _read_header(f, name, source)
        raw = f.read(nbytes)
        more = f.read(1)  # one byte past the declared size, never the gigabytes that may follow
    if len(raw) != nbytes:
        raise ModelFileError(f"{source}: {name} is truncated ({len(raw)} of {nbytes} bytes)")
    if more:
        raise ModelFileError(f"{source}: {name} holds more data than its header declares ({nbytes} bytes)")
    arr = np.frombuffer(raw, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return np.ascontiguousarray(arr, dtype=np.float32)


def fold_normalisation(w: dict[str, np.ndarray], mean: float, std: float) -> dict[str, np.ndarray]:
    """Weights that take raw [0, 1] inputs: ((x - mean) / std) @ W1 + b1 == x @ (W1 / std) + (b1 - mean / std * 1 @ W1).
    Computed in float64 so the fold adds no more than one float32 rounding."""
    if (mean, std) == (0.0, 1.0):
        return w
    w1 = w["W1"].astype(np.float64)
    out = dict(w)
    out["W1"] = (w1 / std).astype(np.float32)
    out["b1"] = (w["b1"].astype(np.float64) - mean / std * w1.sum(axis=0)).astype(np.float32)
    return out


def unfold_normalisation(w: dict[str, np.ndarray], mean: float, std: float) -> dict[str, np.ndarray]:
    """Weights for inputs (x - mean) / std from weights for raw x: the inverse of
    fold_normalisation, so a fine-tune steps in the space training stepped in."""
    out = dict(w)
    w1 = w["W1"].astype(np.float64)
    out["W1"] = (w1 * std).astype(np.float32)
    out["b1"] = (w["b1"].astype(np.float64) + mean * w1.sum(axis=0)).astype(np.float32)
    return out


def accuracy(model: Model | dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, batch: int = 10000) -> float:
    """Fraction of rows x [N, 784] the NumPy reference forward reads as y (NaN for none): the one
    measure training, fine-tuning and the training benchmark report. `batch` rows at a time, so a
    test set of any size needs the memory of `batch` rows' activations."""
    if len(y) == 0:
        return float("nan")
    model = model if isinstance(model, Model) else Model(model)
    pred = np.concatenate([model.forward(x[i : i + batch]).argmax(1) for i in range(0, len(x), batch)])
    return float(np.mean(pred == y))
