"""`gemmpad` on the command line.

Each subcommand lives in the module that holds its subject (training in
`train`, benchmarks in `bench`, the window in `ui.app`); this module only
wires them up and turns errors into one readable line, never a traceback.
Modules are imported lazily so `gemmpad info` never pays for torch.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from gemmpad.errors import GemmpadError
from gemmpad.terminal import printable

# subcommand -> (module, help). The module provides add_arguments(parser) and run(args) -> int.
COMMANDS: dict[str, tuple[str, str]] = {
    "app": ("gemmpad.ui.app", "open the drawing window (the default)"),
    "predict": ("gemmpad.predict", "read digits from image files"),
    "info": ("gemmpad.info", "versions, CPU features, CUDA device, kernels and model"),
    "train": ("gemmpad.train", "train the MLP on MNIST"),
    "eval": ("gemmpad.evaluate", "accuracy of a model on real writers' digits or labelled image folders"),
    "unsure": ("gemmpad.unsure_fit", "fit and measure the detector that says when a drawing is not one digit"),
    "bench": ("gemmpad.bench", "benchmark GEMM kernels, the MLP forward pass, or training"),
    "data": ("gemmpad.fetch", "which data sets are found where (status), and downloading them (fetch)"),
    "import": ("gemmpad.importer", "turn a PyTorch state_dict or ONNX file of a 784-h1-h2-10 MLP into a model file"),
    "export": ("gemmpad.exporter", "write a model as an ONNX file"),
}


class _Parser(argparse.ArgumentParser):
    """argparse's parser, with usage errors made printable: they quote what was typed
    ("unrecognized arguments: ..."), control characters included. Subcommands' parsers
    are made by the same class."""

    def error(self, message: str) -> NoReturn:
        super().error(printable(message))


def build_parser() -> argparse.ArgumentParser:
    """The full parser; importing each command module only for its arguments."""
    from gemmpad import __version__

    parser = _Parser(
        prog="gemmpad",
        description="Draw a digit and watch an MLP read it on hand-written GEMM kernels (CPU and CUDA).",
    )
    parser.add_argument("--version", action="version", version=f"gemmpad {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module_name).add_arguments(p)
        p.set_defaults(_module=module_name)
    return parser


def _tolerant_streams() -> None:
    """Make stdout and stderr escape what their encoding cannot hold (a file name in
    Greek under LC_ALL=C or PYTHONIOENCODING=ascii) instead of raising
    UnicodeEncodeError half-way through a batch: the name comes out as \\u escapes,
    the run goes on. Streams that are not text files (a test's capture) are left alone."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # a closed or detached stream: nothing to change
                reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `gemmpad` script; returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    _tolerant_streams()
    if not args_list or args_list[0].startswith("--") and args_list[0] not in ("--help", "--version"):
        args_list.insert(0, "app")  # `gemmpad` alone, or `gemmpad --replay ...`, opens the app
    try:
        parser = build_parser()
        args = parser.parse_args(args_list)
        if args.command is None:
            parser.print_help()
            return 2
        return int(importlib.import_module(args._module).run(args) or 0)
    except GemmpadError as exc:
        print(f"gemmpad: error: {printable(str(exc))}", file=sys.stderr)  # messages quote what the user named
        return 2
    except KeyboardInterrupt:
        print("gemmpad: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `gemmpad predict DIR | head`: the reader has gone, nothing to say
        with contextlib.suppress(OSError, ValueError):  # (a stdout without a file descriptor: nothing to redirect)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        return 141
    except MemoryError as exc:  # a size the machine cannot hold (--sizes, --batches): a limit, not a bug
        print(f"gemmpad: error: out of memory{f': {printable(str(exc))}' if str(exc) else ''}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: say so in one line unless asked for the traceback
        if os.environ.get("GEMMPAD_DEBUG"):
            raise
        print(
            f"gemmpad: internal error: {type(exc).__name__}: {printable(str(exc))} (set GEMMPAD_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
