"""`gemmpad` on the command line.

Each subcommand lives in the module that holds its subject (training in
`train`, benchmarks in `bench`, the window in `ui.app`); this module only
wires them up and turns errors into one readable line, never a traceback.
Modules are imported lazily, only the one of the subcommand named (`build_parser`), so
`gemmpad --help` imports the command line alone and `gemmpad info` never pays for torch.
"""

from __future__ import annotations

import os
import signal
import sys
import types

from gemmpad import interrupted_while_loading, launched_as_command


class _Interrupt:
    """Ctrl-C for the `gemmpad` process: one line and exit 130, however often it is pressed.

    The first press unwinds as KeyboardInterrupt (main says "interrupted"; `finally` blocks and
    pool terminations run). A second press while that unwinds (a pool joining its workers) or
    while the interpreter shuts down ends the process at once, with the line said once, where
    Python would print "During handling of the above exception" or a traceback from an exit hook.
    """

    said = False

    @classmethod
    def say(cls, in_handler: bool = False) -> None:
        """The line, once. From a signal handler straight to the descriptor: sys.stderr may be
        in the middle of a write that the handler interrupted (a reentrant call would raise)."""
        if not cls.said:
            cls.said = True
            if in_handler:
                os.write(2, b"gemmpad: interrupted\n")
            else:
                print("gemmpad: interrupted", file=sys.stderr, flush=True)

    @classmethod
    def first(cls, signum: int, frame: types.FrameType | None) -> None:
        signal.signal(signal.SIGINT, cls.again)
        raise KeyboardInterrupt

    @classmethod
    def again(cls, signum: int, frame: types.FrameType | None) -> None:
        cls.say(in_handler=True)
        pools = sys.modules.get("multiprocessing")
        if pools is not None:  # workers left running would print tracebacks on the parent's closed pipes
            for child in pools.active_children():
                with contextlib.suppress(Exception):
                    child.terminate()
        os._exit(130)


if launched_as_command() and signal.getsignal(signal.SIGINT) in (signal.default_int_handler, interrupted_while_loading):
    # as early as this module can: a Ctrl-C while the rest is imported is one line too
    signal.signal(signal.SIGINT, _Interrupt.first)

import argparse  # noqa: E402  (after the handler, on purpose)
import contextlib  # noqa: E402
import errno  # noqa: E402
import importlib  # noqa: E402
import re  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any, NoReturn  # noqa: E402

from gemmpad.errors import GemmpadError
from gemmpad.terminal import printable

# subcommand -> (module, help). The module provides add_arguments(parser) and run(args) -> int.
COMMANDS: dict[str, tuple[str, str]] = {
    "app": ("gemmpad.ui.app", "open the drawing window (the default)"),
    "predict": ("gemmpad.commands.predict", "read digits from image files"),
    "info": ("gemmpad.commands.info", "versions, CPU features, CUDA device, kernels and model"),
    "train": ("gemmpad.learn.train", "train the MLP on MNIST"),
    "fine-tune": ("gemmpad.learn.personal", "fine-tune a model on a person's drawings (a few seconds, no torch)"),
    "eval": ("gemmpad.commands.evaluate", "accuracy of a model on real writers' digits or labelled image folders"),
    "unsure": ("gemmpad.learn.unsure_fit", "fit and measure the detector that says when a drawing is not one digit"),
    "bench": ("gemmpad.bench", "benchmark GEMM kernels, the MLP forward pass, or training"),
    "data": ("gemmpad.data.fetch", "which data sets are found where (status), and downloading them (fetch)"),
    "import": ("gemmpad.commands.importer", "turn a PyTorch state_dict or ONNX file of a 784-h1-h2-10 MLP into a model file"),
    "export": ("gemmpad.commands.exporter", "write a model as an ONNX file"),
}
# other names a command answers to: the window's button for fine-tuning is "Learn" (L)
ALIASES: dict[str, str] = {"learn": "fine-tune"}


class _Parser(argparse.ArgumentParser):
    """argparse's parser, with usage errors in one printable line. Subcommands' parsers are
    made by the same class (add_subparsers' default parser_class), at every depth.

    A word that starts with a minus and a digit is a value, never an option (no option of
    gemmpad's looks so), as argparse has it from Python 3.14 on: before, only a plain negative
    number was, and `bench gemm --sizes -1x5x5` ended in "expected at least one argument" under
    the usage, the bad size unnamed, where the size's own check says what is wrong in one line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"-\.?\d")  # Python 3.14's, matched at a word's start

    def error(self, message: str) -> NoReturn:
        """One line, exit 2: the command, argparse's message and where the command's help is.
        argparse put its usage block first, two lines or more before the one that says what is
        wrong. The message quotes what was typed ("unrecognized arguments: ..."), so it is made
        printable: a control character in it cannot split the line or recolour the terminal."""
        self.exit(2, f"{self.prog}: error: {printable(message)} (see {self.prog} --help)\n")

    def parse_known_args(  # type: ignore[override]  (typeshed's overloads; gemmpad passes a list or None)
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Words this parser does not know are its own error. argparse hands a subcommand's
        leftovers up to the top parser, whose error then named `gemmpad` and its help instead of
        `gemmpad bench gemm` and the help that lists the options; no parser of gemmpad's leaves
        words for another to take."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser. Every subcommand is listed from COMMANDS, but a command module is imported
    (for its arguments) only for `command`, or for all of them when it is None: `gemmpad --help`
    then loads no command module, and `gemmpad info` never pays for torch or the data sets."""
    from gemmpad import __version__

    parser = _Parser(
        prog="gemmpad",
        description="Draw a digit and watch an MLP read it on hand-written GEMM kernels (CPU and CUDA).",
    )
    parser.add_argument("--version", action="version", version=f"gemmpad {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        aliases = [alias for alias, target in ALIASES.items() if target == name]
        p = sub.add_parser(name, aliases=aliases, help=help_text, description=help_text)
        if command is None or ALIASES.get(command, command) == name:
            importlib.import_module(module_name).add_arguments(p)
        p.set_defaults(_module=module_name)
    return parser


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
CANNOT_WRITE = (errno.EROFS, errno.EACCES, errno.EPERM)


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
    previous = signal.getsignal(signal.SIGINT)
    # ours unless embedded with a handler of its own (or off the main thread: getsignal is then no help)
    ours = previous in (signal.default_int_handler, _Interrupt.first)
    if ours:
        _Interrupt.said = False
        signal.signal(signal.SIGINT, _Interrupt.first)
    try:
        return _main(argv)
    finally:
        if ours:  # the process's command is done: a late Ctrl-C is the same one line, not a traceback at exit
            signal.signal(signal.SIGINT, _Interrupt.again if launched_as_command() else previous)


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    _tolerant_streams()
    if not args_list or args_list[0].startswith("--") and args_list[0] not in ("--help", "--version"):
        args_list.insert(0, "app")  # `gemmpad` alone, or `gemmpad --replay ...`, opens the app
    try:
        parser = build_parser(args_list[0] if args_list[0] in COMMANDS or args_list[0] in ALIASES else "")
        args = parser.parse_args(args_list)
        if args.command is None:
            parser.print_help()
            return 2
        status = int(importlib.import_module(args._module).run(args) or 0)
        sys.stdout.flush()  # here, where a full stdout (`> /dev/full`) is one line, not an error at exit
        return status
    except GemmpadError as exc:
        print(f"gemmpad: error: {printable(str(exc))}", file=sys.stderr)  # messages quote what the user named
        return 2
    except KeyboardInterrupt:
        _Interrupt.say()
        return 130
    except BrokenPipeError:  # `gemmpad predict DIR | head`: the reader has gone, nothing to say
        _quiet_stdout()
        return 141
    except OSError as exc:
        if exc.errno not in DISK_FULL + CANNOT_WRITE:
            return _internal_error(exc)
        try:  # stdout may be what is full: the exit's flush must not fail again
            sys.stdout.flush()
        except (OSError, ValueError):
            _quiet_stdout()
        why = "disk full (no space left on the device)" if exc.errno in DISK_FULL else exc.strerror
        print(f"gemmpad: error: {printable(why + (f': {exc.filename}' if exc.filename else ''))}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # a size the machine cannot hold (--sizes, --batches): a limit, not a bug
        print(f"gemmpad: error: out of memory{f': {printable(str(exc))}' if str(exc) else ''}", file=sys.stderr)
        return 2
    except Exception as exc:
        return _internal_error(exc)


def _internal_error(exc: Exception) -> int:
    """A bug: say so in one line unless asked for the traceback."""
    if os.environ.get("GEMMPAD_DEBUG"):
        raise exc
    print(
        f"gemmpad: internal error: {type(exc).__name__}: {printable(str(exc))} (set GEMMPAD_DEBUG=1 for the traceback)",
        file=sys.stderr,
    )
    return 3


def _quiet_stdout() -> None:
    """Point stdout at /dev/null and drop what is buffered: its reader has gone or its disk is
    full, and the interpreter's flush at exit must not fail a second time."""
    with contextlib.suppress(OSError, ValueError):  # (a stdout without a file descriptor: nothing to redirect)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
