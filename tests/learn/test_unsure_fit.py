"""gemmpad.learn.unsure_fit: what the detector's measured rates say about the writers they come from."""

from __future__ import annotations

import json
from pathlib import Path

from gemmpad.learn import unsure_fit
from gemmpad.runtime.model import Model, load_model


def _model(card: dict) -> Model:
    return Model(weights=load_model().weights, card=card)


def test_trained_on_reads_the_writers_from_the_card() -> None:
    """A model trained on every writer (the cross-validation's final one) has seen writers 1-6."""
    held = range(1, 7)
    assert unsure_fit.trained_on(_model({"training": {"pendigits_writers": list(range(1, 31))}}), held)
    assert not unsure_fit.trained_on(_model({"training": {"pendigits_writers": list(range(7, 31))}}), held)
    assert not unsure_fit.trained_on(_model({}), held)  # no card: nothing says so


def _measured(seen: bool | None) -> dict:
    shipped = Path(__file__).resolve().parents[2] / "models" / "mnist-mlp.unsure.json"
    m = json.loads(shipped.read_text())["measured"]
    entry = m[f"pendigits_writers_{unsure_fit.HELD_OUT_WRITERS}"]
    if seen is None:
        entry.pop("seen_in_training", None)  # a file measured before the field existed
    else:
        entry["seen_in_training"] = seen
    return m


def test_a_rate_on_writers_the_model_trained_on_says_so() -> None:
    """Not passed off as a held-out figure: the table and the command's lines both say it."""
    for seen in (True, False, None):
        said = unsure_fit.SEEN in unsure_fit.markdown(_measured(seen))
        lined = any(unsure_fit.SEEN in line for line in unsure_fit._lines(_measured(seen)))
        assert said == lined == bool(seen)


def test_fit_sets_reads_digits_and_non_digits(monkeypatch) -> None:
    """--fit's sets, small: MNIST training rows, pendigits writers outside the measured ones, and
    non-digits. (A local variable once shadowed the mnist module here: every --fit was an internal
    error, 2026-11-29.)"""
    import numpy as np

    from gemmpad.commands.evaluate import writer_range
    from tests.mnist_data import mnist_dir
    from tests.pendigits_data import pendigits_file

    monkeypatch.setattr(unsure_fit, "FIT_MNIST", 40)
    monkeypatch.setattr(unsure_fit, "FIT_PEN", 12)
    monkeypatch.setattr(unsure_fit, "FIT_NONDIGITS", 5)
    digits, non, about = unsure_fit.fit_sets(str(mnist_dir()), str(pendigits_file()))
    assert digits.shape == (about["mnist_train"] + about["pendigits"], 784) and about["pendigits"] == 12
    assert 35 <= about["mnist_train"] <= 40 and non.shape[1] == 784 and len(non) > 0
    assert np.isfinite(digits).all() and digits.max() <= 1.0
    assert about["pendigits_writers_not"] == unsure_fit.HELD_OUT_WRITERS and writer_range(about["pendigits_writers_not"])
