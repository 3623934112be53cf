"""Where the tests find the real pendigits file: as gemmpad.data.pendigits does, else skip saying where it looked.

The installed package looks beside itself (site-packages, in CI), not beside this clone, so
`share_beside_the_clone` (called once by conftest) points $GEMMPAD_PENDIGITS at
../shared/data/pendigits when that holds the file: the code under test then finds it too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gemmpad.data import pendigits
from gemmpad.errors import DataError


REPO = Path(__file__).resolve().parents[1]


def share_beside_the_clone() -> None:
    """Set $GEMMPAD_PENDIGITS to the shared file beside the clone, unless it is set already."""
    if os.environ.get("GEMMPAD_PENDIGITS"):
        return
    for d in (REPO.parent / "shared" / "data" / "pendigits", REPO.parents[1] / "shared" / "data" / "pendigits"):
        if (d / pendigits.FILENAME).is_file():
            os.environ["GEMMPAD_PENDIGITS"] = str(d)
            return


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
