"""`gemmpad bench learn`: does correcting a few drawings teach a style, and how fast.

Quality: every (writer, digit, style) cell of real writers the model never trained on
(pendigits, drawn like the app at light-ink styles) that the model reads worse than
--below. For each, the person "corrects" the first --corrections samples it misreads
(as the window would store them: strokes, brush width, canvas), Learn runs
(gemmpad.finetune.learn with its defaults), and the table reports how many of the
same writer's *other* samples of that digit are read right after, and what happened to
MNIST test and to the unseen writers: mean and worst over the cells.

Speed: the time from "Learn" to the new model answering (drawings -> training rows ->
fine-tune -> before/after figures -> a Model -> one reading), for --drawings counts, on
this machine's engine (NumPy on a CPU, the native CUDA trainer on a GPU), next to the
same fine-tune (same rows, orders and learning rates) in PyTorch.
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

from gemmpad import drawings, evaluate, finetune, pendigits, replay, userdata
from gemmpad.args import integer, number
from gemmpad.bench.machine import machine
from gemmpad.errors import GemmpadError
from gemmpad.files import write_text
from gemmpad.model import Model, load_model

LIGHT_STYLES = [k for k, s in pendigits.STYLES.items() if not s.dark_ink]  # the app's canvas: light ink


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="model to correct (default: the shipped model)")
    p.add_argument("--data", help="MNIST folder (default: $GEMMPAD_DATA, ...; see gemmpad.replay)")
    p.add_argument("--cache", default=str(userdata.cache_dir()), help="replay/test arrays cache ('' disables)")
    p.add_argument("--writers", default="1-6", help="unseen writers to correct (the shipped model's held-out ones)")
    p.add_argument("--styles", default=",".join(LIGHT_STYLES), help="comma list of gemmpad.pendigits.STYLES")
    p.add_argument("--below", type=number(0, 1), default=0.8, help="cells the model reads worse than this")
    p.add_argument("--corrections", type=integer(1, 20), default=5)
    p.add_argument("--max-cells", type=integer(0, 10_000), default=0, metavar="N", help="at most N cells (0: all)")
    p.add_argument("--drawings", type=integer(1, 5000), nargs="*", default=[5, 50, 200], metavar="N",
                   help="drawing counts to time Learn with (none: skip the timing)")
    p.add_argument("--repeats", type=integer(1, 100), default=3)
    p.add_argument("--engine", choices=finetune.ENGINES, default="auto")
    p.add_argument("--out", metavar="DIR", help="write learn.json and learn.md here")


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


def quality(model: Model, found: list[Cell], refs: replay.References, engine: str,
            log: Any = print) -> list[dict[str, Any]]:
    rows = []
    for c in found:
        out = finetune.learn(model, c.corrections, refs, finetune.Settings(), engine)
        tx = np.stack([e.image28.reshape(784) for e in c.others])
        ty = np.full(len(c.others), c.digit)
        row = {"writer": c.writer, "digit": c.digit, "style": c.style, "base_all": c.base_acc,
               "others_before": finetune.accuracy(model, tx, ty),
               "others_after": finetune.accuracy(out.weights, tx, ty),
               "n_others": len(c.others), "accepted": out.accepted, **{f"drop_{k}": v for k, v in out.drops().items()},
               "seconds": out.seconds["total"]}
        rows.append(row)
        log(f"  writer {c.writer} digit {c.digit} {c.style}: others {100 * row['others_before']:.0f} -> "
            f"{100 * row['others_after']:.0f} %, MNIST {-100 * row.get('drop_MNIST test', 0):+.2f}, unseen writers "
            f"{-100 * row.get('drop_unseen writers', 0):+.2f} points, {'kept' if out.accepted else 'refused'}")
    return rows


def tune_torch(weights: dict[str, np.ndarray], user: replay.Arrays, rep: replay.Arrays,
               settings: finetune.Settings, device: str) -> dict[str, np.ndarray]:
    """finetune.tune in PyTorch: the same normalisation, rows, orders and learning rates."""
    import torch

    from gemmpad.train import fold_normalisation

    mean, std = float(rep.x.mean()), float(rep.x.std())
    x = torch.from_numpy(((np.concatenate([user.x, rep.x]) - mean) / std).astype(np.float32)).to(device)
    y = torch.from_numpy(np.concatenate([user.y, rep.y]).astype(np.int64)).to(device)
    orders = finetune.batch_plan(user.y, rep.y, settings, np.random.default_rng([settings.seed, 1]))
    lrs = finetune.decay(settings.lr, len(orders), settings.final_lr)
    w0 = finetune.unfold_normalisation(weights, mean, std)
    p = {k: torch.tensor(v, device=device, requires_grad=True) for k, v in w0.items()}
    opt = torch.optim.SGD(list(p.values()), lr=lrs[0], momentum=settings.momentum)
    for order, lr in zip(orders, lrs):
        for g in opt.param_groups:
            g["lr"] = lr
        idx_all = torch.from_numpy(order.astype(np.int64)).to(device)
        for s in range(0, len(order), settings.batch):
            idx = idx_all[s : s + settings.batch]
            h = torch.relu(x[idx] @ p["W1"] + p["b1"])
            h = torch.relu(h @ p["W2"] + p["b2"])
            loss = torch.nn.functional.cross_entropy(h @ p["W3"] + p["b3"], y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return fold_normalisation({k: v.detach().cpu().numpy() for k, v in p.items()}, mean, std)


def _answer(weights: dict[str, np.ndarray], image28: np.ndarray) -> int:
    return int(Model(weights).forward(image28.reshape(1, 784)).argmax())


def timing(model: Model, pen: list[pendigits.PenDigit], cache: str | None, mnist: str | None, counts: list[int],
           repeats: int, engine: str, log: Any = print) -> list[dict[str, Any]]:
    """Seconds from Learn to the new model's first answer, per drawing count, ours vs torch: reading
    the drawings folder (strokes files, as the window saved them), the replay and test sets (from
    the cache), the fine-tune, the before/after figures, one reading with the new weights."""
    import tempfile

    import torch

    from gemmpad import strokes

    device = "cuda" if engine != "numpy" and torch.cuda.is_available() else "cpu"
    rng = np.random.default_rng(3)
    out = []
    for n in counts:
        picks = [pen[i] for i in rng.permutation(len(pen))[:n]]
        folder = Path(tempfile.mkdtemp(prefix="gemmpad-bench-learn-"))
        for i, s in enumerate(picks):
            d = drawings.pen_drawing(s, "brush-18px-280")
            strokes.save(folder / str(s.digit) / f"{i}.json", d.strokes, d.widths, d.canvas)
        settings = finetune.Settings()
        threads = sorted({torch.get_num_threads(), 1}, reverse=True) if device == "cpu" else [torch.get_num_threads()]
        ours, theirs, name = [], {t: [] for t in threads}, ""
        for _ in range(repeats):
            t0 = time.perf_counter()
            ex = drawings.read_folder(folder, say=log)
            refs = replay.references(model, mnist, cache)
            o = finetune.learn(model, ex, refs, settings, engine)  # a fresh cache: every drawing painted
            _answer(o.weights, ex[0].image28)
            ours.append(time.perf_counter() - t0)
            name = o.engine
            for t in threads:
                torch.set_num_threads(t)
                t0 = time.perf_counter()
                ex = drawings.read_folder(folder, say=log)
                refs = replay.references(model, mnist, cache)
                rows = finetune.user_rows(ex, settings, np.random.default_rng([settings.seed, 2]))
                finetune.figures(model.weights, [], refs)
                w = tune_torch(model.weights, rows, refs.replay, settings, device)
                finetune.figures(w, [], refs)
                _answer(w, ex[0].image28)
                theirs[t].append(time.perf_counter() - t0)
        torch.set_num_threads(threads[0])
        shutil.rmtree(folder, ignore_errors=True)
        row = {"drawings": n, "engine": name, "seconds_median": float(np.median(ours)), "seconds_all": ours,
               "torch_device": device, "torch_seconds_median": {t: float(np.median(v)) for t, v in theirs.items()},
               "torch_seconds_all": theirs, "rows": o.rows, "steps": o.steps, "parts_last": o.seconds}
        out.append(row)
        log(f"  {n:4d} drawings: {name} {row['seconds_median']:.2f} s (rows {o.seconds['rows']:.2f}, train "
            f"{o.seconds['train']:.2f}, measure {o.seconds['measure']:.2f}); torch ({device}) "
            + ", ".join(f"{v:.2f} s with {t} thread{'s' if t > 1 else ''}"
                        for t, v in row["torch_seconds_median"].items()))
    return out


def summary(rows: list[dict[str, Any]], times: list[dict[str, Any]]) -> str:
    lines = []
    if rows:
        after = np.array([r["others_after"] for r in rows])
        mn = np.array([r.get("drop_MNIST test", 0.0) for r in rows])
        wr = np.array([r.get("drop_unseen writers", np.nan) for r in rows])
        lines += ["| cells | others read right before | after (mean) | after (worst) | cells >= 90 % | "
                  "MNIST test change (mean / worst) | unseen writers change (mean / worst) | kept by the 0.3-point rule |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|",
                  f"| {len(rows)} | {100 * np.mean([r['others_before'] for r in rows]):.1f} % | {100 * after.mean():.1f} % "
                  f"| {100 * after.min():.1f} % | {int(np.sum(after >= 0.9))} of {len(rows)} | "
                  f"{-100 * mn.mean():+.2f} / {-100 * mn.max():+.2f} | {-100 * np.nanmean(wr):+.2f} / "
                  f"{-100 * np.nanmax(wr):+.2f} | {sum(r['accepted'] for r in rows)} of {len(rows)} |", ""]
    if times:
        lines += ["| drawings | Learn -> answer (ours) | engine | same fine-tune in torch |", "|---:|---:|---|---|"]
        lines += [f"| {t['drawings']} | {t['seconds_median']:.2f} s | {t['engine']} | "
                  + ", ".join(f"{v:.2f} s ({t['torch_device']}, {k} thread{'s' if k > 1 else ''})"
                              for k, v in t["torch_seconds_median"].items()) + " |" for t in times]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import json

    model = load_model(args.model)
    styles = [s.strip() for s in args.styles.split(",") if s.strip()]
    bad = [s for s in styles if s not in pendigits.STYLES]
    if bad:
        raise GemmpadError(f"--styles: unknown {bad}, expected names from {list(pendigits.STYLES)}")
    ids = set(evaluate.writer_range(args.writers))
    seen = ids & set(replay.trained_writers(model))
    if seen:
        raise GemmpadError(f"--writers {args.writers}: the model trained on writers {sorted(seen)}")
    pen = [s for s in pendigits.read_pendigits() if s.writer in ids]
    refs = replay.references(model, args.data, args.cache or None, log=print)
    found = cells(model, pen, styles, args.below, args.corrections)
    if args.max_cells:
        found = found[: args.max_cells]
    print(f"{len(found)} cells read below {100 * args.below:.0f} % (writers {args.writers}, {len(styles)} styles)")
    rows = quality(model, found, refs, args.engine)
    times = timing(model, pen, args.cache or None, args.data, args.drawings, args.repeats,
                   args.engine) if args.drawings else []
    text = summary(rows, times)
    print(text)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.out:
        out = Path(args.out)
        write_text(out / "learn.json", json.dumps({"machine": machine(), "model": str(model.path), "cells": rows,
                                                   "timing": times}, indent=1) + "\n")
        write_text(out / "learn.md", text + "\n")
    return 0
