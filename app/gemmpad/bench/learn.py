"""`gemmpad bench learn`: does correcting a few drawings teach a style, and how fast.

Quality: every (writer, digit, style) cell of real writers the model never trained on
(pendigits, drawn like the app at light-ink styles) that the model reads worse than
--below. For each, the person "corrects" the first --corrections samples it misreads
(as the window would store them: strokes, brush width, canvas), Learn runs
(gemmpad.learn.finetune.learn with its defaults), and the table reports how many of the
same writer's *other* samples of that digit are read right after, and what happened to
MNIST test and to the unseen writers: mean and worst over the cells.

Speed: the time from "Learn" to the new model answering (drawings -> training rows ->
fine-tune -> before/after figures -> a Model -> one reading), for --drawings counts, on
this machine's engine (NumPy on a CPU, the native CUDA trainer on a GPU), next to the
same fine-tune (same rows, targets, orders and learning rates) in PyTorch; for a first
Learn (nothing kept) and for a Learn after one more correction (the window's case).

    gemmpad bench learn --model MODEL [--out DIR [--force]]    (the table of models/README.md)
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad.data import drawings, pendigits, userdata
from gemmpad.commands import evaluate
from gemmpad.learn import finetune, rehearsal, rehearsal_sets, trainers
from gemmpad.commands.args import integer, number
from gemmpad.bench import add_out_argument
from gemmpad.bench.headers import ROOT
from gemmpad.bench.machine import machine
from gemmpad.bench.report import out_refusal
from gemmpad.errors import GemmpadError, require
from gemmpad.inputs.files import write_text
from gemmpad.runtime.model import Model, accuracy, load_model
from gemmpad.terminal import counted

LIGHT_STYLES = [k for k, s in pendigits.STYLES.items() if not s.dark_ink]  # the app's canvas: light ink
# The unseen writers' figure of a model whose Learn sets hold none (trained without pendigits, or no pendigits
# file): said in the cells and the table alike, not as a change of 0 in one and NaN in the other.
NOT_MEASURED = "not measured (no unseen writers in the Learn sets)"
# What the bench runs on in a source checkout: the shipped model has seen every writer, and fold 1 of its
# cross-validation never saw --writers' default 1-6 (models/README.md's tables come from the folds).
FOLD_MODEL = ROOT / "assets" / "cv" / "mnist-mlp.fold1.npz"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="model to correct, one that never saw --writers (default: the shipped model, which "
                                    "saw every writer: in a checkout, assets/cv/mnist-mlp.fold1.npz never saw 1-6)")
    p.add_argument("--data", help="MNIST folder (default: $GEMMPAD_DATA, else `gemmpad data fetch mnist`'s; see gemmpad.data.datafind)")
    p.add_argument("--cache", default=str(userdata.cache_dir()), help="replay/test arrays cache ('' disables)")
    p.add_argument("--writers", default="1-6", help="writers the model never trained on, to correct (a fold model's held-out ones)")
    p.add_argument("--styles", default=",".join(LIGHT_STYLES), help="comma list of gemmpad.data.pendigits.STYLES")
    p.add_argument("--below", type=number(0, 1), default=0.8, help="cells the model reads worse than this")
    p.add_argument("--corrections", type=integer(1, 20), default=5)
    p.add_argument("--max-cells", type=integer(0, 10_000), default=0, metavar="N", help="at most N cells (0: all)")
    p.add_argument("--drawings", type=integer(1, 5000), nargs="*", default=[5, 50, 200], metavar="N",
                   help="drawing counts to time Learn with, next to torch (none: skip the timing, and torch)")
    p.add_argument("--repeats", type=integer(1, 100), default=3)
    p.add_argument("--trainer", choices=finetune.ENGINES, default="auto")
    add_out_argument(p, ("learn.json", "learn.md"))


@dataclass(frozen=True)
class Cell:
    writer: int
    digit: int
    style: str
    corrections: list[drawings.Example]
    others: list[drawings.Example]
    base_acc: float


def cells(model: Model, pen: list[pendigits.PenDigit], styles: list[str], below: float, n_fix: int) -> list[Cell]:
    """The misread cells, worst first: corrections are the first n_fix misread samples."""
    out = []
    for style in styles:
        for w in pendigits.writers(pen):
            for d in range(10):
                mine = [s for s in pen if s.writer == w and s.digit == d]
                ex = [drawings.example_of(drawings.pen_drawing(s, style), d) for s in mine]
                if len(ex) < n_fix + 5:
                    continue
                pred = model.forward(np.stack([e.image28.reshape(784) for e in ex])).argmax(1)
                acc = float(np.mean(pred == d))
                wrong = [i for i in range(len(ex)) if pred[i] != d][:n_fix]
                if acc >= below or len(wrong) < n_fix:
                    continue
                out.append(Cell(w, d, style, [ex[i] for i in wrong], [e for i, e in enumerate(ex) if i not in wrong],
                                acc))
    return sorted(out, key=lambda c: c.base_acc)


def quality(model: Model, found: list[Cell], refs: rehearsal_sets.References, engine: str,
            log: Any = print) -> list[dict[str, Any]]:
    rows = []
    cache = finetune.LearnCache()  # the prepared replay and the base's figures, made once
    for c in found:
        out = finetune.learn(model, c.corrections, refs, finetune.Settings(), engine, cache=cache)
        tx = np.stack([e.image28.reshape(784) for e in c.others])
        ty = np.full(len(c.others), c.digit)
        row = {"writer": c.writer, "digit": c.digit, "style": c.style, "base_all": c.base_acc,
               "others_before": accuracy(model, tx, ty),
               "others_after": accuracy(out.weights, tx, ty),
               "n_others": len(c.others), "accepted": out.accepted, **{f"drop_{k}": v for k, v in out.drops().items()},
               "seconds": out.seconds["total"]}
        rows.append(row)
        writers = (f"{-100 * row['drop_unseen writers']:+.2f} points" if "drop_unseen writers" in row
                   else NOT_MEASURED)
        log(f"  writer {c.writer} digit {c.digit} {c.style}: others {100 * row['others_before']:.0f} -> "
            f"{100 * row['others_after']:.0f} %, MNIST {-100 * row.get('drop_MNIST test', 0):+.2f} points, unseen writers "
            f"{writers}, {'kept' if out.accepted else 'refused'}")
    return rows


def _answer(weights: dict[str, np.ndarray], image28: np.ndarray) -> int:
    return int(Model(weights).forward(image28.reshape(1, 784)).argmax())


def _save(folder: Path, name: str, sample: pendigits.PenDigit) -> None:
    from gemmpad.inputs import strokes

    d = drawings.pen_drawing(sample, "brush-18px-280")
    strokes.save(folder / str(sample.digit) / f"{name}.json", d.strokes, d.widths, d.canvas)


CASES = {"first": "first Learn (nothing kept)", "saved": "first Learn in the window (drawings painted as saved)",
         "restart": "Learn after a restart (drawings learned before)", "again": "Learn after one more correction"}


def timing(model: Model, pen: list[pendigits.PenDigit], cache: str | None, mnist: str | None, counts: list[int],
           repeats: int, engine: str, log: Any = print) -> list[dict[str, Any]]:
    """Seconds from Learn to the new model's first answer, per drawing count, ours vs the same
    fine-tune in torch, in each case of CASES, each with one drawing the last Learn did not see:
    - "first": nothing kept: every drawing file read and painted, the replay and test sets read
      from the disk cache, the base's figures, rows, fine-tune, figures, one reading;
    - "saved": as "first", but the drawings were painted when they were saved (the window's
      Learner.prefetch), as for corrections made in the window since its start;
    - "restart": the window's first Learn of a session: the LearnCache read from its file (the
      drawings' pictures and rows as the last session's Learn left them), the replay sets too;
    - "again": the window's next Learn: the LearnCache and replay sets in memory.
    The window's Learner also writes the LearnCache after a Learn: "restart" and "again" include it.
    Each run adds a drawing of its own, so no run finds its new drawing kept."""
    import tempfile

    import torch

    device = "cuda" if engine != "numpy" and torch.cuda.is_available() else "cpu"
    if device == "cpu":
        torch.set_num_threads(1)  # two BLAS threads wait for each other on a busy 2-core VM (models/README.md)
    rng = np.random.default_rng(3)
    settings = finetune.Settings()
    refs = rehearsal.sets_for(model, mnist, cache)
    out = []
    for n in counts:
        order = rng.permutation(len(pen))
        folder = Path(tempfile.mkdtemp(prefix="gemmpad-bench-learn-"))
        kept_dir = folder / ".cache"
        for i in order[: n - 1]:
            _save(folder, f"{i}", pen[i])
        extras = iter(order[n - 1 : n - 1 + 2 * len(CASES) * repeats])
        kept = finetune.LearnCache()
        if n > 1:
            ex = drawings.read_folder(folder, say=log, known=kept.drawings)
            finetune.learn(model, ex, refs, settings, engine, cache=kept)
            kept.save(kept_dir, ex)
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(repeats):
            for case in CASES:
                for who in ("ours", "torch"):
                    extra = next(extras)
                    _save(folder, "extra", pen[extra])
                    painted = finetune.LearnCache()
                    if case == "saved":
                        drawings.read_folder(folder, say=log, known=painted.drawings)  # before Learn is pressed
                    t0 = time.perf_counter()
                    memo = {"first": finetune.LearnCache, "saved": lambda: painted,
                            "restart": lambda: finetune.LearnCache.load(kept_dir), "again": lambda: kept}[case]()
                    refs_now = refs if case == "again" else rehearsal.sets_for(model, mnist, cache)
                    ex = drawings.read_folder(folder, say=log, known=memo.drawings)
                    if who == "ours":
                        o = finetune.learn(model, ex, refs_now, settings, engine, cache=memo)
                        w, name = o.weights, o.engine
                    else:
                        rows = finetune.user_rows(ex, settings, memo)
                        w = finetune.tune(model.weights, rows, memo.base(model.weights, refs_now)[0], settings,
                                          trainers.pick("torch", device=device))[0]
                        finetune.figures(w, [], refs_now)
                    _answer(w, ex[0].image28)
                    if case != "first":
                        memo.save(folder / ".scratch", ex)
                    times.setdefault((case, who), []).append(time.perf_counter() - t0)
                    added = folder / str(pen[extra].digit) / "extra.json"
                    added.unlink()
                    if not any(added.parent.iterdir()):
                        added.parent.rmdir()  # an empty digit folder would be reported as skipped
        shutil.rmtree(folder, ignore_errors=True)
        row = {"drawings": n, "engine": name, "torch_device": device, "rows": o.rows, "steps": o.steps,
               "parts_last": o.seconds, "seconds_all": {f"{c}/{w}": v for (c, w), v in times.items()},
               **{f"{c}_{w}": float(np.median(v)) for (c, w), v in times.items()}}
        out.append(row)
        log(f"  {counted(n, 'drawing', '4d')}, {name} / torch ({device}): "
            + ", ".join(f"{c} {row[f'{c}_ours']:.2f} / {row[f'{c}_torch']:.2f} s" for c in CASES)
            + f" (last: rows {o.seconds['rows']:.2f}, train {o.seconds['train']:.2f}, "
              f"measure {o.seconds['measure']:.2f})")
    return out


def summary(rows: list[dict[str, Any]], times: list[dict[str, Any]]) -> str:
    lines = []
    if rows:
        after = np.array([r["others_after"] for r in rows])
        mn = np.array([r.get("drop_MNIST test", 0.0) for r in rows])
        wr = np.array([r["drop_unseen writers"] for r in rows if "drop_unseen writers" in r])
        writers = f"{-100 * wr.mean():+.2f} / {-100 * wr.max():+.2f}" if len(wr) else NOT_MEASURED
        lines += ["| cells | others read right before | after (mean) | after (worst) | cells >= 90 % | "
                  "MNIST test change (mean / worst) | cells within 0.3 points | unseen writers change (mean / worst) |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|",
                  f"| {len(rows)} | {100 * np.mean([r['others_before'] for r in rows]):.1f} % | {100 * after.mean():.1f} % "
                  f"| {100 * after.min():.1f} % | {int(np.sum(after >= 0.9))} of {len(rows)} | "
                  f"{-100 * mn.mean():+.2f} / {-100 * mn.max():+.2f} | {sum(r['accepted'] for r in rows)} of {len(rows)} "
                  f"| {writers} |", ""]
    if times:
        lines += ["| drawings | " + " | ".join(CASES.values()) + " | engine / torch device |",
                  "|---:|" + "---:|" * len(CASES) + "---|"]
        lines += [f"| {t['drawings']} | " + " | ".join(f"{t[f'{c}_ours']:.2f} s (torch {t[f'{c}_torch']:.2f} s)"
                                                       for c in CASES) + f" | {t['engine']} / {t['torch_device']} |"
                  for t in times]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import json

    # what was typed first, before the model and the data are read
    styles = [s.strip() for s in args.styles.split(",") if s.strip()]
    bad = [s for s in styles if s not in pendigits.STYLES]
    if bad:
        raise GemmpadError(f"--styles: unknown {bad}, expected names from {list(pendigits.STYLES)}")
    ids = set(evaluate.writer_range(args.writers))
    model = load_model(args.model)
    seen = ids & set(model.trained_writers)
    if seen:
        fold = f"--model {FOLD_MODEL} --writers 1-6, or " if FOLD_MODEL.is_file() else ""
        which = "every one of them" if seen == ids else f"writers {sorted(seen)} of them"
        trained = counted(len(model.trained_writers), "pendigits writer")
        raise GemmpadError(f"--writers {args.writers}: the model trained on {which} ({trained} in all), so they are not "
                           f"new people to it; name writers it never saw, or a cross-validation fold's model and its "
                           f"writers ({fold}the OUTPUT.foldI.npz that `gemmpad train --folds K` writes)")
    if args.drawings:  # the timing's reference is the same fine-tune in torch: said now, not after the cells
        require("torch", "gemmpad bench learn's timing (Learn next to the same fine-tune in torch)", "torch",
                "or pass --drawings with no counts to skip the timing")
    pen = [s for s in pendigits.read_pendigits() if s.writer in ids]
    refs = rehearsal.sets_for(model, args.data, args.cache or None, log=print)
    found = cells(model, pen, styles, args.below, args.corrections)
    if args.max_cells:
        found = found[: args.max_cells]
    if not found and not args.drawings:  # empty tables, learn.json and learn.md, and exit 0, said nothing
        raise GemmpadError(f"nothing measured: no cell of writers {args.writers} reads below {100 * args.below:.0f} % "
                           f"with {counted(args.corrections, 'misread sample')} to correct, and --drawings names no "
                           "count to time: raise --below, name other --writers, or give --drawings counts")
    print(f"{counted(len(found), 'cell')} read below {100 * args.below:.0f} % (writers {args.writers}, "
          f"{counted(len(styles), 'style')})")
    rows = quality(model, found, refs, args.trainer)
    times = timing(model, pen, args.cache or None, args.data, args.drawings, args.repeats,
                   args.trainer) if args.drawings else []
    text = summary(rows, times)
    print(text)
    print(f"load average {os.getloadavg()[0]:.1f} on {counted(os.cpu_count() or 0, 'core')}")
    if args.out:
        out, refuse_as = Path(args.out), out_refusal(args.force)
        write_text(out / "learn.json", json.dumps({"machine": machine(), "model": str(model.path), "cells": rows,
                                                   "timing": times}, indent=1) + "\n", refuse_as)
        write_text(out / "learn.md", text + "\n", refuse_as)
    return 0
