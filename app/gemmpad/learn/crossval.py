"""Writer-independent cross-validation (`gemmpad train --folds K`): which writers each fold
holds out, and the folds' cards summed up per fold, per style and per digit.

One held-out group of six writers is 1,499 digits: a digit is 0.07 points, and another group
moves a figure by more than most recipe changes do. K folds measure every writer once, each
by a model that never saw them, so a recipe is judged on all 30 writers; the shipped model is
then trained on all of them with the same recipe and carries this summary in its card.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from gemmpad.errors import GemmpadError


def folds(writers: Sequence[int], k: int) -> list[list[int]]:
    """The writers in k groups of consecutive ids, as even as they go (30 writers, 5 folds: 1-6, 7-12, ...).
    Fixed by the ids alone, so the folds are chosen before any result is seen."""
    ids = sorted(set(writers))
    if not 2 <= k <= len(ids):
        raise GemmpadError(f"--folds {k}: needs between 2 and the {len(ids)} pendigits writers found")
    return [group.tolist() for group in np.array_split(np.array(ids), k)]


def _pooled(confusions: Sequence[Sequence[Sequence[int]]]) -> tuple[float, dict[str, float]]:
    """Accuracy and per-digit accuracy of summed [10, 11] confusion matrices (last column: no ink)."""
    m = np.sum(np.array(confusions, dtype=np.int64), axis=0)
    right = np.diag(m[:, :10])
    per_row = m.sum(axis=1)
    return (float(right.sum() / m.sum()) if m.sum() else float("nan")), {str(d): float(right[d] / per_row[d]) for d in range(10) if per_row[d]}


def _digit_counts(confusion: Sequence[Sequence[int]]) -> dict[str, float]:
    """How many samples of each digit a fold holds: a style confusion's row sums over its styles
    count each sample once per style, so only the proportions matter to _pooled_shares."""
    rows = np.array(confusion, dtype=np.int64).sum(axis=1)
    return {str(d): float(rows[d]) for d in range(10) if rows[d]}


def _pooled_shares(shares: Sequence[dict[str, float]], counts: Sequence[dict[str, float]]) -> dict[str, float]:
    """Per-digit accuracies of several folds pooled by each fold's count of that digit (the paper
    set keeps no confusion matrix: one image per sample, so the drawn set's counts weigh it)."""
    digits = sorted({d for s in shares for d in s}, key=int)
    return {d: float(sum(s[d] * c.get(d, 0.0) for s, c in zip(shares, counts) if d in s)
                     / sum(c.get(d, 0.0) for s, c in zip(shares, counts) if d in s)) for d in digits}


def summary(cards: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The folds' results: each fold's own figures, and over all folds every style, digit and set
    pooled by digit counts (each writer's digit counts once per style)."""
    reals = [c["results"]["real_writers"] for c in cards]
    n = np.array([r["samples"] for r in reals], dtype=float)
    per_fold = [{
        "writers": r["writers"], "samples": r["samples"], "mean": r["mean"], "worst": r["worst"],
        "paper": r.get("paper"), "forms": r.get("forms"), "per_digit": r["per_digit"],
        "mnist_test": c["results"]["mnist_test_accuracy"],
        "trained_on": c.get("training", {}).get("pendigits_writers")} for r, c in zip(reals, cards)]
    styles = {s: float(np.average([r["styles"][s] for r in reals], weights=n)) for s in reals[0]["styles"]}
    _, per_digit = _pooled([r["confusion"] for r in reals])
    out: dict[str, Any] = {
        "folds": per_fold, "writers": sorted(w for r in reals for w in r["writers"]),
        "mean": float(np.mean(list(styles.values()))), "worst_style": min(styles.values()),
        "styles": styles, "per_digit": per_digit,
        "mnist_test": float(np.mean([c["results"]["mnist_test_accuracy"] for c in cards])),
    }
    if all("paper" in r for r in reals):
        out["paper"] = float(np.average([r["paper"] for r in reals], weights=n))
    if all("paper_per_digit" in r for r in reals):
        out["paper_per_digit"] = _pooled_shares([r["paper_per_digit"] for r in reals],
                                                [_digit_counts(r["confusion"]) for r in reals])
    if all("forms_variants" in r for r in reals):
        variants = reals[0]["forms_variants"]
        out["forms_variants"] = {v: dict(zip(("accuracy", "per_digit"),
                                             _pooled([r["forms_variants"][v]["confusion"] for r in reals])))
                                 for v in variants}
        lined = set(reals[0].get("forms_lined", []))
        out["forms"], out["forms_per_digit"] = _pooled([r["forms_variants"][v]["confusion"] for r in reals
                                                        for v in variants if v not in lined])
    return out


def markdown(cv: dict[str, Any]) -> str:
    """The summary as the tables models/README.md shows: per fold, per style, per digit and set."""
    pct = lambda v: "" if v is None else f"{100 * v:.2f}"  # noqa: E731
    lines = ["| fold | writers | digits | mean of styles | worst style | paper | forms | MNIST test |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for i, f in enumerate(cv["folds"], 1):
        lines.append(f"| {i} | {f['writers'][0]}-{f['writers'][-1]} | {f['samples']:,} | {pct(f['mean'])} | "
                     f"{pct(f['worst'])} | {pct(f['paper'])} | {pct(f['forms'])} | {pct(f['mnist_test'])} |")
    lines.append(f"| **all** | {len(cv['writers'])} writers | {sum(f['samples'] for f in cv['folds']):,} | "
                 f"**{pct(cv['mean'])}** | **{pct(cv['worst_style'])}** | {pct(cv.get('paper'))} | "
                 f"{pct(cv.get('forms'))} | {pct(cv['mnist_test'])} |")
    lines += ["", "| style | " + " | ".join(f"`{s}`" for s in cv["styles"]) + " |",
              "|---|" + "---:|" * len(cv["styles"]),
              "| all folds | " + " | ".join(pct(v) for v in cv["styles"].values()) + " |", "",
              "| digit | " + " | ".join(cv["per_digit"]) + " |", "|---|" + "---:|" * len(cv["per_digit"]),
              digit_row("drawn, all styles", cv["per_digit"], cv["per_digit"]),
              *([digit_row("on paper", cv["paper_per_digit"], cv["per_digit"])] if "paper_per_digit" in cv else []),
              *[digit_row(f"forms, `{name}`", f["per_digit"], cv["per_digit"])
                for name, f in cv.get("forms_variants", {}).items()]]
    return "\n".join(lines) + "\n"


def digit_row(label: str, per_digit: dict[str, float], digits: Iterable[str]) -> str:
    """One Markdown row of per-digit accuracies (%, one decimal) in the columns `digits`; nan
    where a set had none of a digit. The card's tables (evaluate.card_tables) share it."""
    return f"| {label} | " + " | ".join(f"{100 * per_digit.get(d, float('nan')):.1f}" for d in digits) + " |"
