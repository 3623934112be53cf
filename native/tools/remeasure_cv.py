"""The shipped card's cross-validation measured again with the committed fold models, after a change
to what measures them (gemmpad.inputs.preprocess, a test set's generator) rather than to the weights:
each fold model's card gets its `results.real_writers` from gemmpad.commands.evaluate.real_writer_report
on its own held-out writers, and the shipped card its `results.cross_validation` pooled again by
gemmpad.learn.crossval.summary (the recipe kept). Weights, training history and MNIST figures stay.
Then `python -m pytest tests/runtime/test_model.py` says whether models/README.md's card tables need
regenerating (`gemmpad.commands.evaluate.card_tables`).

    python native/tools/remeasure_cv.py [--jobs N] [--models models/mnist-mlp.npz] [--folds assets/cv]

Prints each fold's figures that moved (old -> new). Needs the pendigits file ($GEMMPAD_PENDIGITS or
`gemmpad data fetch pendigits`); on the 2-core VM about 4 minutes a fold.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gemmpad.commands import evaluate
from gemmpad.data import pendigits
from gemmpad.learn import crossval
from gemmpad.runtime.model import load_model, save_card


def _moved(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """'name old -> new' for every number that changed (nested dicts walked; lists compared whole)."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _moved(a, b, f"{prefix}{key}.")
        elif a != b and not isinstance(a, list):
            out.append(f"{prefix}{key} {a} -> {b}")
        elif a != b:
            out.append(f"{prefix}{key} changed")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="models/mnist-mlp.npz", help="the shipped model (its card is rewritten)")
    p.add_argument("--folds", default="assets/cv", help="folder of mnist-mlp.fold<K>.npz and their cards")
    p.add_argument("--jobs", type=int, default=2, help="processes reading the writer sets")
    args = p.parse_args()
    shipped = load_model(args.models)
    cv_old = shipped.card["results"]["cross_validation"]
    samples = pendigits.read_pendigits()
    cards = []
    for k, fold in enumerate(cv_old["folds"], start=1):
        path = Path(args.folds) / f"mnist-mlp.fold{k}.npz"
        model = load_model(path)
        held = pendigits.split_by_writer(samples, fold["writers"])[1]
        old = model.card["results"]["real_writers"]
        new = evaluate.real_writer_report(model, held, jobs=args.jobs, forms=True)
        card = {**model.card, "results": {**model.card["results"], "real_writers": new}}
        save_card(path, card)
        cards.append(card)
        print(f"fold {k}: " + ("; ".join(_moved(old, new)) or "nothing moved"), flush=True)
    cv = {**crossval.summary(cards), "recipe": cv_old["recipe"]}
    save_card(args.models, {**shipped.card, "results": {**shipped.card["results"], "cross_validation": cv}})
    print("shipped card: " + ("; ".join(_moved(cv_old, cv)) or "nothing moved"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
