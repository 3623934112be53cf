"""Text bound for a terminal: what a user named (a file name, an option's value) comes
back in messages, and a name may hold anything but "/" and NUL."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable

Log = Callable[[str], None]  # where a long step's progress lines go: print, a window's status line, or nowhere
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` as printable: bytes that are not UTF-8 (kept by Python as lone surrogates)
    and control characters become \\xNN escapes, so a strict UTF-8 reader never chokes,
    a newline in a file name cannot split a table row and an escape sequence cannot
    recolour the terminal."""
    text = os.fsencode(text).decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def counted(n: int, noun: str, fmt: str = ",") -> str:
    """`n` and `noun` agreeing in number ("1 kernel", "2 kernels", "1,000 batch-1 calls"): the bench's
    lines said "1 kernels". `fmt` formats n ("4d" to align)."""
    return f"{n:{fmt}} {noun if n == 1 else noun + 's'}"


def display_width(text: str) -> int:
    """The cells `text` takes on a terminal, by which a table pads a name: East Asian wide and
    fullwidth characters (W, F: 七, Ｆ) take two and combining marks (an accent written after its
    letter) none, so len() misaligned the columns of every row holding one."""
    return sum(0 if unicodedata.category(c) in ("Mn", "Me") else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)
