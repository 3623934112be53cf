"""`gemmpad predict`: read digits from image files.

Each file is handled on its own: a missing, corrupt or blank image gets an
error line and the rest still run; the exit status is 1 at the end if any
failed, so scripts notice without losing the good results.

It says what the window says: which model reads, and "unsure" where the model's unsure
detector (gemmpad.runtime.unsure) finds that the image does not look like one digit, however
confident the softmax is (a letter K is "8" at 99.99 %). The first pass of a process pays
for start-up (threads, caches, a GPU context); it runs untimed before the first image and
its time is reported on its own, so the table's latencies are all alike.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from gemmpad.runtime import unsure
from gemmpad.runtime import backends
from gemmpad.runtime.classifier import BACKENDS, N_IN, Classifier
from gemmpad.errors import GemmpadError, require
from gemmpad.inputs.images import FORMAT_NAMES, image_paths, load_image
from gemmpad.runtime.model import model_line
from gemmpad.inputs.preprocess import MIN_CONTRAST
from gemmpad.terminal import counted, display_width, printable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help=f"image files ({FORMAT_NAMES}) or directories of them")
    parser.add_argument(
        "--backend", choices=BACKENDS, default=None,
        help="where the network runs (default: the --kernel's backend, else cpu, else numpy)"
    )
    parser.add_argument("--kernel", default=None, help="kernel name, e.g. cuda.mlp_fused or 07_warptile (default: fastest)")
    parser.add_argument("--model", default=None, help="model .npz file (default: the shipped model)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    parser.add_argument("--show", metavar="DIR", type=Path, default=None,
                        help="also write, for each image, the 28x28 input the network saw (shown 8x, "
                             "DIR/<name>.seen.png, never over an existing file): why a photo failed")


def image_files(paths: list[str]) -> Iterator[tuple[str, Path | None, str]]:
    """(name, path or None, error) for every image named, or anywhere under a named
    directory (the app saves drawings in one folder per label)."""
    for raw in paths:
        p = Path(raw)
        if not raw:
            yield raw, None, "empty path"  # Path("") would be ".", and a search of everything below it
            continue
        try:
            is_dir = stat.S_ISDIR(os.stat(p).st_mode)
        except OSError as exc:  # missing, a symlink loop, a parent without permission
            yield raw, None, exc.strerror.lower() if exc.strerror else str(exc)
            continue
        if not is_dir:
            yield raw, p, ""  # the image loader says what is wrong with a FIFO or a device
            continue
        count = 0
        for f, error in image_paths(p):
            count += 1
            yield str(f), (None if error else f), error
        if not count:
            yield raw, None, f"no {FORMAT_NAMES} images in this directory or below"


SHOW_SCALE = 8  # the 28x28 input written as 8x8 blocks: 224 px, crisp


def write_seen(folder: Path, name: str, image28: np.ndarray, tried: dict[str, int] | None = None) -> Path:
    """Write the network's 28x28 input for image `name` into `folder` as <stem>.seen.png
    (enlarged SHOW_SCALE times, nearest neighbour), under a new name if that one is taken.

    `tried` (stem -> the next number to try, kept by the caller for one run) makes a batch
    of many images of one name (x.png in 4,000 folders) linear: without it each image
    would test every name the ones before it took, x-2 ... x-3999, quadratic in all."""
    from PIL import Image

    from gemmpad.inputs.files import atomic_path

    stem = Path(name).stem or "image"
    tried = {} if tried is None else tried
    n = tried.get(stem, 1)
    target = folder / (f"{stem}.seen.png" if n == 1 else f"{stem}-{n}.seen.png")
    while target.exists():
        n += 1
        target = folder / f"{stem}-{n}.seen.png"
    tried[stem] = n + 1
    pixels = np.round(np.clip(image28, 0.0, 1.0) * 255.0).astype(np.uint8)
    big = pixels.repeat(SHOW_SCALE, axis=0).repeat(SHOW_SCALE, axis=1)
    with atomic_path(target) as tmp:
        Image.fromarray(big, mode="L").save(tmp, format="PNG")
    return target


def table_row(name: str, width: int, rest: str) -> str:
    """A line of the results table: `name` padded to `width` terminal cells, then the other columns.
    Cells, not characters (display_width): a name with a wide character pushed its row's columns right."""
    return f"{name}{' ' * (width - display_width(name))} {rest}"


def no_digit_reason(pixels: np.ndarray) -> str:
    """Why preprocess found nothing to read: a blank image (one tone, as preprocess's own
    MIN_CONTRAST judges ink), or something busy in which no stroke stands out, such as
    noise or a texture, which "no ink" would misdescribe."""
    arr = np.asarray(pixels, dtype=np.float32)
    scale = 255.0 if pixels.dtype == np.uint8 or float(arr.max()) > 1.0 else 1.0
    if float(arr.max() - arr.min()) / scale < MIN_CONTRAST:
        return "no ink found (blank image)"
    return "no digit found: no strokes stand out from the background (noise or texture?)"


def start_up(clf: Classifier) -> float:
    """The process's first pass, which pays for start-up, run on a mid-grey input (not zeros:
    the sparse CPU kernel would skip them all) before any image; its end-to-end time in us."""
    clf.predict(np.full((1, N_IN), 0.5, dtype=np.float32))
    assert clf.last_timing is not None
    return clf.last_timing.end_to_end_us


def run(args: argparse.Namespace) -> int:
    require("PIL", "gemmpad predict", "pillow")
    backend = backends.pick(args.backend, args.kernel, backends.WITHOUT_GPU)
    clf = Classifier(model=args.model, backend=backend, kernel=args.kernel)  # GemmpadError -> cli: message, exit 2
    if args.show is not None:
        if args.show.exists() and not args.show.is_dir():
            raise GemmpadError(f"--show {args.show}: a file is there, not a folder")
        try:
            args.show.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise GemmpadError(f"--show {args.show}: cannot create the folder ({exc.strerror})") from None
    failures = 0
    seen_names: dict[str, int] = {}  # write_seen's numbering, so repeated names stay linear
    files = [(printable(raw_name), path, error) for raw_name, path, error in image_files(args.paths)]
    width = max(display_width(name) for name in ["file", *(name for name, _, _ in files)])  # lines up for any name
    detector, no_detector = unsure.for_model(clf.model)
    model = model_line(clf.model, args.model)
    startup_us = start_up(clf)
    if not args.json:
        print(f"model {model}" + (f"; no unsure detector: {printable(no_detector)}" if detector is None else ""))
        print(f"backend {clf.backend}, kernel {clf.kernel}; start-up {startup_us:.1f} us "
              "(the first pass, run before the table)")
        print(table_row("file", width, f"{'digit':>5} {'confidence':>10} {'latency_us':>10}"))
    for name, path, error in files:
        pred = None
        if path is not None:
            try:
                pixels, notes = load_image(path)
                for note in notes:
                    print(f"gemmpad predict: {name}: {printable(note)}", file=sys.stderr)
                pred = clf.classify(pixels)
                if pred is None:
                    error = no_digit_reason(pixels)
            except GemmpadError as exc:
                error = printable(str(exc))  # messages quote the file name
        if error:
            failures += 1
            if args.json:
                print(json.dumps({"file": name, "error": error}, allow_nan=False))
            else:
                print(table_row(name, width, f"error: {error}"))
            continue
        assert pred is not None
        # after the timed pass, as in the window: the detector's cost is not in the latency
        doubt = None if detector is None else bool(detector.unsure(clf.model, pred.image28.reshape(1, -1))[0])
        seen = ""
        if args.show is not None:
            try:
                seen = printable(str(write_seen(args.show, name, pred.image28, seen_names)))
            except OSError as exc:  # the reading still counts; say why the picture is missing
                seen = f"(not written: {exc.strerror})"
        if args.json:
            print(
                json.dumps(
                    {
                        "file": name,
                        "digit": pred.digit,
                        "confidence": round(pred.confidence, 6),
                        "probabilities": [round(float(p), 6) for p in pred.probs],
                        "unsure": doubt,  # null: no detector for this model
                        "model": model,
                        "backend": clf.backend,
                        "kernel": clf.kernel,
                        "latency_us": round(pred.timing.end_to_end_us, 2),
                        **({"seen": seen} if args.show is not None else {}),
                    },
                    allow_nan=False,  # check_output made the numbers finite; never print invalid JSON
                )
            )
        else:
            confidence = "unsure" if doubt else f"{pred.confidence:.4f}"  # the window's word for a guess
            print(table_row(name, width, f"{pred.digit:>5} {confidence:>10} {pred.timing.end_to_end_us:>10.1f}"
                            + (f"  {seen}" if seen else "")))
        sys.stdout.flush()
    if failures:
        print(f"gemmpad predict: {counted(failures, 'file')} failed", file=sys.stderr)
    return 1 if failures else 0
