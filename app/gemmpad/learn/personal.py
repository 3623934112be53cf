"""The personal model: a model fine-tuned on one person's drawings, made and kept safely.

Used by `gemmpad fine-tune --drawings DIR --base MODEL --output OUT` (`run`) and by the
window's Learn button (gemmpad.ui.learn_panel): read the drawings (bad files skipped
with a line), fine-tune (gemmpad.learn.finetune), and write the result as a new file only
when it keeps reading everyone else (or the person insists), never over the model it
came from or the shipped one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from threadpoolctl import threadpool_limits

from gemmpad.commands.args import MAX_BATCH, MAX_SEED, integer, number, output_path
from gemmpad.data import drawings, userdata
from gemmpad.learn import finetune, rehearsal, rehearsal_sets
from gemmpad.errors import GemmpadError
from gemmpad.inputs.files import check_output_file, check_writable_dir, claim, refuse_existing
from gemmpad.runtime import unsure
from gemmpad.runtime.model import Model, default_model_path, load_model
from gemmpad.terminal import Log, printable


def check_target(output: Path, base: Model, replace: bool) -> None:
    """Refuse, before any work, an output that is the base model, the shipped model, an
    existing file not to be replaced, or a place that cannot be written."""
    files = finetune.personal_files(output)
    check_output_file(files[0], f"--output {output}", {".npz"})
    unsure.refuse_card_clash(output, f"--output {output}")
    check_output_file(files[1], f"--output {output} (its card)")
    check_output_file(files[2], f"--output {output} (its unsure detector)")
    protected = {default_model_path().resolve()} | ({Path(base.path).resolve()} if base.path else set())
    if output.resolve() in protected:
        raise GemmpadError(f"--output {output}: that is the model being fine-tuned or the shipped model; "
                           "a personal model is always a new file")
    refuse_existing(files, "--output", force=replace)


def fine_tune_folder(base: Model, folder: str | Path, output: str | Path | None, settings: finetune.Settings,
                     engine: str = "auto", insist: bool = False, mnist: str | None = None,
                     cache: str | Path | None = None, log: Log = print,
                     progress: finetune.Progress | None = None) -> finetune.Outcome:
    """Fine-tune `base` on the drawings under `folder`; write `output` when accepted (with one
    BLAS thread, as the window's Learn: its products are small)."""
    with threadpool_limits(1, user_api="blas"):
        return _fine_tune_folder(base, folder, output, settings, engine, insist, mnist, cache, log, progress)


def _fine_tune_folder(base: Model, folder: str | Path, output: str | Path | None, settings: finetune.Settings,
                      engine: str, insist: bool, mnist: str | None, cache: str | Path | None, log: Log,
                      progress: finetune.Progress | None) -> finetune.Outcome:
    kept = finetune.LearnCache.load(cache) if cache else finetune.LearnCache()
    examples = drawings.read_folder(folder, say=log, known=kept.drawings)
    if not examples:
        raise GemmpadError(f"{folder}: no usable drawings in {folder}/0 ... {folder}/9")
    per_digit = ", ".join(f"{d}: {n}" for d, n in drawings.counts(examples).items())
    log(f"{len(examples)} drawings ({per_digit})")
    refs = rehearsal.sets_for(base, mnist, cache, log=log)
    outcome = finetune.learn(base, examples, refs, settings, engine, force=insist, progress=progress, cache=kept)
    if cache:
        kept.save(cache, examples)
    for name in outcome.before:
        log(f"  {name:15s} {100 * outcome.before[name]:6.2f} % -> {100 * outcome.after[name]:6.2f} %")
    rounded = (f" ({settings.steps} asked for, rounded up to whole passes over these rows and the replay)"
               if outcome.steps != settings.steps else "")  # --steps 1 ran 67 steps without a word
    log(f"{outcome.rows} rows from the drawings, {outcome.steps} steps on {outcome.engine}{rounded}, "
        f"{outcome.seconds['total']:.2f} s")
    if outcome.reason and outcome.accepted:  # a refusal is the caller's to say (run: once, on stderr)
        log(f"kept anyway (insisted): {outcome.reason}")
    if outcome.accepted and output is not None:
        finetune.save_personal(outcome, base, examples, output, settings)
        written = finetune.personal_files(output)[: 3 if outcome.detector else 2]
        log(f"wrote {', '.join(map(str, written[:-1]))} and {written[-1]}")
        if outcome.detector is None:  # it reads every drawing as a digit: say so, and why
            log(f"no unsure detector for {output}: {outcome.no_detector}")
    return outcome


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of `gemmpad fine-tune`: its own command, because a few seconds of SGD from a model
    on one person's drawings is not `gemmpad train` (torch, MNIST, minutes) with more flags."""
    p.add_argument("--drawings", metavar="DIR",
                   help="the person's drawings, DIR/<digit>/*.json (strokes) or *.png (default: the ones the window "
                        "saved and corrected, in the user folder)")
    p.add_argument("--base", metavar="MODEL", help="the model to fine-tune (default: the shipped model)")
    p.add_argument("--output", type=output_path, metavar="PATH", help="model file to write (default: the personal model in the user folder)")
    p.add_argument("--force", action="store_true",
                   help="replace --output and its .json card when they exist (without --output the personal "
                        "model is replaced, as the window's Learn replaces it)")
    p.add_argument("--steps", type=integer(1, 100_000), metavar="N",
                   help="steps (default 300), rounded up to whole passes over the person's rows and the rehearsal "
                        "sample (one pass is about 70 steps)")
    p.add_argument("--lr", type=number(0, 10, above=True), help="learning rate of the first pass (default 0.005)")
    p.add_argument("--batch-size", type=integer(1, MAX_BATCH), metavar="N", help="rows per step (default 128)")
    p.add_argument("--seed", type=integer(0, MAX_SEED), metavar="N", help="seeds augmentation and batch order (default 0)")
    p.add_argument("--trainer", choices=finetune.ENGINES, default="auto",
                   help="auto: the GPU's native trainer when usable, else NumPy")
    p.add_argument("--insist", action="store_true",
                   help="keep the model even when it reads MNIST test more than 0.3 points worse (after a "
                        "second, gentler try; unseen writers are shown, not ruled on)")
    p.add_argument("--data", metavar="DIR", help="MNIST IDX directory, for a base model without rehearsal sets")
    p.add_argument("--cache", metavar="DIR", help="keep rehearsal sets built from --data in DIR")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def run(args: argparse.Namespace) -> int:
    """`gemmpad fine-tune [--drawings DIR] [--base MODEL]`: exit 0 when the personal model was written,
    1 when the safety rule refused it. Without options it does what the window's Learn does: the
    shipped model, tuned on the drawings the window saved, replacing the personal model (a second
    run asked for --force, a name the person never gave); a named --output is never replaced
    without --force."""
    if args.drawings is None:
        args.drawings = str(userdata.drawings_dir())
        if not Path(args.drawings).is_dir():
            raise GemmpadError(f"no drawings yet in {args.drawings}: draw and correct digits in the window "
                               "(`gemmpad`), or name a folder with --drawings DIR")
    base = load_model(args.base)
    finetune.check_base(base)  # before the replay sets' minutes and before --output's folder is made
    output = Path(args.output) if args.output is not None else userdata.personal_model_path()
    replace = args.force or args.output is None
    check_target(output, base, replace)
    if args.cache:  # written after the fine-tune: a file or device here must fail now, as train's --cache does
        check_writable_dir(args.cache, f"--cache {args.cache}")
    given = {"steps": args.steps, "lr": args.lr, "batch": args.batch_size, "seed": args.seed}
    settings = finetune.Settings(**{k: v for k, v in given.items() if v is not None})
    log: Log = (lambda s: None) if args.quiet else (lambda s: print(printable(s), flush=True))  # lines name paths
    with claim(output, f"--output {output}"):  # the window's Learn and other runs write this name too
        check_target(output, base, replace)  # again, held: a run that just ended may have written it
        outcome = fine_tune_folder(base, args.drawings, output, settings,
                                   args.trainer,
                                   args.insist, args.data, args.cache or None, log)
    if not outcome.accepted:
        print(f"gemmpad fine-tune: {printable(outcome.reason)}; pass --insist to keep it anyway", file=sys.stderr)
        return 1
    return 0


def folder_rows(folder: str | Path, seed: int, log: Log = print) -> rehearsal_sets.Arrays:
    """Training rows from a folder of drawings for a full training run (`gemmpad train
    --drawings DIR` without --base): each drawing augmented as a fine-tune would."""
    examples = drawings.read_folder(folder, say=log)
    if not examples:
        raise GemmpadError(f"--drawings {folder}: no usable drawings in {folder}/0 ... {folder}/9")
    rows = finetune.user_rows(examples, finetune.Settings(seed=seed))
    log(f"  drawings  {len(rows):6d} images from {len(examples)} drawings in {folder}")
    return rows
