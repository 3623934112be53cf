"""`gemmpad unsure`: fit the "unsure" detector for a model and measure it.

    gemmpad unsure [--model M] [--fit [--output FILE] [--force]] [--json]

--fit fits on digits the measurement never uses, and writes --output (default: the
user's data folder, unsure.user_path_for; never inside the installed package, and an
existing file only with --force), saying each step on stderr as it starts (minutes of rendering on a
small machine; a bar through each on a terminal):
- digits: the first FIT_MNIST MNIST training images and FIT_PEN pendigits digits of the
  writers outside the held-out range (drawn at random pens, sizes and polarities);
- non-digits: gemmpad.data.nondigits at seed FIT_SEED.
Then (with or without --fit) it measures, on sets it was not fitted on:
- how many real digits it flags: all 10,000 MNIST test images, and the held-out
  pendigits writers (1-6, the real-writer validation) at every style of pendigits.STYLES;
- how many non-digits it catches: gemmpad.data.nondigits at its own seed, per kind.
The figures go into the file's "measured" field (the window's tooltip quotes them) and
are printed. Run it again after retraining: a detector belongs to one set of weights.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from gemmpad.data import mnist, nondigits, pendigits
from gemmpad.runtime import unsure
from gemmpad.errors import GemmpadError
from gemmpad.commands.args import output_path
from gemmpad.commands.evaluate import writer_range
from gemmpad.inputs.files import check_output_file, claim, refuse_existing
from gemmpad.runtime.model import Model, load_model
from gemmpad.inputs.preprocess import preprocess, preprocess_batch
from gemmpad.terminal import Log, printable

FIT_MNIST = 12_000
FIT_PEN = 4_000
FIT_NONDIGITS = 1_500  # per kind
FIT_SEED = 1
HELD_OUT_WRITERS = "1-6"  # the real-writer validation: never fitted on (nor trained on, by gemmpad train's default)
SEEN = "; the model was trained on these writers"  # said beside their rate when the card says so (trained_on)


def _rows(images: Iterable[np.ndarray], total: int, what: str) -> np.ndarray:
    """preprocess() of each image as [N, 784] rows, images without ink left out. Taken one at a
    time from a generator (rendered as consumed, not held as thousands of full-size images),
    with a progress bar on a terminal: this is where --fit spends its minutes."""
    kept = [x for x in (preprocess(im) for im in tqdm(images, total=total, desc=what, unit="img", leave=False,
                                                       disable=None))
            if x is not None]
    return np.stack(kept).reshape(-1, 784).astype(np.float32)


def fit_sets(data_dir: str | None, pen_file: str | None,
             log: Log = lambda s: None) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """(digits, non-digits, what they are) to fit on; none of it is measured on. `log` hears each step."""
    train = mnist.load_split("train", data_dir)
    log(f"fit: preprocessing {min(FIT_MNIST, len(train.images)):,} MNIST training images")
    mnist_rows, ok = preprocess_batch(train.images[:FIT_MNIST])
    held = set(writer_range(HELD_OUT_WRITERS))
    pen = [s for s in pendigits.read_pendigits(pen_file) if s.writer not in held]
    rng = np.random.default_rng(FIT_SEED)
    picked = rng.choice(len(pen), min(FIT_PEN, len(pen)), replace=False)
    log(f"fit: drawing {len(picked):,} pendigits digits of writers outside {HELD_OUT_WRITERS} at random pens")
    pen_rows = _rows((pendigits.render(pen[i], pendigits.random_style(rng)) for i in picked), len(picked),
                     "fit: pendigits")
    digits = np.vstack([mnist_rows[ok].reshape(-1, 784), pen_rows])
    log(f"fit: making {FIT_NONDIGITS:,} non-digits of each of {len(nondigits.KINDS)} kinds")
    nd = nondigits.generate(FIT_NONDIGITS, seed=FIT_SEED)
    about = {"mnist_train": int(ok.sum()), "pendigits_writers_not": HELD_OUT_WRITERS, "pendigits": len(pen_rows),
             "nondigits_seed": FIT_SEED}
    return digits, nd.images.reshape(-1, 784), about


def trained_on(model: Model, writers: Iterable[int]) -> bool:
    """Whether the model's card says it was trained on any of `writers`: a model trained on every
    writer (`gemmpad train --folds`, then all 30) has seen the detector's measurement writers, and
    a rate measured on them must say so rather than pass for a held-out one."""
    return bool(set(writers) & set(model.trained_writers))


def measure(model: Model, det: unsure.Detector, data_dir: str | None, pen_file: str | None,
            log: Log = lambda s: None) -> dict[str, Any]:
    """Shares flagged of real digits (MNIST test; writers HELD_OUT_WRITERS per style, marked when the
    model trained on them) and of non-digits (per kind). The detector never fits on those writers.
    `log` hears each step."""
    test = mnist.load_split("test", data_dir)
    log(f"measuring: {len(test.images):,} MNIST test images")
    x, ok = preprocess_batch(test.images)
    out: dict[str, Any] = {"mnist_test": {"n": int(ok.sum()), "flagged": float(det.unsure(model, x[ok].reshape(-1, 784)).mean())}}
    held = set(writer_range(HELD_OUT_WRITERS))
    pen = [s for s in pendigits.read_pendigits(pen_file) if s.writer in held]
    styles = {}
    for i, name in enumerate(pendigits.STYLES, 1):
        log(f"measuring: {len(pen):,} digits of writers {HELD_OUT_WRITERS} drawn {name} ({i}/{len(pendigits.STYLES)})")
        rows = _rows((pendigits.render(s, name) for s in pen), len(pen), f"measure: {name}")
        styles[name] = float(det.unsure(model, rows).mean())
    out[f"pendigits_writers_{HELD_OUT_WRITERS}"] = {"n": len(pen), "flagged": float(np.mean(list(styles.values()))),
                                                   "worst_style": max(styles.values()), "styles": styles,
                                                   "seen_in_training": trained_on(model, held)}
    log("measuring: non-digits")
    nd = nondigits.generate(seed=nondigits.SEED)
    caught = det.unsure(model, nd.images.reshape(-1, 784))
    out["nondigits"] = {"n": len(caught), "caught": float(caught.mean()),
                        "kinds": {k: float(caught[nd.kinds == i].mean()) for i, k in enumerate(nondigits.KINDS)}}
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="model .npz file (default: the shipped model)")
    p.add_argument("--fit", action="store_true", help="fit the detector for this model and write it (see --output)")
    p.add_argument("--output", type=output_path, metavar="FILE", help="where --fit writes the detector (default: in the user data "
                                                    "folder, where the window finds it; never the installed package)")
    p.add_argument("--force", action="store_true", help="let --fit replace an existing --output")
    p.add_argument("--data", metavar="DIR", help="MNIST IDX files (default: $GEMMPAD_DATA, else `gemmpad data fetch mnist`'s)")
    p.add_argument("--pendigits", metavar="FILE", help="pendigits file (default: $GEMMPAD_PENDIGITS, else `gemmpad data fetch pendigits`'s)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of lines")


def _lines(m: dict[str, Any]) -> list[str]:
    writers, pen = unsure.writers_entry(m)
    nd = m["nondigits"]
    return [f"real digits flagged: MNIST test {100 * m['mnist_test']['flagged']:.2f} % of {m['mnist_test']['n']}",
            f"  pendigits writers {writers} ({pen['n']} digits x {len(pen['styles'])} styles"
            f"{SEEN if pen.get('seen_in_training') else ''}): "
            f"{100 * pen['flagged']:.2f} %, worst style {100 * pen['worst_style']:.2f} %",
            "    " + "  ".join(f"{k} {100 * v:.2f}" for k, v in pen["styles"].items()),
            f"non-digits caught: {100 * nd['caught']:.1f} % of {nd['n']}  ("
            + ", ".join(f"{k} {100 * v:.0f} %" for k, v in nd["kinds"].items()) + ")"]


def markdown(m: dict[str, Any]) -> str:
    """A detector's measured rates as the Markdown table models/README.md shows beside the model's
    results (a test keeps the two equal): how many real digits it flags, how many non-digits it catches."""
    writers, pen = unsure.writers_entry(m)
    nd = m["nondigits"]
    return "\n".join([
        "| set | images | said unsure |", "|---|---:|---:|",
        f"| MNIST test (real digits) | {m['mnist_test']['n']:,} | {100 * m['mnist_test']['flagged']:.2f} % |",
        f"| pendigits writers {writers}, every drawing style (real digits"
        f"{SEEN if pen.get('seen_in_training') else ''}) | {pen['n']:,} x {len(pen['styles'])} | "
        f"{100 * pen['flagged']:.2f} % (worst style {100 * pen['worst_style']:.2f} %) |",
        f"| non-digits (`gemmpad.data.nondigits`, its own seed) | {nd['n']:,} | **{100 * nd['caught']:.1f} %** |",
        *[f"| non-digits: {kind} | | {100 * v:.1f} % |" for kind, v in nd["kinds"].items()]])


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    assert model.path is not None  # loaded from a file
    if (args.output or args.force) and not args.fit:
        raise GemmpadError("--output and --force are for --fit")
    path = Path(args.output) if args.output else unsure.user_path_for(model)
    t_start = time.perf_counter()

    def log(line: str) -> None:  # on stderr: stdout is the result (one JSON object with --json)
        print(printable(f"{line}  ({time.perf_counter() - t_start:.0f} s)"), file=sys.stderr, flush=True)

    if args.fit:  # the output checked and held before minutes of fitting, not after
        check_output_file(path, f"--output {path}", {".json"})
        with claim(path, f"--output {path}"):
            refuse_existing([path], "--output", force=args.force)
            digits, nd, about = fit_sets(args.data, args.pendigits, log)
            log(f"fitting the detector on {len(digits):,} digits and {len(nd):,} non-digits")
            det = unsure.fit(model, digits, nd, about=about)
            det = dataclasses.replace(det, measured=measure(model, det, args.data, args.pendigits, log))
            unsure.save(det, path)
        measured = det.measured
    else:
        det, found, why = unsure.find(model)
        if det is None or found is None:
            raise GemmpadError(f"no unsure detector: {why}")
        path = found
        measured = measure(model, det, args.data, args.pendigits, log)
    if args.json:
        print(json.dumps({"model": str(model.path), "detector": str(path), "measured": measured}))
    else:
        print(f"model {printable(str(model.path))}; detector {printable(str(path))}" + (" (written)" if args.fit else ""))
        print("\n".join(_lines(measured)))
    return 0
