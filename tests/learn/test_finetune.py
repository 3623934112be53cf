"""gemmpad.learn.finetune: the batch plan, the person's rows, the safety rule, and the goal of issue 23
on real writers: after 5 corrections of a writer's digit the model misreads, the same writer's
other samples of it are read right (>= 90 %), and MNIST test stays within 0.3 points."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gemmpad.data import drawings, pendigits
from gemmpad.learn import finetune, rehearsal_sets
from gemmpad.bench.learn import cells
from gemmpad.errors import GemmpadError
from gemmpad.runtime.model import Model, load_model
from gemmpad.runtime.model import accuracy, fold_normalisation, unfold_normalisation
from tests.finetune_data import small_references
from tests.pendigits_data import CV_MODELS, pendigits_file


def test_every_batch_keeps_each_digit_near_its_tenth(rng: np.random.Generator) -> None:
    """Five 9s must not fill half of each batch (the network would learn that most things are 9s)."""
    user_y = np.full(40, 9)
    replay_y = rng.integers(0, 10, 3000)
    s = finetune.Settings(steps=100, batch=128, user_share=0.5)
    orders = finetune.batch_plan(user_y, replay_y, s, rng)
    assert sum(-(-len(o) // 128) for o in orders) >= 100
    labels = np.concatenate([user_y, replay_y])
    for order in orders:
        assert len(order) == 3040 and order.min() >= 0 and order.max() < 3040
        for b in range(0, len(order) - 128, 128):
            batch = order[b : b + 128]
            assert np.sum(batch < 40) == round(12.8 * 0.5)  # the person's rows: half of digit 9's tenth
            assert np.sum(labels[batch] == 9) < 0.25 * 128
    every = np.concatenate(orders)
    assert set(every[every < 40]) == set(range(40))  # every row of the person's is used


def test_the_replay_of_the_digits_misread_as_is_weighted_up(rng: np.random.Generator) -> None:
    """confusers: a person's 9s read as 7s; the replay's 7s come confuser_boost times as often as
    another digit's replay rows (the 9s' own replay weighted down by user_share, as ever)."""
    user_y = np.full(40, 9)
    replay_y = np.repeat(np.arange(10), 3000)
    s = finetune.Settings(steps=400, batch=128, user_share=0.3, confuser_boost=5.0)
    orders = finetune.batch_plan(user_y, replay_y, s, rng, confusers=[7])
    drawn = np.concatenate(orders)
    counts = np.bincount(replay_y[drawn[drawn >= 40] - 40], minlength=10)
    assert counts[7] / counts[0] == pytest.approx(5.0, rel=0.1)
    assert counts[9] / counts[0] == pytest.approx(0.7, rel=0.1)
    plain = np.concatenate(finetune.batch_plan(user_y, replay_y, finetune.Settings(steps=400), rng, confusers=[7]))
    plain_counts = np.bincount(replay_y[plain[plain >= 40] - 40], minlength=10)
    assert plain_counts[7] / plain_counts[0] == pytest.approx(1.0, rel=0.1)  # confuser_boost 1: as before


def test_a_too_costly_learn_runs_once_more_gentler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The first fine-tune drops MNIST past MAX_DROP: the second runs with GENTLER and the digits the
    drawings were misread as; its weights are kept when they pass. Forced, the second run's weights are
    the ones kept (the window's "Use it anyway" keeps the refused outcome's: the same)."""
    refs = small_references()
    model = load_model()
    ex = [drawings.example_of(drawings.pen_drawing(s, "thin-4px-light"), s.digit) for s in _pen(2)[:4]]
    runs: list[tuple[finetune.Settings, list[int]]] = []
    costs = iter([0.005, 0.001])  # MNIST drop of the first and the second fine-tune

    def tune(weights, user, replay, settings, engine="auto", progress=None, should_stop=None, confusers=()):
        runs.append((settings, list(confusers)))
        return weights, "numpy", 1

    def figures(weights, held, refs_):
        return {"MNIST test": 0.99 - next(costs)}

    monkeypatch.setattr(finetune, "tune", tune)
    monkeypatch.setattr(finetune, "figures", figures)
    monkeypatch.setattr(finetune.LearnCache, "base", lambda self, w, r: (None, {"MNIST test": 0.99}))
    out = finetune.learn(model, ex, refs, finetune.Settings(steps=20), "numpy")
    assert out.accepted and out.gentler and not out.reason
    gentler = finetune.GENTLER
    assert gentler["user_share"] < finetune.Settings().user_share and gentler["confuser_boost"] > 1.0
    assert [r[0].user_share for r in runs] == [0.5, gentler["user_share"]]
    assert runs[1][0].confuser_boost == gentler["confuser_boost"]
    assert runs[0][1] == [] and runs[1][1] == finetune.misread_as(model, ex)
    card = finetune.save_personal(out, model, ex, tmp_path / "p.npz")
    # what the kept weights ran with
    assert load_model(card).card["fine_tuned"]["settings"]["user_share"] == finetune.GENTLER["user_share"]
    runs.clear()
    costs = iter([0.005, 0.004])
    refused = finetune.learn(model, ex, refs, finetune.Settings(steps=20), "numpy")
    assert not refused.accepted and refused.reason.endswith("learning gentler too)") and "98.60 %" in refused.reason
    runs.clear()
    costs = iter([0.005, 0.004])
    forced = finetune.learn(model, ex, refs, finetune.Settings(steps=20), "numpy", force=True)
    assert forced.accepted and forced.gentler and forced.reason and len(runs) == 2
    runs.clear()
    costs = iter([0.001])
    at_once = finetune.learn(model, ex, refs, finetune.Settings(steps=20), "numpy")
    assert at_once.accepted and not at_once.gentler and len(runs) == 1


def test_holdout_takes_every_kth_drawing_of_a_digit() -> None:
    ex = [drawings.Example(d, Path(f"{d}-{i}"), np.zeros((28, 28), np.float32), None, f"{d}{i}")
          for d, n in ((1, 10), (2, 3)) for i in range(n)]
    train, held = finetune.split_holdout(ex, 0.2)
    assert [e.path.name for e in held] == ["1-4", "1-9"]  # digit 2 has too few to spare one
    assert len(train) == 11 and finetune.split_holdout(ex, 0.0) == (ex, [])


def test_unfold_inverts_fold(rng: np.random.Generator) -> None:
    w = {k: rng.standard_normal(s).astype(np.float32) for k, s in (("W1", (784, 100)), ("b1", (100,)))}
    back = fold_normalisation(unfold_normalisation(w, 0.13, 0.31), 0.13, 0.31)
    np.testing.assert_allclose(back["W1"], w["W1"], rtol=1e-5)
    np.testing.assert_allclose(back["b1"], w["b1"], rtol=1e-4, atol=1e-4)


def test_decay_ends_small() -> None:
    lrs = finetune.decay(0.01, 5, 0.05)
    assert lrs[0] == 0.01 and lrs[-1] == pytest.approx(0.0005) and lrs == sorted(lrs, reverse=True)


def _pen(writer: int) -> list[pendigits.PenDigit]:
    return [s for s in pendigits.read_pendigits(pendigits_file()) if s.writer == writer]


def test_user_rows_stay_within_the_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two hundred drawings must not cost a thousand paintings or preprocessed copies (Learn would
    take seconds); a few drawings get many copies of every kind."""
    painted = []
    real = finetune.restyled
    monkeypatch.setattr(finetune, "restyled", lambda e, n, seed: painted.append(n) or real(e, n, seed))
    ex = [drawings.example_of(drawings.pen_drawing(s, "brush-18px-280"), s.digit) for s in _pen(7)[:200]]
    rows = finetune.user_rows(ex, finetune.Settings())
    assert sum(painted) <= finetune.PAINT_BUDGET
    assert len(rows) <= len(ex) + finetune.WARP_BUDGET + 1.2 * finetune.RESTROKE_BUDGET
    few = finetune.user_rows(ex[:5], finetune.Settings())
    assert len(few) > 5 * (1 + finetune.Settings().restyles) * finetune.Settings().warps  # few drawings: many copies
    assert set(few.y.tolist()) == {e.label for e in ex[:5]}


def test_kept_rows_are_reused_and_a_changed_drawing_is_made_again(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The LearnCache: a Learn after one more correction copies only the new drawing; a file whose
    content changed is read and copied again; a fresh cache makes the same rows."""
    from gemmpad.inputs import strokes

    pen = _pen(3)[:6]
    for i, s in enumerate(pen[:5]):
        d = drawings.pen_drawing(s, "brush-18px-280")
        strokes.save(tmp_path / str(s.digit) / f"{i}.json", d.strokes, d.widths, d.canvas)
    cache = finetune.LearnCache()
    first = drawings.read_folder(tmp_path, known=cache.drawings)
    rows = finetune.user_rows(first, finetune.Settings(), cache)
    again = drawings.read_folder(tmp_path, known=cache.drawings)
    assert all(a.image28 is b.image28 for a, b in zip(first, again))  # not painted again
    made: list[list[str]] = []
    real = finetune._make_rows
    monkeypatch.setattr(finetune, "_make_rows", lambda ex, *a: made.append([e.key for e in ex]) or real(ex, *a))
    same = finetune.user_rows(again, finetune.Settings(), cache)
    assert made == [] and np.array_equal(same.x, rows.x) and np.array_equal(same.y, rows.y)
    changed = tmp_path / str(pen[0].digit) / "0.json"
    d = drawings.pen_drawing(pen[5], "thick-32px-light")
    strokes.save(changed, d.strokes, d.widths, d.canvas)
    edited = drawings.read_folder(tmp_path, known=cache.drawings)
    redrawn = next(e for e in edited if e.path == changed)
    assert redrawn.key != first[0].key and not np.array_equal(redrawn.image28, first[0].image28)
    finetune.user_rows(edited, finetune.Settings(), cache)
    assert made == [[redrawn.key]]  # only the changed file's copies are made
    monkeypatch.undo()
    np.testing.assert_array_equal(finetune.user_rows(first, finetune.Settings(), finetune.LearnCache()).x, rows.x)


def test_the_kept_rows_survive_a_restart_and_a_damaged_file_is_made_again(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """LearnCache.save / load: the next session's Learn reads no drawing's rows again; the strokes of a
    kept drawing are read when needed; a damaged file is an empty cache, not an error."""
    from gemmpad.inputs import strokes

    pen = _pen(5)[:4]
    folder = tmp_path / "drawings"
    for i, s in enumerate(pen):
        d = drawings.pen_drawing(s, "brush-18px-280")
        strokes.save(folder / str(s.digit) / f"{i}.json", d.strokes, d.widths, d.canvas)
    cache = finetune.LearnCache()
    ex = drawings.read_folder(folder, known=cache.drawings)
    rows = finetune.user_rows(ex, finetune.Settings(), cache)
    cache.save(tmp_path / "cache", ex[1:])  # the first drawing is gone by the time of saving
    back = finetune.LearnCache.load(tmp_path / "cache")
    made: list[list[str]] = []
    real = finetune._make_rows
    monkeypatch.setattr(finetune, "_make_rows", lambda e, *a: made.append([x.key for x in e]) or real(e, *a))
    again = drawings.read_folder(folder, known=back.drawings)
    assert all(a.drawing is not None and np.array_equal(a.image28, b.image28) for a, b in zip(again, ex))
    same = finetune.user_rows(again, finetune.Settings(), back)
    assert made == [[ex[0].key]]  # only the drawing the file did not keep
    key = next(k for k in back._rows if k.startswith(ex[0].key))  # its rows come first
    np.testing.assert_array_equal(same.x[len(back._rows[key]):], rows.x[len(cache._rows[key]):])
    (file,) = (tmp_path / "cache").glob("learn-*.npz")
    file.write_bytes(file.read_bytes()[:100])
    assert finetune.LearnCache.load(tmp_path / "cache").drawings == {}
    assert finetune.LearnCache.load(tmp_path / "absent").drawings == {}


def test_distillation_keeps_the_base_reading_of_the_replay(rng: np.random.Generator) -> None:
    """The replay against the base's own probabilities moves the network less on it than the replay
    against its labels, for the same person's rows, orders and steps."""
    refs = small_references()
    model = load_model()
    ex = [drawings.example_of(drawings.pen_drawing(s, "brush-18px-280"), s.digit) for s in _pen(4)[:5]]
    s = finetune.Settings(steps=100)
    user = finetune.user_rows(ex, s)
    prepared = finetune.prepare(model.weights, refs.replay)
    hard = finetune.Prepared(prepared.x, prepared.y, np.eye(10, dtype=np.float32)[prepared.y], prepared.mean,
                             prepared.std)
    base = model.forward(refs.replay.x)

    def moved(p: finetune.Prepared) -> float:
        w, _, _ = finetune.tune(model.weights, user, p, s, "numpy")
        q = Model(w).forward(refs.replay.x)
        return float(np.mean(np.sum(base * (np.log(base + 1e-12) - np.log(q + 1e-12)), axis=1)))  # KL(base || new)

    assert moved(prepared) < 0.5 * moved(hard)


def test_the_safety_rule_refuses_unless_forced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    refs = small_references()
    model = load_model()
    ex = [drawings.example_of(drawings.pen_drawing(s, "thin-4px-light"), s.digit) for s in _pen(2)[:4]]
    s = finetune.Settings(steps=20)
    monkeypatch.setattr(finetune, "MAX_DROP", -1.0)  # every result counts as worse
    refused = finetune.learn(model, ex, refs, s, "numpy")
    assert not refused.accepted and "it would read others worse (MNIST test" in refused.reason
    forced = finetune.learn(model, ex, refs, s, "numpy", force=True)
    assert forced.accepted and forced.reason
    with pytest.raises(GemmpadError, match="the model being fine-tuned"):
        finetune.save_personal(forced, model, ex, model.path)
    out = finetune.save_personal(forced, model, ex, tmp_path / "p.npz")
    assert load_model(out).card["fine_tuned"]["accepted"] is True


@pytest.mark.slow
def test_five_corrections_teach_a_real_writers_digit() -> None:
    """The issue's goal on a real person the model never saw: the first of the cross-validation's fold
    models (assets/cv, each trained without six writers) that reads one of its own unseen writers'
    digits below 80 % at the app's brush and canvas (writer 14's 8s, fold 3, for the folds of
    2026-11-30); the corrections are the first 5 samples it misreads, stored as the window stores
    them; Learn with the defaults and the full replay (the fold's sets built from the data folders,
    as `gemmpad bench learn` does). Skips when no fold misreads anyone that badly."""
    samples = pendigits.read_pendigits(pendigits_file())
    for fold in sorted(CV_MODELS.glob("mnist-mlp.fold*.npz")):
        model = load_model(fold)
        trained = set(model.trained_writers)
        found = cells(model, [s for s in samples if s.writer not in trained], ["brush-18px-280"], 0.8, 5)
        if found:
            break
    else:
        pytest.skip("every fold model reads its unseen writers at the app's brush >= 80 %: nothing to correct")
    cell = found[0]
    refs = small_references(model, rehearsal_sets.REPLAY_ROWS)
    outcome = finetune.learn(model, cell.corrections, refs, finetune.Settings(), "numpy")
    x = np.stack([e.image28.reshape(784) for e in cell.others])
    before = accuracy(model, x, np.full(len(x), cell.digit))
    after = accuracy(Model(outcome.weights), x, np.full(len(x), cell.digit))
    print(f"{fold.name}, writer {cell.writer} digit {cell.digit}: others {before:.2f} -> {after:.2f}; {outcome.summary()}")
    assert before < 0.8 and after >= 0.9, (fold.name, cell.writer, cell.digit, before, after)
    assert outcome.drops()["MNIST test"] <= 0.003 and outcome.accepted


def test_the_personal_model_gets_its_bases_unsure_detector(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Learn carries the base's detector over to the new weights (unsure.carried) and save_personal writes it
    beside them, where the next start finds it; a base without one leaves none, and removes one that an
    earlier Learn left there for other weights."""
    from gemmpad.runtime import unsure

    refs = small_references()
    model = load_model()
    ex = [drawings.example_of(drawings.pen_drawing(s, "thin-4px-light"), s.digit) for s in _pen(2)[:3]]
    rng = np.random.default_rng(3)
    nudged = {k: (v + 0.01 * rng.standard_normal(v.shape)).astype(np.float32) for k, v in model.weights.items()}
    monkeypatch.setattr(finetune, "tune", lambda weights, *a, **k: (nudged, "numpy", 1))
    out = finetune.learn(model, ex, refs, finetune.Settings(steps=20), "numpy")
    assert out.detector is not None and out.detector.model_sha256 == unsure.fingerprint(Model(nudged))
    assert "detector" not in out.summary()
    path = finetune.save_personal(out, model, ex, tmp_path / "p.npz")
    mine = load_model(path)
    found, why = unsure.for_model(mine)
    assert found == out.detector, why
    assert mine.card["unsure"] == {"file": "p.unsure.json", "carried_from": unsure.fingerprint(model)}
    in_memory = Model(model.weights)  # no file, so no detector beside it
    plain = finetune.learn(in_memory, ex, refs, finetune.Settings(steps=20), "numpy")
    assert plain.detector is None and plain.no_detector.startswith("none carried over from the base model (")
    assert "no_detector" not in plain.summary()
    finetune.save_personal(plain, in_memory, ex, tmp_path / "p.npz")
    assert not unsure.path_for(tmp_path / "p.npz").exists() and "unsure" not in load_model(path).card
