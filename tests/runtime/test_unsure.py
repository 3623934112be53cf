"""The unsure detector: fitted, it flags few digits and catches non-digits; its file belongs
to one set of weights and is refused for others, or when broken, in one line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gemmpad.data import synthetic, nondigits
from gemmpad.errors import GemmpadError
from gemmpad.runtime import unsure
from gemmpad.runtime.model import default_model_path, load_model
from gemmpad.learn import unsure_fit
from gemmpad.ui.text import unsure_note


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, unsure.Detector, Path]:
    """A detector fitted on small sets (the shipped model: its hidden layers are what it reads)."""
    if not default_model_path().exists():
        pytest.skip(f"no shipped model at {default_model_path()}")
    model = load_model()
    digits = synthetic.generate(400, seed=11).images.reshape(-1, 784)
    others = nondigits.generate(60, seed=12).images.reshape(-1, 784)
    det = unsure.fit(model, digits, others)
    path = tmp_path_factory.mktemp("unsure") / "m.unsure.json"
    unsure.save(det, path)
    return model, det, path


@pytest.mark.slow
def test_a_fitted_detector_flags_few_new_digits_and_catches_non_digits(fitted: tuple) -> None:
    model, det, _ = fitted
    new_digits = synthetic.generate(300, seed=21).images.reshape(-1, 784)
    new_others = nondigits.generate(40, seed=22)
    flagged = det.unsure(model, new_digits).mean()
    caught = det.unsure(model, new_others.images.reshape(-1, 784)).mean()
    print(f"fitted on 400 drawn digits: flags {100 * flagged:.1f} % of new ones, catches {100 * caught:.0f} %")
    assert flagged <= 0.03 and caught >= 0.5
    assert det.fitted["threshold_digits"] == 120 and det.fitted["digits"] == 280  # the threshold's digits are apart


@pytest.mark.slow
def test_the_file_round_trips_and_belongs_to_its_weights(fitted: tuple, tmp_path: Path) -> None:
    model, det, path = fitted
    x = nondigits.generate(5, seed=3).images.reshape(-1, 784)
    back = unsure.load(path)
    np.testing.assert_allclose(back.score(model, x), det.score(model, x), rtol=1e-12)
    assert not list(path.parent.glob(".*tmp*"))
    # beside a model file it is found; beside other weights it is refused, with the way out
    weights = tmp_path / "m.npz"
    model.save(weights)
    assert unsure.path_for(weights) == tmp_path / "m.unsure.json"
    mine = load_model(weights)
    got, why = unsure.for_model(mine)
    assert got is None and "gemmpad unsure --fit" in why
    unsure.save(det, unsure.path_for(weights))
    got, why = unsure.for_model(mine)
    assert got is not None and why == ""
    other = {k: v.copy() for k, v in model.weights.items()}
    other["b3"][0] += 1.0
    type(model)(other).save(weights)
    got, why = unsure.for_model(load_model(weights))
    assert got is None and "fitted for other weights" in why
    assert "No unsure detector" in unsure_note(None, why)


def test_the_tooltip_calls_writers_unseen_only_when_they_were() -> None:
    """The shipped detector's rate on writers 1-6 is on writers the model (trained on all 30) has seen."""
    det, why = unsure.for_model(load_model())
    assert det is not None, why
    pen = det.measured[f"pendigits_writers_{unsure_fit.HELD_OUT_WRITERS}"]
    note = unsure_note(det, "")
    assert f"{100 * pen['flagged']:.1f} % of" in note
    assert ("unseen writers" in note) != bool(pen.get("seen_in_training")), note
    pen["seen_in_training"] = not pen.get("seen_in_training")
    assert ("unseen writers" in unsure_note(det, "")) != bool(pen["seen_in_training"])


@pytest.mark.slow
@pytest.mark.parametrize("broken", ['{"model_sha256": "x"}', "[1, 2]", "not json",
                                    '{"model_sha256": "x", "mean": [1], "scale": [1], "w1": [[1, 2]], "b1": [0], '
                                    '"w2": [1], "b2": 0, "threshold": 0}'],
                         ids=["fields missing", "a list", "not JSON", "shapes disagree"])
def test_a_broken_file_is_one_line_and_no_detector(fitted: tuple, tmp_path: Path, broken: str) -> None:
    model, _, _ = fitted
    weights = tmp_path / "m.npz"
    model.save(weights)
    unsure.path_for(weights).write_text(broken)
    got, why = unsure.for_model(load_model(weights))
    assert got is None and "m.unsure.json" in why and "\n" not in why


def test_the_shipped_detector_fits_the_shipped_model_and_meets_the_targets() -> None:
    """The measured figures `gemmpad unsure --fit` stored: at most 1 % of real digits flagged
    (MNIST test, and every style of the held-out writers). Retrained weights fail here until
    the detector is fitted again."""
    if not default_model_path().exists():
        pytest.skip(f"no shipped model at {default_model_path()}")
    det, why = unsure.for_model(load_model())
    assert det is not None, why
    m = det.measured
    pen = m["pendigits_writers_1-6"]
    assert m["mnist_test"]["flagged"] <= 0.01 and m["mnist_test"]["n"] == 10_000
    assert pen["worst_style"] <= 0.01 and pen["flagged"] <= 0.01
    assert m["nondigits"]["caught"] > 0.5
    assert json.loads(unsure.path_for(default_model_path()).read_text())["model_sha256"] == det.model_sha256



def test_a_detector_carried_to_tuned_weights_is_found_beside_them(tmp_path: Path) -> None:
    """unsure.carried: the base's classifier and threshold under the tuned weights' fingerprint, saying
    where it came from; saved beside the tuned model it is found there (the base's file is refused there),
    and the tooltip says its rates were measured on the base."""
    base = load_model()
    det, why = unsure.for_model(base)
    assert det is not None, why
    rng = np.random.default_rng(5)
    tuned = type(base)({k: (v + 0.01 * rng.standard_normal(v.shape)).astype(np.float32) for k, v in base.weights.items()})
    got = unsure.carried(det, tuned)
    assert got.model_sha256 == unsure.fingerprint(tuned) != det.model_sha256
    assert replace(got, model_sha256=det.model_sha256, fitted=det.fitted) == det
    assert got.fitted == {**det.fitted, "carried_from": det.model_sha256}
    again = unsure.carried(got, base)  # Learn from a personal model: the rates are still the first weights'
    assert again.fitted["carried_from"] == det.model_sha256 and again.measured == det.measured
    weights = tmp_path / "me.npz"
    tuned.save(weights)
    unsure.save(det, unsure.path_for(weights))
    assert unsure.for_model(load_model(weights))[0] is None
    unsure.save(got, unsure.path_for(weights))
    found, why = unsure.for_model(load_model(weights))
    assert found == got, why
    assert "Carried over by Learn from the base model, measured there: it flags" in unsure_note(found, "")
    assert "Carried over" not in unsure_note(det, "")


@pytest.mark.parametrize("name, clash", [("x.unsure.npz", "x.npz"), ("a.b.unsure.npz", "a.b.npz"), ("x.npz", None),
                                         ("unsure.npz", None), ("x.unsured.npz", None)])
def test_a_model_whose_card_would_take_a_detectors_name_is_refused(name: str, clash: str | None) -> None:
    if clash is None:
        unsure.refuse_card_clash(Path(name), "--output")
        return
    with pytest.raises(GemmpadError, match=f"^--output: {name}'s card would be named .*, the name of {clash}'s "
                                           "unsure detector; name the model otherwise$"):
        unsure.refuse_card_clash(Path(name), "--output")
