"""Where the tests find the real pendigits file: as gemmpad.pendigits does, else skip saying where it looked."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmpad import pendigits
from gemmpad.errors import DataError


def pendigits_file() -> Path:
    """The shared pendigits-orig.tra, or skip the calling test."""
    try:
        return pendigits.default_path()
    except DataError as exc:
        pytest.skip(str(exc))


def unipen(samples: list[pendigits.PenDigit]) -> str:
    """Samples written back in the pendigits file's UNIPEN format (a small file for a test)."""
    out = ['.LEXICON "0" "1" "2" "3" "4" "5" "6" "7" "8" "9"', ""]
    for i, s in enumerate(samples):
        out += [f'.SEGMENT DIGIT    {i} ? "{s.digit}"', f".COMMENT {s.digit} {s.writer}  {i}"]
        for stroke in s.strokes:
            out += [".PEN_DOWN", *(f" {x:.0f}  {y:.0f}" for x, y in stroke), ".PEN_UP"]
        out += [".DT 100", ""]
    return "\n".join(out)
