"""A small replay and test set for fine-tuning tests: built once per test session (seconds, not
the ~30 s of the full one), in a temporary cache."""

from __future__ import annotations

import functools
import tempfile

from gemmpad import replay
from gemmpad.model import Model, load_model
from tests.mnist_data import mnist_dir
from tests.pendigits_data import pendigits_file

_REFERENCES = replay.references  # the real one, even where a test patches replay.references to call this module
SMALL_REPLAY = 2048
SMALL_WRITER_STEP = 10


@functools.lru_cache(maxsize=None)
def _cache() -> str:
    return tempfile.mkdtemp(prefix="gemmpad-test-refs-")


def small_references(model: Model | None = None, rows: int = SMALL_REPLAY) -> replay.References:
    """replay.references with `rows` replay rows and every SMALL_WRITER_STEP-th unseen writer sample
    (skips the calling test without MNIST or pendigits). A small replay suits tests of the plumbing;
    measuring forgetting needs the full one (REPLAY_ROWS): 300 steps over 2,048 rows overfit them."""
    folder, _ = mnist_dir(), pendigits_file()
    step, replay.WRITER_STEP = replay.WRITER_STEP, SMALL_WRITER_STEP
    try:
        return _REFERENCES(model or load_model(), folder, _cache(), replay_rows=rows)
    finally:
        replay.WRITER_STEP = step
