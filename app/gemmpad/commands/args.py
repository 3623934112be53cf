"""Argument types shared by the subcommands: a count of 0 batches or a NaN learning
rate is refused by argparse with the option's name, before any work starts, instead
of surfacing minutes later as an error from deep inside NumPy or torch."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable

# Upper bounds shared by the subcommands' options, each well past any real use and
# well inside what a lists or arrays of that length costs on an ordinary machine.
MAX_BATCH = 65536  # images in one forward pass or training step (784 floats each: 205 MB)
MAX_EPOCHS = 10_000
MAX_SEED = 2**32 - 1  # what NumPy and torch both take
MAX_REPS = 10**8  # repetitions of a timed call
# The window's (gemmpad app's; bench latency passes them on to it): drawings read per frame, kernel threads, frames.
MAX_WINDOW_BATCH = 4096
MAX_THREADS = 1024
MAX_FRAMES = 1_000_000


def integer(minimum: int, maximum: int) -> Callable[[str], int]:
    """A whole number in [minimum, maximum]. Every count has an upper bound too: a
    billion epochs or drawn digits is a list or an array the machine cannot hold,
    and the bound says so at once instead of after minutes of work."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # also a number of more than 4300 digits
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be between {minimum:,} and {maximum:,}, got {value}")
        return value

    return parse


def number(minimum: float = 0.0, maximum: float = math.inf, *, above: bool = False) -> Callable[[str], float]:
    """A finite float in [minimum, maximum], or in (minimum, maximum] when `above`."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        low_ok = value > minimum if above else value >= minimum
        if not (math.isfinite(value) and low_ok and value <= maximum):
            low = f"above {minimum:g}" if above else f"at least {minimum:g}"
            high = f" and at most {maximum:g}" if math.isfinite(maximum) else ""
            raise argparse.ArgumentTypeError(f"must be a finite number {low}{high}, got {text!r}")
        return value

    return parse


def output_path(text: str) -> str:
    """A file to write, the type of every option that names one. An empty name is refused:
    Path("") is ".", and a command reading `if args.output` would take `--output ''` for the
    option left out and write its default file. So is a file in a folder that does not exist,
    as cp and gcc -o refuse one: the writers make a file's missing folders (for gemmpad's own
    default places), and a typo in a folder's name the user typed became a new tree of folders.
    Anything else about the folder (a file there, no permission) is the command's own check
    (gemmpad.inputs.files.check_output_file), which says what it found."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no file")
    folder = os.path.dirname(text) or os.curdir
    try:
        os.stat(folder)
    except FileNotFoundError:
        raise argparse.ArgumentTypeError(f"{text}: folder {folder} does not exist; create it first") from None
    except OSError:  # there, but not a folder or not readable: check_output_file names what is wrong
        pass
    return text
