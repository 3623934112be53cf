"""`gemmpad bench gemm|mlp|train|learn|latency|report`: the measurements behind every speed claim.

Every figure is a ratio against a reference measured in the same process on
the same machine (cuBLAS at the same precision for GEMMs, NumPy for CPU
kernels; torch eager / CUDA graph and NumPy for the MLP), and every kernel is
checked for correctness before it is timed: a fast wrong kernel is no result.
Each command prints markdown tables; with --out it writes JSON carrying the
machine's description (`machine`) plus a PNG chart when matplotlib is
installed, and with --readme it rewrites the README's table from that JSON
(`report`, which also regenerates the tables from committed JSON). A run that
measures nothing (every kernel held back or refused) is an error that says why,
exit 2, and writes nothing: an empty table and file with exit 0 read as a result.

One module per command: `gemm`, `mlp`, `train`, `learn`, `latency`, `report`; `machine` is the one
description of the machine that every result file carries.
"""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

from gemmpad.runtime import registry
from gemmpad.errors import GemmpadError, OutputFileError
from gemmpad.inputs.files import check_writable_dir, refuse_existing

# subcommand -> help; each is the module gemmpad.bench.<name> with add_arguments(parser) and run(args)
COMMANDS = {
    "gemm": "every GEMM kernel vs cuBLAS at the same precision (GPU) and NumPy (CPU)",
    "mlp": "the MLP forward pass per backend and kernel vs torch and NumPy",
    "train": "native training engine vs torch, with a parity run",
    "learn": "learning a person's style from 5 corrections (real writers), and Learn's time vs torch",
    "latency": "the window's per-frame latency at every batch: median and p99 (needs a display)",
    "report": "the README's tables from committed result JSON (no GPU needed)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    for name, help_text in COMMANDS.items():
        _module(name).add_arguments(sub.add_parser(name, help=help_text, description=help_text))


def add_out_argument(parser: argparse.ArgumentParser, files: tuple[str, ...]) -> None:
    """--out DIR and --force, one definition for every bench command that writes result files:
    `files` are the names a run may write in DIR, and run() refuses one that exists before the
    run unless --force, as every other output of the CLI (refuse_existing): a second run into a
    folder silently replaced the first's results, committed ones included."""
    parser.add_argument("--out", default=None, metavar="DIR", help=f"write {', '.join(files)} here")
    parser.add_argument("--force", action="store_true", help="replace those files in --out if they exist")
    parser.set_defaults(out_files=files)


def _module(name: str):  # noqa: ANN202  (a module)
    return importlib.import_module(f"gemmpad.bench.{name}")


def run(args: argparse.Namespace) -> int:
    """Checks what was typed (--readme without --out, --kernels) before any file is read or tried,
    so a mistake there is the first message, not one the user meets after fixing the others; then
    --readme's files and --out, then the run."""
    if getattr(args, "readme", None) and args.what != "report" and not args.out:
        raise GemmpadError("--readme needs --out DIR: the table is made from the JSON written there")
    if getattr(args, "kernels", None):  # a typo, or kernels this machine lacks, would measure nothing and exit 0
        specs = registry.kernels(kind="gemm" if args.what == "gemm" else None)
        numpy_ = [] if args.what == "gemm" else ["numpy"]
        known = [s.name for s in specs] + numpy_
        unmatched = [p for p in args.kernels if not select(known, [p])]
        if unmatched:
            raise GemmpadError(f"--kernels {' '.join(unmatched)}: matches no kernel; known: {', '.join(known)}")
        if not select([s.name for s in specs if s.available] + numpy_, args.kernels):
            why = {s.unavailable_reason for s in specs if select([s.name], args.kernels)}
            raise GemmpadError(f"--kernels {' '.join(args.kernels)}: none of them can run here ({'; '.join(sorted(why))})")
    if getattr(args, "readme", None):
        from gemmpad.bench.report import check_readmes

        for block in ([args.what] if args.what != "report" else []):
            check_readmes(args.readme, block)  # before the run, not after it
    if getattr(args, "out", None):  # made when written: a run that fails or measures nothing leaves no folder
        check_writable_dir(args.out, f"--out {args.out}", make=False)
        # --readme needs no --force: it names the file to edit, and only its bench block changes;
        # the roofline drawn for the README's GEMM block goes into --out, so it is refused there
        from gemmpad.bench.report import ROOFLINE

        drawn = [ROOFLINE] if args.what == "gemm" and args.readme else []
        refuse_existing([Path(args.out) / f for f in [*args.out_files, *drawn]], "--out", force=args.force,
                        error=OutputFileError)
    return int(_module(args.what).run(args) or 0)


def select(names: list[str], patterns: list[str] | None) -> list[str]:
    """The names matching any pattern (a full name or a regular expression); all of them without patterns."""
    if not patterns:
        return names
    try:
        return [n for n in names if any(p == n or re.search(p, n) for p in patterns)]
    except re.error as exc:
        raise GemmpadError(f"--kernels: {exc.pattern!r} is neither a kernel name nor a regular expression ({exc})") from None
