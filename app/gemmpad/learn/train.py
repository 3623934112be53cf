"""`gemmpad train`: MNIST and real writers' pen digits -> a 784-100-100-10 MLP model file.

Steps, each a function below:
1. load MNIST (gemmpad.data.mnist) and hold out --val original training images for progress;
2. build the training arrays (gemmpad.data.trainset, in --jobs processes, cached): the MNIST
   originals, warped copies, copies re-painted as uniform strokes, synthetic drawn
   digits, and the pendigits writers' trajectories drawn like the app at random styles
   and on paper, every one through gemmpad.inputs.preprocess so training sees what the app
   shows the model. The writers in --val-writers are left out, and the card reports
   accuracy on them (gemmpad.commands.evaluate);
3. fit with the trainer --trainer names (gemmpad.learn.trainers): torch (SGD with momentum, or
   AdamW; optionally towards a CNN teacher's readings, gemmpad.learn.distill) or the native CUDA
   trainer, from the same initial weights, batch order and per-epoch learning rates
   (gemmpad.learn.trainer), so the trainers' curves are comparable;
4. fold the input normalisation into W1/b1, measure the weights with NumPy alone (`measure`:
   MNIST test, drawn digits per style, the held-out writers), build the sets Learn needs and
   draw the loss/accuracy curves, then write them all, weights + model card last: nothing
   appears under --output's name before it is measured (a Ctrl-C leaves none of it), and a
   failure after training still saves the trained weights, with the card's results so far.
torch is imported inside functions only: `gemmpad info` and the app never load it.
Over 500 lines on purpose: one pipeline whose steps share the options and the card;
the trainers (trainers, train_torch, train_native, train_numpy, distill) and the data (trainset,
augment, synthetic, pendigits, paper) already live in their own modules.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import platform
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from gemmpad.data import mnist, synthetic, paper, pendigits, trainset, userdata
from gemmpad.learn import crossval, distill, matching, rehearsal, rehearsal_sets, train_torch, trainers
from gemmpad.learn.trainer import init_weights
from gemmpad.commands import evaluate
from gemmpad.commands.args import MAX_BATCH, MAX_EPOCHS, MAX_SEED, integer, number, output_path
from gemmpad.errors import GemmpadError, require
from gemmpad.inputs.files import atomic_path, check_output_file, check_writable_dir, claim, refuse_existing, write_bytes
from gemmpad.data.trainset import SOURCES
from gemmpad.runtime import unsure
from gemmpad.runtime.model import Model, accuracy, fold_normalisation, load_model, save_card
from gemmpad.data.pool import default_jobs
from gemmpad.inputs.preprocess import preprocess_batch
from gemmpad.terminal import printable

# The next model's recipe: the shipped model's six sources and, since 2026-11-29, the scanned-form copies
# (+4.4-5.4 points on stretched forms, the 9s +3.5-8: gemmpad/learn/NOTES.md). "european" stays opt-in:
# the canvas already reads those styles at 98.6-100 % (models/README.md).
DEFAULT_SOURCES = (*SOURCES[:6], "forms", "forms-mnist", "forms-drawn")
DATA_SOURCES = {  # every dataset a model learns from or is measured on, with its licence
    "MNIST": "LeCun, Cortes & Burges, http://yann.lecun.com/exdb/mnist/ (CC BY-SA 3.0)",
    "pendigits": "Alpaydin & Alimoglu, Pen-Based Recognition of Handwritten Digits, UCI Machine Learning "
                 "Repository (CC BY 4.0), pendigits-orig.tra",
    "synthetic": "gemmpad.data.synthetic (drawn digits) and gemmpad.data.paper (paper photos), made by this project",
}
MAX_DRAWN = 200_000  # synthetic digits in one array: 784 float32 each, 627 MB
VAL_SHARE = 12  # --val's default: one training image in 12 held out (5000 of MNIST's 60,000)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of `gemmpad train`."""
    p.add_argument("--data", metavar="DIR",
                   help="MNIST IDX directory (default $GEMMPAD_DATA, else `gemmpad data fetch mnist`'s)")
    p.add_argument("--output", type=output_path, metavar="PATH", help="model file to write (default runs/mnist-mlp-<time>.npz)")
    p.add_argument("--curve", type=output_path, metavar="PNG", help="loss/accuracy plot (default beside --output)")
    p.add_argument("--force", action="store_true",
                   help="replace --output, its .json card and --curve when they exist (default: refuse)")
    p.add_argument("--trainer", choices=("torch", "native"), default="torch",  # of gemmpad.learn.trainers.NAMES
                   help="torch, or the CUDA kernels of gemmpad.learn.train_native")
    p.add_argument("--precision", choices=("fp32", "mixed"), default="fp32",
                   help="mixed: bf16/fp16 matmuls, fp32 weights")
    p.add_argument("--optimizer", choices=("sgd", "adamw"),
                   help="sgd = SGD with momentum (both trainers); default: adamw for torch (as the shipped "
                        "model), sgd for native")
    p.add_argument("--epochs", type=integer(1, MAX_EPOCHS), default=20, metavar="N",
                   help="passes over the training arrays (default %(default)s)")
    p.add_argument("--batch-size", type=integer(1, MAX_BATCH), default=128, metavar="N",
                   help="images per optimizer step (default %(default)s)")
    p.add_argument("--lr", type=number(0, 10, above=True), help="peak learning rate (default 0.05 sgd, 0.002 adamw)")
    p.add_argument("--momentum", type=number(0, 0.999), default=0.9,
                   help="SGD's momentum (default %(default)s; AdamW keeps its own moments)")
    p.add_argument("--weight-decay", type=number(0, 1), default=1e-4,
                   help="weight decay of either optimizer (default %(default)s)")
    p.add_argument("--schedule", choices=("cosine", "step", "constant"), default="cosine",
                   help="per-epoch learning rate")
    p.add_argument("--augment", default=",".join(DEFAULT_SOURCES), help=f"comma list of {','.join(SOURCES)}, or 'none' (default %(default)s)")
    p.add_argument("--drawn", type=integer(0, MAX_DRAWN), default=20000, metavar="N", help="synthetic drawn training digits (and as many on scanned forms with the forms-drawn source)")
    p.add_argument("--limit", type=integer(1, 10**9), metavar="N", help="use only the first N MNIST training images")
    p.add_argument("--val", type=integer(0, 10**9), metavar="N",
                   help=f"MNIST training images held out to show progress (default: 1 in {VAL_SHARE}, "
                        "5000 of the full 60,000, fewer with --limit)")
    p.add_argument("--pen-copies", type=integer(1, 64), default=trainset.PEN_COPIES, metavar="N",
                   help="random-style renderings of each pendigits training sample")
    p.add_argument("--paper-copies", type=integer(1, 64), default=trainset.PAPER_COPIES, metavar="N",
                   help="photos on paper of each pendigits training sample")
    p.add_argument("--form-copies", type=integer(1, 64), default=trainset.FORM_COPIES, metavar="N",
                   help="scanned-form copies of each pendigits training sample (with --augment ...,forms)")
    p.add_argument("--jobs", type=integer(1, 1024), default=default_jobs(), metavar="N",
                   help="processes that build the training arrays and read the test sets (default: every "
                        "core); the arrays depend on --seed only")
    p.add_argument("--teacher", choices=("none", "cnn"), default="none",
                   help="cnn: train a small CNN first and fit the MLP to its softened readings as well as "
                        "the labels (knowledge distillation, --trainer torch only; a GPU is advised)")
    p.add_argument("--teachers", type=integer(1, 16), default=1, metavar="N",
                   help="with --teacher cnn: an ensemble of N CNNs (own seeds, readings averaged) as the teacher")
    p.add_argument("--match", action="store_true",
                   help="with --teacher cnn: function matching, each step the MLP learns the teacher's reading of a "
                        "fresh elastic view of its batch (gemmpad.learn.matching) instead of fixed readings of the "
                        "arrays (measured with --epochs 100: gemmpad/learn/NOTES.md)")
    p.add_argument("--mix", type=number(0, 1), default=0.0, metavar="SHARE",
                   help="with --match: the share of a batch's views blended with their neighbour (default %(default)s)")
    p.add_argument("--real-weight", type=integer(1, 16), default=1, metavar="N",
                   help="times each real writer's rendering (pendigits, paper) is seen per epoch")
    p.add_argument("--val-writers", metavar="RANGE",
                   help="pendigits writers left out of training and measured in the card (default 1-6; "
                        "'none': train on all)")
    p.add_argument("--folds", type=integer(2, 30), metavar="K",
                   help="cross-validate by writer first: K models, each holding out one K-th of the pendigits "
                        "writers and measured on them (OUTPUT.foldI.npz, summary OUTPUT.cv.json and .md), then "
                        "--output trained on every writer with the same recipe, the summary in its card")
    p.add_argument("--resume", action="store_true",
                   help="with --folds: keep the fold models a run with the same recipe finished (a cross-validation "
                        "split over several calls, e.g. a GPU machine's 10-minute limit)")
    p.add_argument("--fold", type=integer(0, 30), metavar="I",
                   help="with --folds K: train and measure fold I alone (OUTPUT.foldI.npz) and stop, so folds can run "
                        "in parallel processes or on other machines; 0: the model on every writer (OUTPUT) alone, "
                        "beside its folds; a later --folds K --resume keeps them and writes the summary")
    p.add_argument("--eval-drawn", type=integer(0, MAX_DRAWN), default=synthetic.EVAL_COUNT, metavar="N", help="drawn test digits (0: skip)")
    p.add_argument("--seed", type=integer(0, MAX_SEED), default=0, help="seeds augmentation, initial weights and batch order")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where torch trains (default auto: the GPU when one is usable, else the CPU)")
    p.add_argument("--cache", metavar="DIR",
                   help="reuse built training arrays from DIR (default: the user cache folder `gemmpad info` names; "
                        "'' disables); a fine-tune caches nothing unless given one")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--drawings", metavar="DIR",
                   help="a person's drawings, DIR/<digit>/*.json (strokes) or *.png, added to this training run "
                        "(to fine-tune a model on them: gemmpad fine-tune)")
    for moved in ("--base", "--steps"):  # fine-tuning's options before it had its own command: a pointer to it
        p.add_argument(moved, help=argparse.SUPPRESS)
    p.add_argument("--insist", action="store_true", help=argparse.SUPPRESS)


# ---------------------------------------------------------------- data


def _sources(spec: str) -> list[str]:
    if spec.strip() in ("", "none"):
        return ["original"]
    names = [s.strip() for s in spec.split(",") if s.strip()]
    bad = [s for s in names if s not in SOURCES]
    if bad:
        raise GemmpadError(f"--augment: unknown {bad}, expected names from {list(SOURCES)}")
    return ["original"] + [s for s in names if s != "original"]


def _training_arrays(args: argparse.Namespace, images: np.ndarray, labels: np.ndarray, sources: list[str],
                     md5: dict[str, str], pen: list[pendigits.PenDigit],
                     log: Callable[[str], None]) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """trainset.training_set(), reused from --cache when the same data and settings built it before."""
    key = [sorted(md5.items()), sources, args.seed, args.drawn, len(images), args.val,
           hashlib.md5(images.tobytes()).hexdigest(), len(pen), args.pen_copies, args.paper_copies,
           *([args.form_copies] if "forms" in sources else [])]  # (so the sets cached before forms still serve)
    return trainset.cached(args.cache, key, lambda: trainset.training_set(
        images, labels, sources, args.seed, args.drawn, log, pen, args.pen_copies, args.paper_copies,
        args.form_copies, args.jobs), log)


# ---------------------------------------------------------------- fitting


def soft_targets(args: argparse.Namespace) -> ModuleType:
    """The module whose teacher targets this run learns from (its TEMPERATURE, SOFT_WEIGHT and
    describe_loss() go on the card): gemmpad.learn.matching with --match, else gemmpad.learn.distill."""
    return matching if args.match else distill


def lr_schedule(kind: str, lr: float, epochs: int) -> list[float]:
    """Learning rate for each epoch (the native trainer gets the same list)."""
    if kind == "constant":
        return [lr] * epochs
    if kind == "step":  # /10 at 50% and 75%
        return [lr * (0.1 ** ((e >= epochs // 2) + (e >= 3 * epochs // 4))) for e in range(epochs)]
    return [lr * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * e / max(epochs, 1)))) for e in range(epochs)]



# ---------------------------------------------------------------- model file


def curve_image(history: list[dict[str, float]], suffix: str, title: str) -> bytes:
    """Loss and accuracy per epoch, as the bytes of an image of `suffix`'s type (.png, ...): made
    before any output is written, so that the model's files arrive together."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ep = [h["epoch"] for h in history]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    a.plot(ep, [h["loss"] for h in history], marker="o", ms=3)
    a.set(xlabel="epoch", ylabel="training loss (the card names it)", yscale="log", title="loss")
    b.plot(ep, [100 * h["train_acc"] for h in history], marker="o", ms=3, label="training set (augmented)")
    b.plot(ep, [100 * h["val_acc"] for h in history], marker="o", ms=3, label="held-out MNIST train images")
    b.set(xlabel="epoch", ylabel="accuracy (%)", title="accuracy")
    b.legend()
    for ax in (a, b):
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=suffix.lstrip(".").lower(), dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _plot_types() -> set[str] | None:
    """The suffixes matplotlib can save (None without matplotlib: then any is let through)."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        return None
    return {f".{ext}" for ext in FigureCanvasBase.get_supported_filetypes()}


def _versions() -> dict[str, str]:
    import torch

    from gemmpad import __version__

    return {"gemmpad": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "torch": torch.__version__}


def run(args: argparse.Namespace) -> int:
    """Train, save, measure; returns the exit status."""
    if args.base or args.steps or args.insist:
        raise GemmpadError("fine-tuning is its own command: gemmpad fine-tune [--drawings DIR] [--base MODEL]")
    if args.drawings and not Path(args.drawings).is_dir():  # before minutes of building, not after
        raise GemmpadError(f"--drawings {args.drawings}: not a folder")
    if args.folds and args.val_writers is not None:
        raise GemmpadError("--folds chooses the held-out writers itself: leave out --val-writers")
    if args.resume and not args.folds:
        raise GemmpadError("--resume continues a cross-validation: add --folds K")
    if args.fold is not None and not args.folds:
        raise GemmpadError(f"--fold {args.fold} runs one fold of a cross-validation: add --folds K")
    if args.fold is not None and args.fold > args.folds:
        raise GemmpadError(f"--fold {args.fold}: one of the folds of --folds {args.folds} (1 to {args.folds}; "
                           "0: the model on every writer)")
    require("torch", "gemmpad train", "'gemmpad[train]'")
    log: Callable[[str], None] = (lambda s: None) if args.quiet else (lambda s: print(printable(s), flush=True))
    t_start = time.perf_counter()
    out_path = Path(args.output) if args.output else Path("runs") / f"mnist-mlp-{datetime.now():%Y%m%d-%H%M%S}.npz"
    curve_path = Path(args.curve) if args.curve else out_path.with_suffix(".png")
    # before training, not after it
    check_output_file(out_path, f"--output {out_path}", {".npz"})
    unsure.refuse_card_clash(out_path, f"--output {out_path}")
    check_output_file(out_path.with_suffix(".json"), f"--output {out_path} (its card)")
    check_output_file(curve_path, f"--curve {curve_path}", _plot_types())
    outputs = [out_path, out_path.with_suffix(".json"), curve_path]
    owned = _fold_path(out_path, args.fold) if args.fold else out_path  # a fold's own files: others train beside it
    if args.resume:  # keeps the folds and the model a run of this recipe finished (their cards say which)
        outputs = []
    elif args.fold:
        outputs = _outputs(owned)
    elif args.folds and args.fold is None:  # the whole round: every fold's files and the summary too
        outputs += [p for k in range(1, args.folds + 1) for p in _outputs(_fold_path(out_path, k))]
        outputs += [out_path.with_suffix(".cv.json"), out_path.with_suffix(".cv.md")]
    with claim(owned, f"--output {owned}"):  # two runs to one --output: the second is refused now
        # the shipped model may be among them: one run must not silently replace it
        refuse_existing(outputs, "--output and --curve" if args.curve and curve_path in outputs else "--output",
                        force=args.force)
        if args.folds:
            return _cross_validate(args, out_path, curve_path, log, t_start)
        return _train(args, out_path, curve_path, log, t_start)


def _fold_path(out_path: Path, k: int) -> Path:
    return out_path.with_name(f"{out_path.stem}.fold{k}.npz")


def _outputs(model: Path) -> list[Path]:
    """A model file's outputs: the weights, the card and the curve beside them."""
    return [model, model.with_suffix(".json"), model.with_suffix(".png")]


def _cross_validate(args: argparse.Namespace, out_path: Path, curve_path: Path, log: Callable[[str], None],
                    t_start: float) -> int:
    """--folds: one model per fold of writers (measured on them, no Learn sets), the summary written
    beside --output, then --output on every writer with the summary in its card. The training
    arrays are built once: every fold drops its own writers' rows from the same cached set. Each
    card is tagged with its fold of this recipe (0: the model on every writer), so --resume keeps
    what a run of this recipe finished, and the model can train beside its folds (--fold 0)."""
    groups = crossval.folds(pendigits.writers(pendigits.read_pendigits()), args.folds)
    recipe = json.loads(json.dumps({k: v for k, v in vars(args).items() if k not in _NOT_RECIPE}))
    final = argparse.Namespace(**{**vars(args), "val_writers": "none"})
    final_tag = {"fold": 0, "of": len(groups), "recipe": recipe}
    if args.fold == 0:
        if args.resume and _finished_fold(out_path, final_tag) is not None:
            log(f"the model on every writer: kept from {out_path} (--resume)")
            return 0
        return _train(final, out_path, curve_path, log, t_start, fold=final_tag)
    cards = []
    for k, held in enumerate(groups, 1):
        if args.fold and k != args.fold:
            continue
        model, tag = _fold_path(out_path, k), {"fold": k, "of": len(groups), "recipe": recipe}
        done = _finished_fold(model, tag) if args.resume else None
        if done is not None:
            log(f"fold {k}/{len(groups)}: writers {held[0]}-{held[-1]}, kept from {model} (--resume)")
            cards.append(done)
            continue
        log(f"fold {k}/{len(groups)}: writers {held[0]}-{held[-1]} held out")
        fold = argparse.Namespace(**{**vars(args), "val_writers": ",".join(map(str, held)), "folds": None})
        _train(fold, model, model.with_suffix(".png"), log, time.perf_counter(), learn_sets=False, fold=tag)
        cards.append(load_model(model).card)
    if args.fold:
        return 0
    cv = crossval.summary(cards)
    cv["recipe"] = recipe
    with atomic_path(out_path.with_suffix(".cv.json")) as tmp:
        tmp.write_text(json.dumps(cv, indent=1))
    with atomic_path(out_path.with_suffix(".cv.md")) as tmp:
        tmp.write_text(crossval.markdown(cv))
    log(f"cross-validation over {len(cv['writers'])} writers: mean {100 * cv['mean']:.2f}% over styles, worst style "
        f"{100 * cv['worst_style']:.2f}%" + (f", forms {100 * cv['forms']:.2f}%" if "forms" in cv else ""))
    done = _finished_fold(out_path, final_tag) if args.resume else None
    if done is None:
        return _train(final, out_path, curve_path, log, t_start, cross_validation=cv, fold=final_tag)
    done["results"]["cross_validation"] = cv
    save_card(out_path, done)
    log(f"kept {out_path} (--resume: trained on every writer by this recipe); the summary written into its card")
    return 0


_NOT_RECIPE = ("output", "curve", "quiet", "force", "jobs", "cache", "data", "resume", "fold",  # where, not what
               "command", "_module", "base", "steps", "insist")  # and the command line's plumbing


def _finished_fold(model: Path, tag: dict[str, Any]) -> dict[str, Any] | None:
    """The card of a fold model (fold 0: the model on every writer) that a run of this recipe
    finished (trained and measured; the model with Learn's sets), else None (absent, unreadable,
    or stopped before its figures: it is trained again). Any other model is an error: mixing
    recipes would report neither, and a model not of a round (the shipped one) is never replaced."""
    try:
        card = load_model(model).card
    except GemmpadError as e:
        if tag["fold"] == 0 and model.exists():  # the file the user named, not one the round made
            raise GemmpadError(f"{e}; --output {model} is not replaced by --resume: name another or remove it") from None
        return None
    if card.get("cross_validation_fold") != tag:
        what = f"fold {tag['fold']} of {tag['of']}" if tag["fold"] else f"the model of a {tag['of']}-fold round"
        raise GemmpadError(f"{model}: not {what} of this recipe; remove it, name another --output, or leave out "
                           "--resume")
    done = card.get("results", {}).get("real_writers") if tag["fold"] else card.get("rehearsal")
    return card if done else None


def _train(args: argparse.Namespace, out_path: Path, curve_path: Path, log: Callable[[str], None],
           t_start: float, learn_sets: bool = True, cross_validation: dict[str, Any] | None = None,
           fold: dict[str, Any] | None = None) -> int:
    """The run itself, with the outputs checked and claimed; `learn_sets`: build the sets Learn
    needs beside the model (a fold's model is measured, never shipped); `fold`: which fold of which
    recipe this is, kept in the card for --resume."""
    if args.val_writers is None:
        args.val_writers = "1-6"
    if args.cache is None:
        args.cache = str(userdata.cache_dir())
    if args.cache:
        check_writable_dir(args.cache, f"--cache {args.cache}")
    if args.optimizer is None:
        args.optimizer = "adamw" if args.trainer == "torch" else "sgd"
    lr = args.lr if args.lr is not None else (0.05 if args.optimizer == "sgd" else 0.002)
    if args.trainer == "native" and args.optimizer != "sgd":
        raise GemmpadError("--trainer native implements SGD with momentum only: use --optimizer sgd")
    if args.trainer != "torch" and args.teacher != "none":
        raise GemmpadError("--teacher needs --trainer torch")
    if args.teachers > 1 and args.teacher != "cnn":
        raise GemmpadError("--teachers N is the size of a --teacher cnn ensemble: add --teacher cnn")
    if args.match and args.teacher != "cnn":
        raise GemmpadError("--match is how a teacher teaches: add --teacher cnn")
    if args.mix and not args.match:
        raise GemmpadError("--mix SHARE blends the views of --match: add --match")
    trainers.pick(args.trainer)  # --trainer native without a GPU: said now, before the data is built
    device = train_torch.device_for(args.device) if args.trainer == "torch" else "cuda"
    sources = _sources(args.augment)  # a typo here fails now, not after the data has loaded
    held_writers = evaluate.writer_range(args.val_writers)

    train, test = mnist.load_split("train", args.data), mnist.load_split("test", args.data)
    images, labels = train.images, train.labels.astype(np.int64)
    if args.limit is not None:
        images, labels = images[: args.limit], labels[: args.limit]
    if args.val is None:  # a default follows the data: a fixed 5000 would outnumber --limit 3000
        args.val = len(images) // VAL_SHARE
    if not 0 <= args.val < len(images):
        raise GemmpadError(f"--val {args.val}: must be between 0 and the number of training images ({len(images)})")
    split = np.random.default_rng([args.seed, 0]).permutation(len(images))
    val_idx, train_idx = split[: args.val], split[args.val :]
    log(f"building training arrays ({', '.join(sources)}) from {len(train_idx)} MNIST images")
    pen = pendigits.read_pendigits() if set(trainset.PEN_SOURCES) & set(sources) else []
    x, y, writer, counts = _training_arrays(args, images[train_idx], labels[train_idx], sources, {**train.md5},
                                            pen, log)
    keep = ~np.isin(writer, held_writers)  # the held-out writers' renderings never reach training
    ends = np.cumsum(list(counts.values()))  # training_set's rows come source by source
    counts = {src: int(keep[end - n : end].sum()) for (src, n), end in zip(counts.items(), ends)}
    # the real writers' renderings seen --real-weight times per epoch: a style only a few
    # people write (a 4 like an h, a 9 with a curled tail) carries more weight than one more MNIST image
    rows = np.flatnonzero(keep)
    rows = np.concatenate([rows, *[rows[writer[rows] > 0]] * (args.real_weight - 1)])
    x, y = x[rows], y[rows]
    if not len(x):  # every image rejected (no ink), or held out: nothing to train on, and no mean to take
        raise GemmpadError(f"{f'--data {args.data}' if args.data else 'MNIST'}: no training image is left (preprocessing "
                           "rejected every one, e.g. images without ink, or --val-writers holds them all out)")
    if args.drawings:
        from gemmpad.learn import personal

        extra = personal.folder_rows(args.drawings, args.seed, log)
        x, y, counts["drawings"] = np.concatenate([x, extra.x]), np.concatenate([y, extra.y]), len(extra)
    trained_writers = sorted(set(writer[keep].tolist()) - {0})
    held = pendigits.split_by_writer(pen, held_writers)[1]
    x_val = preprocess_batch(images[val_idx])[0].reshape(-1, 784)
    y_val = labels[val_idx]
    t_data = time.perf_counter() - t_start
    mean, std = float(x.mean()), float(x.std())
    xn = ((x - mean) / std).astype(np.float32)

    history: list[dict[str, float]] = []
    t_fit = time.perf_counter()

    def on_epoch(epoch: int, loss: float, train_acc: float, weights: dict[str, np.ndarray]) -> None:
        if not np.isfinite(loss):  # no later epoch can recover, and the weights are no model
            raise GemmpadError(f"training diverged in epoch {epoch + 1} (the loss is {loss}): lower --lr")
        val_acc = accuracy(Model(fold_normalisation(weights, mean, std)), x_val, y_val) if len(x_val) else float("nan")
        history.append({"epoch": epoch + 1, "loss": loss, "train_acc": train_acc, "val_acc": val_acc,
                        "lr": lrs[epoch], "seconds": time.perf_counter() - t_fit})
        log(f"epoch {epoch + 1:3d}/{len(lrs)}  loss {loss:.4f}  train {100 * train_acc:6.2f}%  "
            f"held-out {100 * val_acc:6.2f}%  lr {lrs[epoch]:.5f}  {time.perf_counter() - t_fit:6.1f} s")

    lrs = lr_schedule(args.schedule, lr, args.epochs)
    w0 = init_weights(args.seed)
    graphed = _graphed(args, device, lrs)
    log(f"training {len(x)} images on {args.trainer} ({device}, {args.precision}{', CUDA graph' if graphed else ''}), "
        f"{args.optimizer}, {args.epochs} epochs")
    teacher_card: dict[str, Any] | None = None
    options: dict[str, Any] = {"precision": args.precision}
    if args.trainer == "torch":
        teacher = None
        if args.teacher == "cnn":
            log(f"training the teacher ({distill.describe_team(args.teachers)}, {distill.EPOCHS} epochs) on {device}")
            x_val_n = ((x_val - mean) / std).astype(np.float32)
            if args.match:
                team, teacher_val = distill.train_team(xn, y, x_val_n, y_val, args.seed, device, log, args.teachers)
                log(f"  teacher ({distill.describe_team(args.teachers)}): held-out {100 * teacher_val:.2f}%; "
                    f"{matching.describe(args.mix)}")
                options["match"] = matching.Matching(team, matching.Views(-mean / std, device, args.mix))
            else:
                teacher, teacher_val = distill.teacher_logits(xn, y, x_val_n, y_val, args.seed, device, log,
                                                              members=args.teachers)
            teacher_card = {"kind": "cnn", "members": args.teachers, "layers": distill.describe(),
                            "epochs": distill.EPOCHS,
                            "temperature": soft_targets(args).TEMPERATURE, "soft_weight": soft_targets(args).SOFT_WEIGHT,
                            "matching": matching.describe(args.mix) if args.match else None,
                            "held_out_accuracy": teacher_val, "seconds": round(time.perf_counter() - t_fit, 1)}
        options.update(optimizer=args.optimizer, device=device, teacher=teacher, progress=not args.quiet,
                       use_graph=graphed)
    # weight decay on every parameter, biases included, on every trainer, so curves compare
    w = trainers.pick(args.trainer, **options).fit(
        xn, y, w0, epochs=args.epochs, batch_size=args.batch_size, lr_schedule=lrs, momentum=args.momentum,
        weight_decay=args.weight_decay, decay_biases=True, seed=args.seed, callback=on_epoch)
    t_train = time.perf_counter() - t_fit
    model = Model(fold_normalisation(w, mean, std))
    card = _card(args, out_path, lr, mean, std, device, train, test, counts, len(train_idx), trained_writers, history)
    card["training"]["teacher"] = teacher_card
    card["training"]["cuda_graph"] = graphed
    card["time_s"] = {"data": round(t_data, 1), "train": round(t_train, 1)}
    if fold is not None:
        card["cross_validation_fold"] = fold
    log(f"measuring it (written to {out_path} once measured)")
    try:  # every byte made before the first is written: a Ctrl-C or a kill until then leaves nothing under its name
        card["results"] = measure(model, test, args.eval_drawn, held, args.val_writers, args.jobs, log)
        if cross_validation is not None:
            card["results"]["cross_validation"] = cross_validation
        test_acc = card["results"]["mnist_test_accuracy"]
        sets: rehearsal_sets.References | None = None
        if learn_sets:
            log("building the sets Learn needs, to ship beside the model")
            sets = rehearsal_sets.references(Model(model.weights, card), mnist.data_dir(args.data), None,
                                             min(rehearsal_sets.REPLAY_ROWS, len(train_idx)), log, writers=bool(pen))
        curve = curve_image(history, curve_path.suffix, f"{out_path.name}: {args.trainer}/{args.optimizer}/"
                                                        f"{args.precision}, MNIST test {100 * test_acc:.2f}%")
        written = [out_path, out_path.with_suffix(".json"), curve_path]
        if sets is not None:
            card["rehearsal"] = rehearsal.write(out_path, sets)
            written.append(rehearsal.path_for(out_path))
        card["time_s"]["total"] = round(time.perf_counter() - t_start, 1)
        write_bytes(curve_path, curve)
    except Exception:  # a failure after training keeps the trained weights, the card saying how far it got
        model.save(out_path, card)
        raise
    model.save(out_path, card)  # last: the weights' arrival means the run is done
    log(f"wrote {', '.join(map(str, written[:-1]))} and {written[-1]} ({card['time_s']['total']:.0f} s)")
    return 0


def measure(model: Model, test: mnist.Split, eval_drawn: int, held: list[pendigits.PenDigit], held_spec: str,
            jobs: int, log: Callable[[str], None]) -> dict[str, Any]:
    """The card's "results": the weights measured exactly as shipped (NumPy forward on
    preprocessed inputs) on MNIST test, eval_drawn synthetic digits and the held-out writers."""
    x_test = preprocess_batch(test.images)[0].reshape(-1, 784)
    test_acc = accuracy(model, x_test, test.labels.astype(np.int64))
    log(f"MNIST test accuracy {100 * test_acc:.2f}% (10,000 images through preprocess, NumPy forward)")
    drawn_acc: dict[str, float] = {}
    if eval_drawn > 0:
        ds = synthetic.generate(eval_drawn, synthetic.EVAL_SEED)
        pred = model.forward(ds.images.reshape(-1, 784)).argmax(1)
        drawn_acc = synthetic.accuracy_by_style(pred, ds)
        worst = sorted((v, k) for k, v in drawn_acc.items() if k != "all")[:3]
        log(f"drawn-digit accuracy {100 * drawn_acc['all']:.2f}% on {eval_drawn} "
            f"(worst: {', '.join(f'{k} {100 * v:.1f}%' for v, k in worst)})")
    real: dict[str, Any] = {}
    if held:
        log(f"reading {len(held)} digits of unseen writers {held_spec} at {len(pendigits.STYLES)} styles "
            "and on paper")
        real = evaluate.real_writer_report(model, held, jobs=jobs, forms=True)
        log(f"real writers (unseen): mean {100 * real['mean']:.2f}% over styles, worst {100 * real['worst']:.2f}%, "
            f"on paper {100 * real['paper']:.2f}%, on forms {100 * real['forms']:.2f}%")
    return {
        "mnist_test_accuracy": test_acc,
        "mnist_test_how": "10,000 t10k images through gemmpad.inputs.preprocess, NumPy forward of the saved weights",
        "drawn_accuracy": drawn_acc,
        "drawn_how": (f"{eval_drawn} synthetic drawn digits (gemmpad.data.synthetic, seed {synthetic.EVAL_SEED}, "
                      f"{len(synthetic.STYLE_NAMES)} styles in equal shares, random size/position/slant/"
                      "brush width, half inverted), painted with gemmpad.inputs.strokes on a 280x280 canvas "
                      "and preprocessed like the app") if eval_drawn else None,
        "real_writers": real or None,
        "real_writers_how": (f"pendigits writers {held_spec} (never trained on), every digit drawn with "
                             "gemmpad.inputs.strokes at each of gemmpad.data.pendigits.STYLES and preprocessed like the app; "
                             f"'paper': the same digits photographed/scanned by gemmpad.data.paper (seed "
                             f"{paper.PAPER_SEED}); 'forms': the same digits on each kind of scanned form of "
                             "gemmpad.data.forms (seed FORMS_SEED + the variant's index), pooled without the "
                             "printed-box variant; gemmpad.commands.evaluate.real_writer_report") if real else None,
    }


def _card(args: argparse.Namespace, out_path: Path, lr: float, mean: float, std: float, device: str,
          train: mnist.Split, test: mnist.Split, counts: dict[str, int], n_train: int,
          trained_writers: list[int], history: list[dict[str, float]]) -> dict[str, Any]:
    """The model card as far as training knows it; "results" and "time_s" are added by run()."""
    return {
        "name": out_path.stem,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "architecture": "784-100-100-10 MLP, ReLU, softmax: softmax(relu(relu(x@W1+b1)@W2+b2)@W3+b3)",
        "input": "gemmpad.inputs.preprocess output flattened row-major: 28x28 float32 in [0,1], ink bright; "
                 f"training normalisation (x-{mean:.5f})/{std:.5f} folded into W1/b1",
        "data": {"md5": {**train.md5, **test.md5}, "canonical_mnist": mnist.checksums_ok({**train.md5, **test.md5}),
                 "sources": DATA_SOURCES},
        "training": {
            "engine": args.trainer, "device": _device_name(device, args.trainer), "precision": args.precision,
            "optimizer": args.optimizer, "lr": lr, "momentum": args.momentum if args.optimizer == "sgd" else None,
            "weight_decay": args.weight_decay, "schedule": args.schedule, "epochs": args.epochs,
            "batch_size": args.batch_size, "seed": args.seed, "sources": counts,
            "mnist_train_images": n_train, "held_out": int(args.val),
            "pendigits_writers": trained_writers, "pendigits_copies": args.pen_copies,
            "paper_copies": args.paper_copies, "form_copies": args.form_copies if "forms" in counts else None,
            "real_weight": args.real_weight,
            "loss": ("softmax cross-entropy" if args.teacher == "none" else
                     soft_targets(args).describe_loss()),
            "init": "He-uniform, zero biases",
        },
        "results": {},
        "history": history,
        "versions": _versions(),
    }


def _graphed(args: argparse.Namespace, device: str, lrs: list[float]) -> bool:
    """Whether torch replays a captured step (gemmpad.learn.torch_graph): on a GPU in fp32, with AdamW
    or one learning rate (SGD's captured step keeps its rate). The same step as eager, ~6x faster on
    the H200 (1.7 -> 0.27 ms a step at batch 128: gemmpad/learn/NOTES.md, 2026-11-30)."""
    return (args.trainer == "torch" and device == "cuda" and args.precision == "fp32"
            and (args.optimizer == "adamw" or len(set(lrs)) == 1))


def _device_name(device: str, engine: str) -> str:
    import torch

    if engine == "native":
        from gemmpad.runtime import native

        return native.cuda_status().device or "cuda"
    if device == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
