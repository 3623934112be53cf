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
