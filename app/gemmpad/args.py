"""Argument types shared by the subcommands: a count of 0 batches or a NaN learning
rate is refused by argparse with the option's name, before any work starts, instead
of surfacing minutes later as an error from deep inside NumPy or torch."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def integer(minimum: int) -> Callable[[str], int]:
    """A whole number >= minimum."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
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
            raise argparse.ArgumentTypeError(f"must be a finite number {low}{high}, got {text}")
        return value

    return parse
