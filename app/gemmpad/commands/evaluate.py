"""`gemmpad eval`: how well a model file reads digits, per digit and with a confusion matrix.

The kinds of test, all fed through `preprocess` as the app feeds a drawing:
- real writers (`--pendigits`): the pendigits trajectories of a writer range, drawn on
  a canvas at each named style of gemmpad.data.pendigits.STYLES (pen width, canvas, size,
  place, slant, polarity). Only writers a model did not train on say anything about
  new people: `gemmpad train` leaves --val-writers out and writes these numbers for them
  into the model card;
- on paper (`--paper`): the same writers' digits as photos and scans (gemmpad.data.paper);
- on forms (`--forms`): the same writers' digits as form readers output them: stretched
  into small boxes, blurred and binarised, per variant of gemmpad.data.forms.VARIANTS;
- synthetic drawn digits per style (`--drawn-styles`): gemmpad.data.synthetic's templates, by
  default its European styles, DRAWN_PER_STYLE digits each;
- a folder of labelled images (`DIR/<digit>/*.png`), the layout `gemmpad predict` and
  the app's saved drawings use: anyone's own test set.
`--tta N` averages N jittered copies per digit (test-time augmentation; the app's batch only repeats the input).

A run over all writers and styles takes minutes: a progress bar goes to stderr when it is
a terminal (never into a pipe or a log), and the summary is printed first, the confusion
matrices only with --verbose (always in --json).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from gemmpad.data import pendigits
from gemmpad.commands.args import MAX_BATCH, integer
from gemmpad.runtime.classifier import jitter
from gemmpad.errors import GemmpadError
from gemmpad.inputs.files import check_empty_dir, check_writable_dir
from gemmpad.inputs.images import FORMAT_NAMES, SUFFIXES, load_image
from gemmpad.runtime.model import Model, load_model, model_line
from gemmpad.data.pool import default_jobs, ordered_map
from gemmpad.inputs.preprocess import preprocess
from gemmpad.terminal import printable

TTA_SEED = 7  # the jitter of test-time augmentation is random: fixed, so numbers repeat


def progress(total: int, unit: str, desc: str) -> tqdm:
    """A bar on stderr when a person watches it; nothing when stderr is a pipe or a file,
    where tqdm's redraws would be noise in a log."""
    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, disable=not sys.stderr.isatty(),
                leave=False, dynamic_ncols=True)


@dataclass(frozen=True)
class Scores:
    """Labels and predictions of one test set; -1 marks an image preprocess found blank."""

    labels: np.ndarray
    pred: np.ndarray

    @property
    def accuracy(self) -> float:
        return float((self.pred == self.labels).mean()) if len(self.labels) else float("nan")

    def per_digit(self) -> dict[str, float]:
        return {str(d): float((self.pred[self.labels == d] == d).mean()) for d in range(10) if (self.labels == d).any()}

    def confusion(self) -> np.ndarray:
        """[10, 11] counts: row = true digit, column = read as (the last column: no ink found)."""
        m = np.zeros((10, 11), dtype=np.int64)
        np.add.at(m, (self.labels, np.where(self.pred < 0, 10, self.pred)), 1)
        return m

    def summary(self) -> dict[str, Any]:
        return {"n": len(self.labels), "accuracy": self.accuracy, "per_digit": self.per_digit(),
                "confusion": self.confusion().tolist()}

    @staticmethod
    def pooled(parts: Sequence[Scores]) -> Scores:
        return Scores(np.concatenate([p.labels for p in parts]), np.concatenate([p.pred for p in parts]))


def classify(model: Model, images: Sequence[np.ndarray], tta: int = 1) -> np.ndarray:
    """The model's digit for each image (any size, either polarity), -1 where no ink was found.

    With tta > 1 each digit is read from the probabilities averaged over tta jittered
    copies (gemmpad.runtime.classifier.jitter).
    """
    rng = np.random.default_rng(TTA_SEED)
    out = np.full(len(images), -1, dtype=np.int64)
    for i, img in enumerate(images):
        x = preprocess(img)
        if x is None:
            continue
        batch = jitter(x, tta, rng) if tta > 1 else x.reshape(1, 784)
        out[i] = int(model.check_output(model.forward(batch)).mean(axis=0).argmax())  # NaN would read as 0
    return out


def _drawn(samples: Sequence[pendigits.PenDigit], draw: Callable[[pendigits.PenDigit], np.ndarray],
           model: Model, tta: int) -> Scores:
    """Scores for samples drawn one at a time (a canvas each: never all held at once)."""
    labels = np.array([s.digit for s in samples], dtype=np.int64)
    pred = np.array([classify(model, [draw(s)], tta)[0] for s in samples], dtype=np.int64)
    return Scores(labels, pred)


def pendigits_scores(model: Model, samples: Sequence[pendigits.PenDigit], styles: Sequence[str],
                     tta: int = 1) -> dict[str, Scores]:
    """Scores per named style (pendigits.STYLES) of the given writers' samples."""
    return {name: _drawn(samples, lambda s, n=name: pendigits.render(s, n), model, tta) for name in styles}


def paper_scores(model: Model, samples: Sequence[pendigits.PenDigit], tta: int = 1) -> Scores:
    """Scores on the samples written on paper and photographed (gemmpad.data.paper, fixed seed)."""
    from gemmpad.data import paper

    rng = np.random.default_rng(paper.PAPER_SEED)
    return _drawn(samples, lambda s: paper.on_paper(s, rng), model, tta)


def forms_scores(model: Model, samples: Sequence[pendigits.PenDigit], variant: str, tta: int = 1) -> Scores:
    """Scores on the samples as one variant of scanned form (gemmpad.data.forms; each variant its own fixed seed)."""
    from gemmpad.data import forms

    rng = np.random.default_rng(forms.FORMS_SEED + list(forms.VARIANTS).index(variant))
    return _drawn(samples, lambda s: forms.on_form(s, variant, rng), model, tta)


DRAWN_PER_STYLE = 500  # drawn digits per style for --drawn-styles


def drawn_style_scores(model: Model, names: Sequence[str], count: int = DRAWN_PER_STYLE,
                       tta: int = 1) -> dict[str, Scores]:
    """Scores per drawn style (gemmpad.data.synthetic.ALL_NAMES): `count` digits each from a seed of
    its own (EVAL_SEED + its index), so a style's figure does not depend on which others are asked."""
    from gemmpad.data import synthetic

    rng = np.random.default_rng(TTA_SEED)
    out = {}
    for name in names:
        ds = synthetic.generate(count, synthetic.EVAL_SEED + synthetic.ALL_NAMES.index(name), [name])
        if tta == 1:  # generate has preprocessed them already: one batch
            pred = model.check_output(model.forward(ds.images.reshape(len(ds.images), 784))).argmax(axis=1)
        else:
            pred = np.array([model.check_output(model.forward(jitter(r, tta, rng))).mean(axis=0).argmax()
                             for r in ds.images])
        out[name] = Scores(ds.labels, pred.astype(np.int64))
    return out


def labelled_files(root: str | Path, suffixes: Sequence[str]) -> list[tuple[int, Path]]:
    """(digit, file) for each ROOT/<digit>/<file> with one of `suffixes` (hidden files
    and other folders passed over), sorted; raises GemmpadError when there are none."""
    root = Path(root)
    if not root.is_dir():
        raise GemmpadError(f"{root}: not a directory (expected {root}/<digit>/...)")
    found = [(int(d.name), f) for d in sorted(root.iterdir()) if len(d.name) == 1 and d.name.isdigit() and d.is_dir()
             for f in sorted(d.iterdir())
             if f.suffix.lower() in suffixes and not f.name.startswith(".") and f.is_file()]
    if not found:
        raise GemmpadError(f"{root}: no images ({', '.join(suffixes)}) in {root}/0 ... {root}/9")
    return found


def directory_scores(model: Model, directory: str | Path, tta: int = 1,
                     warn: Callable[[str], None] = lambda line: print(line, file=sys.stderr)) -> Scores:
    """Scores on DIR/<digit>/* images (images.FORMATS); a file that cannot be read is
    passed over with one line through `warn` (it is not a misread digit)."""
    labels, pred = [], []
    files = labelled_files(directory, SUFFIXES)
    with progress(len(files), "image", Path(directory).name or str(directory)) as bar:
        for digit, f in files:
            bar.update()
            try:
                pixels, _ = load_image(f)
            except GemmpadError as exc:
                bar.clear()
                warn(f"gemmpad eval: {printable(str(exc))} (skipped)")  # the message quotes the file name
                continue
            labels.append(digit)
            pred.append(classify(model, [pixels], tta)[0])
    return Scores(np.array(labels, dtype=np.int64), np.array(pred, dtype=np.int64))


def writer_range(spec: str) -> list[int]:
    """'1-6', '3', '1-3,8', 'all' (1-30) or 'none' -> sorted writer ids."""
    spec = spec.strip().lower()
    if spec == "none":
        return []
    if spec == "all":
        spec = "1-30"
    out: set[int] = set()
    try:
        for part in spec.split(","):
            lo, dash, hi = part.partition("-")
            a, b = int(lo), int(hi if dash else lo)
            if not 1 <= a <= b <= 10_000:
                raise ValueError
            out.update(range(a, b + 1))
    except ValueError:
        raise GemmpadError(f"writer range {spec!r}: expected e.g. 1-6, 3, 1-3,8, all or none") from None
    return sorted(out)


PAPER = "paper"  # the name of the paper set beside the styles in writer_sets
FORMS = "forms:"  # the prefix of a forms variant's name (forms:stretch-16) beside them


def _one_set(task: tuple[Model, Sequence[pendigits.PenDigit], str, int]) -> Scores:
    model, samples, name, tta = task
    if name == PAPER:
        return paper_scores(model, samples, tta)
    if name.startswith(FORMS):
        return forms_scores(model, samples, name.removeprefix(FORMS), tta)
    return pendigits_scores(model, samples, [name], tta)[name]


def writer_sets(model: Model, samples: Sequence[pendigits.PenDigit], names: Sequence[str], tta: int = 1,
                jobs: int = 1) -> dict[str, Scores]:
    """Scores per named style (pendigits.STYLES), PAPER or FORMS variant, one set per process of `jobs`
    (the same numbers for any jobs: every set has its own fixed random streams). The bar
    counts sets: a set's digits are drawn in another process."""
    out: dict[str, Scores] = {}
    with progress(len(names), "set", f"{len(samples)} digits per set") as bar:
        for name, scores in zip(names, ordered_map(_one_set, [(model, samples, n, tta) for n in names], jobs)):
            out[name] = scores
            bar.update()
    return out


def real_writer_report(model: Model, samples: Sequence[pendigits.PenDigit], tta: int = 1,
                       paper: bool = True, jobs: int = 1, forms: bool = False) -> dict[str, Any]:
    """What the model card says about real writers: per style, their mean and worst, per
    digit over all styles, on paper, and (with `forms`) on each kind of scanned form with the
    forms without printed lines pooled. `samples` must be writers the model never saw."""
    from gemmpad.data.forms import VARIANTS, LINED

    on_forms = [FORMS + v for v in VARIANTS] if forms else []
    sets = writer_sets(model, samples, [*pendigits.STYLES, *[PAPER] * paper, *on_forms], tta, jobs)
    per_style = {k: v for k, v in sets.items() if k in pendigits.STYLES}
    accs = {k: v.accuracy for k, v in per_style.items()}
    pooled = Scores.pooled(list(per_style.values()))
    report: dict[str, Any] = {
        "writers": pendigits.writers(samples), "samples": len(samples), "tta": tta,
        "mean": float(np.mean(list(accs.values()))), "worst": min(accs.values()),
        "styles": accs, "per_digit": pooled.per_digit(), "confusion": pooled.confusion().tolist(),
    }
    if paper:
        p = sets[PAPER]
        report["paper"] = p.accuracy
        report["paper_per_digit"] = p.per_digit()
    if forms:
        unlined = Scores.pooled([sets[n] for n in on_forms if n.removeprefix(FORMS) not in LINED])
        report["forms"] = unlined.accuracy
        report["forms_per_digit"] = unlined.per_digit()
        report["forms_variants"] = {n.removeprefix(FORMS): sets[n].summary() for n in on_forms}
        report["forms_lined"] = list(LINED)
    return report


def card_tables(card: dict[str, Any]) -> str:
    """The model card's results as the Markdown tables of models/README.md (a test keeps the
    two equal, so the README never drifts from the file it describes). A card trained on every
    writer (`gemmpad train --folds`) shows its cross-validation in place of one held-out group."""
    from gemmpad.learn import crossval

    res = card["results"]
    real, cv = res.get("real_writers"), res.get("cross_validation")
    pct = lambda v: f"{100 * v:.2f} %"  # noqa: E731
    lines = ["| test set | who | accuracy |", "|---|---|---:|"]
    if real:
        lines += [f"| real writers, mean of {len(real['styles'])} drawing styles | pendigits writers "
                  f"{_ranges(real['writers'])}, never trained on ({real['samples']:,} digits) | **{pct(real['mean'])}** |",
                  f"| real writers, worst style | the same | **{pct(real['worst'])}** |",
                  f"| real writers on paper (photos and scans) | the same digits | **{pct(real['paper'])}** |"]
        if "forms" in real:
            lines.append(f"| real writers on scanned forms (no printed lines) | the same digits | **{pct(real['forms'])}** |")
    lines += [f"| MNIST test | 10,000 t10k images | {pct(res['mnist_test_accuracy'])} |",
              f"| synthetic drawn digits | gemmpad.data.synthetic, {len(res['drawn_accuracy']) - 1} styles | "
              f"{pct(res['drawn_accuracy']['all'])} |"]
    if real:
        lines += ["", "| style | " + " | ".join(f"`{k}`" for k in real["styles"]) + " |",
                  "|---|" + "---:|" * len(real["styles"]),
                  "| accuracy | " + " | ".join(f"{100 * v:.2f}" for v in real["styles"].values()) + " |", "",
                  "| digit | " + " | ".join(real["per_digit"]) + " |", "|---|" + "---:|" * len(real["per_digit"]),
                  crossval.digit_row("drawn, all styles", real["per_digit"], real["per_digit"]),
                  crossval.digit_row("on paper", real["paper_per_digit"], real["per_digit"]),
                  *[crossval.digit_row(f"forms, `{name}`", v["per_digit"], real["per_digit"])
                    for name, v in real.get("forms_variants", {}).items()]]
    if cv:
        lines += ["", f"Cross-validation by writer ({len(cv['folds'])} folds; each fold's model never saw its "
                      "writers; this model was then trained on all of them):", "", crossval.markdown(cv).rstrip("\n")]
    return "\n".join(lines)


def _ranges(ids: Sequence[int]) -> str:
    """[1, 2, 3, 5] -> '1-3, 5'."""
    out, start = [], None
    for i, w in enumerate(ids):
        if start is None:
            start = w
        if i + 1 == len(ids) or ids[i + 1] != w + 1:
            out.append(f"{start}-{w}" if w > start else f"{w}")
            start = None
    return ", ".join(out)


# ---------------------------------------------------------------- command line


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dirs", nargs="*", metavar="DIR", help=f"folders of labelled images, DIR/<digit>/* ({FORMAT_NAMES})")
    p.add_argument("--model", help="model .npz file (default: the shipped model)")
    p.add_argument("--pendigits", nargs="?", const="", metavar="FILE",
                   help="real writers' digits drawn at every style (default file: $GEMMPAD_PENDIGITS, else `gemmpad data fetch pendigits`'s)")
    p.add_argument("--writers", default="1-6", metavar="RANGE",
                   help="pendigits writers to test, e.g. 1-6 or 1-3,8 (a test on new people only for writers the "
                        "model never trained on: the shipped model trained on all 30, a fold model on all but its own)")
    p.add_argument("--styles", default="all", help=f"comma list of {', '.join(pendigits.STYLES)}, or 'all'")
    p.add_argument("--paper", action="store_true", help="also the same writers' digits photographed on paper")
    p.add_argument("--forms", action="store_true",
                   help="also the same writers' digits on scanned forms, each variant of gemmpad.data.forms "
                        "(with --drawn-styles: those styles on forms too)")
    p.add_argument("--drawn-styles", nargs="?", const="european", metavar="LIST",
                   help="also synthetic drawn digits per style: a comma list of gemmpad.data.synthetic style names, "
                        "'european' (the default) or 'all'")
    p.add_argument("--drawn-count", type=integer(1, 100_000), default=DRAWN_PER_STYLE, metavar="N",
                   help="drawn digits per style for --drawn-styles")
    p.add_argument("--save-paper", metavar="DIR", help="write that paper set as DIR/<digit>/*.png into a new or empty DIR (then test DIR)")
    p.add_argument("--tta", type=integer(1, MAX_BATCH), default=1, metavar="N", help="test-time augmentation: average N copies shifted by up to 2 pixels")
    p.add_argument("--jobs", type=integer(1, 1024), default=default_jobs(), metavar="N",
                   help="processes reading the writer sets, one set each (default: every core)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of tables (confusion matrices included)")
    p.add_argument("-v", "--verbose", action="store_true", help="also print each set's confusion matrix")


def _headline(name: str, s: Scores) -> str:
    return f"{name}: {100 * s.accuracy:.2f} % of {len(s.labels)}"


def _table(name: str, s: Scores, verbose: bool) -> str:
    lines = [name, "  per digit: " + "  ".join(f"{d} {100 * a:.1f}" for d, a in s.per_digit().items())]
    if verbose:
        lines += ["  confusion (row: true digit, column: read as; '-': no ink found)",
                  "       " + "".join(f"{c:>6}" for c in [*map(str, range(10)), "-"])]
        lines += [f"    {d}  " + "".join(f"{v:>6}" for v in row) for d, row in enumerate(s.confusion())]
    return "\n".join(lines)


def _set_title(name: str, writers: str) -> str:
    """How a writer set (a style, PAPER or a FORMS variant) is headed in the output."""
    if name == PAPER:
        return f"pendigits writers {writers} on paper"
    if name.startswith(FORMS):
        return f"pendigits writers {writers} on forms, {name.removeprefix(FORMS)}"
    return f"pendigits writers {writers}, {name}"


def _drawn_names(spec: str) -> list[str]:
    """--drawn-styles' list: comma-separated names from gemmpad.data.synthetic.ALL_NAMES and the groups
    'european' and 'all', each style once, in the order given."""
    from gemmpad.data import synthetic

    groups = {"european": synthetic.EUROPEAN_NAMES, "all": synthetic.ALL_NAMES}
    names = list(dict.fromkeys(n for s in spec.split(",") for n in groups.get(s.strip().lower(), [s.strip()])))
    bad = [s for s in names if s not in synthetic.ALL_NAMES]
    if bad:
        raise GemmpadError(f"--drawn-styles: unknown {bad}, expected 'european', 'all' or names such as "
                           f"{', '.join(synthetic.EUROPEAN_NAMES[:3])}")
    return names


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    styles = list(pendigits.STYLES) if args.styles == "all" else [s.strip() for s in args.styles.split(",")]
    bad = [s for s in styles if s not in pendigits.STYLES]
    if bad:
        raise GemmpadError(f"--styles: unknown {bad}, expected names from {list(pendigits.STYLES)}")
    wanted = args.pendigits is not None or args.paper or args.forms or args.save_paper
    if not wanted and not args.dirs and args.drawn_styles is None:
        raise GemmpadError("nothing to evaluate: name image folders, --pendigits, --paper, --forms, "
                           "--drawn-styles or --save-paper")
    if args.save_paper:  # the folder is tested whole: an earlier run's images would count as this one's
        check_empty_dir(args.save_paper, f"--save-paper {args.save_paper}")
    drawn_names = _drawn_names(args.drawn_styles) if args.drawn_styles is not None else []
    ids = writer_range(args.writers)  # checked whatever is asked for, as --styles is: not accepted unread
    samples: list[pendigits.PenDigit] = []
    if wanted:
        samples = pendigits.split_by_writer(pendigits.read_pendigits(args.pendigits or None), ids)[1]
        if not samples:
            raise GemmpadError(f"--writers {args.writers}: no such writers in the pendigits file")
        seen = sorted(set(ids) & set(model.trained_writers))
        if seen:
            print(f"gemmpad eval: note: the model trained on writers {seen}: not a test on new people",
                  file=sys.stderr)
    if args.save_paper:  # made once the inputs are good (a failed run leaves no folder), before the minutes of reading
        check_writable_dir(args.save_paper, f"--save-paper {args.save_paper}")
    results: dict[str, Scores] = {}
    if drawn_names:
        results.update({f"drawn {k}": v for k, v in
                        drawn_style_scores(model, drawn_names, args.drawn_count, args.tta).items()})
        if args.forms:
            from gemmpad.data import forms

            for name in drawn_names:
                for v in forms.VARIANTS:
                    pred = classify(model, forms.drawn_on_form(name, v, args.drawn_count), args.tta)
                    results[f"drawn {name} on forms, {v}"] = Scores(np.full(len(pred), int(name[0])), pred)
    if wanted:
        from gemmpad.data.forms import VARIANTS

        names = [*styles * (args.pendigits is not None), *[PAPER] * args.paper,
                 *[FORMS + v for v in VARIANTS] * args.forms]
        for name, sc in writer_sets(model, samples, names, args.tta, args.jobs).items():
            results[_set_title(name, args.writers)] = sc
        if args.save_paper:
            from gemmpad.data import paper

            paper.write_test_set(samples, args.save_paper)
            args.dirs = [*args.dirs, args.save_paper]
    for d in args.dirs:
        results[str(d)] = directory_scores(model, d, args.tta)
    if args.json:
        print(json.dumps(_no_nan({"model": model_line(model, args.model), "tta": args.tta,
                                  "results": {k: v.summary() for k, v in results.items()}}), allow_nan=False))
        return 0
    # The answer first: a long run's result should not scroll away under ten tables.
    print(f"model {model_line(model, args.model)}, tta {args.tta}")
    for name, sc in results.items():
        print(_headline(printable(name), sc))
    if len(results) > 1:
        accs = [v.accuracy for v in results.values()]
        print(f"mean over the {len(accs)} sets {100 * np.mean(accs):.2f} %, worst {100 * min(accs):.2f} %")
    for name, sc in results.items():
        print()
        print(_table(printable(name), sc, args.verbose))
    if not args.verbose:
        print("\n(confusion matrices: --verbose or --json)")
    return 0


def _no_nan(value: Any) -> Any:
    """`value` with every NaN float as None: an accuracy over no readable image is unknown, and
    JSON has null for that, where json.dumps would write NaN, which no JSON parser accepts."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_no_nan(v) for v in value]
    return value
