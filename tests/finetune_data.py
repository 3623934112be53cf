"""A small replay and the test sets for fine-tuning tests: the shipped model's Learn sets
(gemmpad.learn.rehearsal, no data folder needed), their replay cut to a fixed subset."""

from __future__ import annotations

from gemmpad.learn import rehearsal, rehearsal_sets
from gemmpad.runtime.model import Model, load_model

SMALL_REPLAY = 2048
_SETS_FOR = rehearsal.sets_for  # the real one, even where a test patches rehearsal.sets_for to call this module


def small_references(model: Model | None = None, rows: int = SMALL_REPLAY) -> rehearsal_sets.References:
    """rehearsal.sets_for with `rows` replay rows. A small replay suits tests of the plumbing;
    measuring forgetting needs the full one (REPLAY_ROWS): 300 steps over 2,048 rows overfit them."""
    return _SETS_FOR(model or load_model(), replay_rows=rows)
