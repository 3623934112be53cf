"""Where the tests find the real MNIST files: $GEMMPAD_DATA, else ../shared/data/mnist beside the clone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def mnist_dir() -> Path:
    """The MNIST directory, or skip the calling test saying where it looked."""
    candidates = [Path(os.environ["GEMMPAD_DATA"])] if os.environ.get("GEMMPAD_DATA") else []
    candidates += [REPO.parent / "shared" / "data" / "mnist", REPO.parents[1] / "shared" / "data" / "mnist"]
    for d in candidates:
        if (d / "t10k-images-idx3-ubyte.gz").exists() or (d / "t10k-images-idx3-ubyte").exists():
            return d
    pytest.skip(f"MNIST files not found (looked in {', '.join(map(str, candidates))}; set $GEMMPAD_DATA)")
