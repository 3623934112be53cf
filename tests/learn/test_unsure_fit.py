"""gemmpad.learn.unsure_fit: what the detector's measured rates say about the writers they come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemmpad.commands import cli
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


def _small_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`gemmpad unsure --fit` on a few digits of two writers (one measured, one fitted on), its argv."""
    from gemmpad.data import pendigits
    from tests.mnist_data import mnist_dir
    from tests.pendigits_data import pendigits_file, unipen

    real = pendigits.read_pendigits(pendigits_file())
    (tmp_path / "pen.tra").write_text(unipen([s for w in (1, 7) for s in [s for s in real if s.writer == w][:10]]))
    monkeypatch.setattr(unsure_fit, "FIT_MNIST", 200)
    monkeypatch.setattr(unsure_fit, "FIT_NONDIGITS", 20)
    generate = unsure_fit.nondigits.generate
    monkeypatch.setattr(unsure_fit.nondigits, "generate", lambda per_kind=0, seed=0: generate(20, seed))  # measure's too
    return ["unsure", "--fit", "--output", str(tmp_path / "d.json"), "--data", str(mnist_dir()),
            "--pendigits", str(tmp_path / "pen.tra")]


@pytest.mark.slow
def test_fit_says_each_step_as_it_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """--fit printed nothing for 4.5 minutes on 2 cores when stderr was no terminal, then everything at once."""
    steps: list[str] = []
    said = unsure_fit.measure

    def measure(*args: object) -> dict:  # what stderr held when measuring began
        steps.append(capsys.readouterr().err)
        return said(*args)

    monkeypatch.setattr(unsure_fit, "measure", measure)
    argv = _small_fit(tmp_path, monkeypatch)
    capsys.readouterr()
    assert cli.main(argv) == 0
    fitting = steps[0].splitlines()
    assert [line.split(":")[0].split(" ")[0] for line in fitting] == ["fit", "fit", "fit", "fitting"]
    assert "10 pendigits digits of writers outside 1-6" in fitting[1] and fitting[0].endswith(" s)")
    measuring = capsys.readouterr()
    assert "(written)" in measuring.out and "measuring" not in measuring.out
    lines = measuring.err.splitlines()
    assert lines[0].startswith("measuring: 10,000 MNIST test images") and lines[-1].startswith("measuring: non-digits")
    assert len(lines) == 2 + len(unsure_fit.pendigits.STYLES) and f"(1/{len(unsure_fit.pendigits.STYLES)})" in lines[1]
    json.loads((tmp_path / "d.json").read_text())


def test_an_interrupted_fit_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--output new/d.json made new/ before fitting, and left it empty when stopped or failing (a folder
    that does not exist is now refused as the arguments are read: tests/commands/test_args.py)."""
    def ctrl_c(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    argv = _small_fit(tmp_path, monkeypatch)
    monkeypatch.setattr(unsure_fit.unsure, "fit", ctrl_c)
    assert cli.main(argv) == 130
    assert sorted(tmp_path.iterdir()) == [tmp_path / "pen.tra"]
