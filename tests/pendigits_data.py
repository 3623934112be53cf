"""Where the tests find the real pendigits file: as gemmpad.data.pendigits does, else skip saying where it looked.

The installed package looks beside itself (site-packages, in CI), not beside this clone, so
`share_beside_the_clone` (called once by conftest) points $GEMMPAD_PENDIGITS at
../shared/data/pendigits when that holds the file: the code under test then finds it too.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

from gemmpad.data import pendigits
from gemmpad.errors import DataError


REPO = Path(__file__).resolve().parents[1]
CV_MODELS = REPO / "assets" / "cv"  # the cross-validation's fold models, each trained without six writers


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


def unseen_writers(trained: set[int], path: Path | None = None) -> tuple[list[pendigits.PenDigit], str]:
    """Digits of a person the model never saw, and who they are: writers 1-6 outside `trained`, or,
    for a model trained on every writer (`gemmpad train --folds`), writer 1 writing mirrored (as
    some children do), a style no training image has."""
    samples = pendigits.read_pendigits(path or pendigits_file())
    unseen = [s for s in samples if s.writer not in trained and s.writer <= 6]
    if unseen:
        return unseen, "writers 1-6 it never trained on"
    mirrored = [dataclasses.replace(s, strokes=[np.column_stack([-p[:, 0], p[:, 1]]) for p in s.strokes])
                for s in samples if s.writer == 1]
    return mirrored, "writer 1 mirrored (every writer was trained on)"
