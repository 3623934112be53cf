"""The replay a fine-tune mixes in follows the base model's training as its card describes it."""

from __future__ import annotations

from gemmpad.learn import rehearsal_sets, trainer
from gemmpad.data import trainset
from gemmpad.runtime.model import Model


def test_the_replay_draws_the_writers_as_often_as_training_did() -> None:
    """A model trained with --pen-copies 12 --paper-copies 6 saw writers on paper a third of the
    time, not a fifth (the defaults): the replay must mix them the same way."""
    weights = trainer.init_weights(0)
    card = {"training": {"pendigits_copies": 12, "paper_copies": 6, "form_copies": 3}}
    assert rehearsal_sets._copies(Model(weights, card)) == (12, 6, 3)  # in trainset.PEN_SOURCES' order
    assert trainset.PEN_SOURCES == ("pendigits", "paper", "forms")
    defaults = (trainset.PEN_COPIES, trainset.PAPER_COPIES, trainset.FORM_COPIES)
    assert rehearsal_sets._copies(Model(weights, {})) == defaults  # a card from before the options
    assert rehearsal_sets._copies(Model(weights, {"training": {"pendigits_copies": "12", "paper_copies": 0,
                                                                      "form_copies": None}})) == defaults
