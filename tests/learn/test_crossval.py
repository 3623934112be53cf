"""Cross-validation by writer: the folds, and the summary pooled by digit counts."""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.data import mnist
from gemmpad.errors import GemmpadError
from gemmpad.inputs.preprocess import preprocess_batch
from gemmpad.learn import crossval
from gemmpad.runtime.model import load_model
from tests.mnist_data import mnist_dir
from tests.pendigits_data import CV_MODELS


def test_thirty_writers_make_five_folds_of_six() -> None:
    groups = crossval.folds(list(range(30, 0, -1)) + [7], 5)
    assert groups == [list(range(1, 7)), list(range(7, 13)), list(range(13, 19)), list(range(19, 25)),
                      list(range(25, 31))]
    assert crossval.folds([1, 2, 3, 4, 5], 2) == [[1, 2, 3], [4, 5]]
    with pytest.raises(GemmpadError, match="--folds 4: needs between 2 and the 3 pendigits writers found"):
        crossval.folds([1, 2, 3], 4)


def _card(writers: list[int], confusion: np.ndarray, styles: dict[str, float], mnist: float) -> dict:
    per_row = confusion.sum(axis=1)
    return {"results": {"mnist_test_accuracy": mnist, "real_writers": {
        "writers": writers, "samples": int(per_row.sum()) // len(styles), "mean": float(np.mean(list(styles.values()))),
        "worst": min(styles.values()), "styles": styles, "confusion": confusion.tolist(),
        "per_digit": {str(d): float(confusion[d, d] / per_row[d]) for d in range(10) if per_row[d]},
        "paper": 0.5, "forms": 0.25, "forms_lined": ["lined"],
        "forms_variants": {"plain": {"confusion": confusion.tolist()}, "lined": {"confusion": np.zeros_like(confusion).tolist()}}}}}


def test_the_summary_pools_digits_by_count_not_by_fold() -> None:
    a = np.zeros((10, 11), np.int64)
    a[1, 1], a[1, 7] = 3, 1  # fold 1: four 1s, three right
    b = np.zeros((10, 11), np.int64)
    b[1, 1], b[9, 9], b[9, 10] = 12, 2, 2  # fold 2: twelve 1s right; two of four 9s, two with no ink found
    cv = crossval.summary([_card([1], a, {"s": 0.75}, 0.9), _card([2, 3], b, {"s": 0.875}, 0.8)])
    assert cv["per_digit"] == {"1": 15 / 16, "9": 0.5}  # not the mean of 0.75 and 1.0
    assert cv["styles"]["s"] == pytest.approx((4 * 0.75 + 16 * 0.875) / 20) and cv["worst_style"] == cv["mean"]
    assert cv["forms"] == pytest.approx(17 / 20) and cv["forms_variants"]["plain"]["accuracy"] == pytest.approx(17 / 20)
    assert cv["writers"] == [1, 2, 3] and cv["mnist_test"] == pytest.approx(0.85)
    text = crossval.markdown(cv)
    assert "| 1 | 1-1 | 4 | 75.00 | 75.00 | 50.00 | 25.00 | 90.00 |" in text
    assert "| forms, `lined` |" in text and "| drawn, all styles | 93.8 | 50.0 |" in text


def test_paper_per_digit_is_pooled_by_each_folds_digit_counts_and_folds_say_whom_they_trained_on() -> None:
    """The paper set keeps one image per sample and no confusion: its per-digit shares are pooled by
    the drawn set's digit counts (four 1s in fold 1, twelve in fold 2), not averaged per fold."""
    a = np.zeros((10, 11), np.int64)
    a[1, 1] = 4
    b = np.zeros((10, 11), np.int64)
    b[1, 1], b[9, 9] = 12, 4
    cards = [_card([1], a, {"s": 1.0}, 0.9), _card([2, 3], b, {"s": 1.0}, 0.9)]
    cards[0]["results"]["real_writers"]["paper_per_digit"] = {"1": 0.5}
    cards[1]["results"]["real_writers"]["paper_per_digit"] = {"1": 1.0, "9": 0.25}
    cards[0]["training"] = {"pendigits_writers": [2, 3]}
    cv = crossval.summary(cards)
    assert cv["paper_per_digit"] == {"1": pytest.approx((4 * 0.5 + 12 * 1.0) / 16), "9": 0.25}
    assert cv["folds"][0]["trained_on"] == [2, 3] and cv["folds"][1]["trained_on"] is None
    assert "| on paper | 87.5 | 25.0 |" in crossval.markdown(cv)


def test_the_committed_fold_models_are_the_cards_folds() -> None:
    """assets/cv holds the five fold models behind the shipped card's cross-validation (and the
    cells of `bench learn`): each loads with its own card (load_model checks the weights' hash),
    held out the writers the shipped card's fold names and trained on the rest, and its card's
    figures are the ones the shipped card pooled."""
    folds = load_model().card["results"]["cross_validation"]["folds"]
    assert len(folds) == 5
    for k, fold in enumerate(folds, start=1):
        model = load_model(CV_MODELS / f"mnist-mlp.fold{k}.npz")
        card = model.card
        assert card["cross_validation_fold"]["fold"] == k and card["cross_validation_fold"]["of"] == 5
        writers = card["results"]["real_writers"]
        assert writers["writers"] == fold["writers"] and not set(writers["writers"]) & set(fold["trained_on"])
        assert sorted(writers["writers"] + fold["trained_on"]) == list(range(1, 31))
        assert writers["mean"] == fold["mean"] and card["results"]["mnist_test_accuracy"] == fold["mnist_test"]


def test_the_committed_fold_models_read_mnist_as_their_cards_say() -> None:
    """Their MNIST test figures recomputed from the committed weights (NumPy, through preprocess)."""
    test = mnist.load_split("test", mnist_dir())
    x, ok = preprocess_batch(test.images)
    assert ok.all()
    for k in range(1, 6):
        model = load_model(CV_MODELS / f"mnist-mlp.fold{k}.npz")
        acc = float((model.forward(x.reshape(-1, 784)).argmax(1) == test.labels).mean())
        assert acc == pytest.approx(model.card["results"]["mnist_test_accuracy"], abs=1e-6), k
