"""gemmpad.ui.workers.learner.Learner without a window: the drawings are painted when they are
saved (prefetch), not when L is pressed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gemmpad.data import drawings
from gemmpad.inputs import strokes
from gemmpad.ui.workers.learner import Learner


def _save_one(folder: Path, name: str, x: float) -> None:
    line = np.array([[x, 40.0], [x + 5.0, 140.0], [x + 10.0, 240.0]], np.float32)  # a "1" on a 280 canvas
    strokes.save(folder / "1" / f"{name}.json", [line], [18.0], (280, 280))


def test_prefetch_paints_each_saved_drawing_once_before_learn(tmp_path: Path, monkeypatch) -> None:
    painted: list[Path] = []
    real = drawings._read
    monkeypatch.setattr(drawings, "_read", lambda path, *a: painted.append(path) or real(path, *a))
    folder = tmp_path / "drawings"
    for i in range(3):
        _save_one(folder, f"d{i}", 100.0 + 20 * i)

    cold = Learner(folder, cache_dir=tmp_path / "cold")
    assert len(cold._read(lambda _: None)) == 3 and len(painted) == 3  # no prefetch: Learn paints all

    painted.clear()
    learner = Learner(folder, cache_dir=tmp_path / "cache")
    learner.prefetch()
    learner._reader.join(30)
    assert len(painted) == 3
    _save_one(folder, "d3", 180.0)
    learner.prefetch()  # after a save: only the new drawing
    learner._reader.join(30)
    assert len(painted) == 4 and painted[-1].name == "d3.json"
    examples = learner._read(lambda _: None)  # what Learn does first
    assert len(examples) == 4 and len(painted) == 4  # nothing left to paint


def test_prefetch_with_the_base_loads_its_sets_before_learn(tmp_path: Path, monkeypatch) -> None:
    """At start the window hands the base model to prefetch: its Learn sets and its figures on them
    are ready before L is pressed, so the first Learn does not wait for them."""
    from gemmpad.learn import finetune, rehearsal
    from gemmpad.runtime.model import load_model

    asked: list[str] = []
    real = rehearsal.sets_for
    monkeypatch.setattr(rehearsal, "sets_for", lambda *a, **k: asked.append("sets") or real(*a, **k))
    folder = tmp_path / "drawings"
    _save_one(folder, "d0", 100.0)
    learner = Learner(folder, cache_dir=tmp_path / "cache", replay_rows=256)
    base = load_model()
    learner.prefetch(base)
    learner._reader.join(60)
    assert asked == ["sets"] and learner._cache._base is not None
    assert learner.start(load_model(), finetune.Settings(steps=5))  # the same model, loaded again
    assert learner.wait(120)
    result = learner.take()
    assert not isinstance(result, Exception), result
    assert asked == ["sets"]  # not looked up again
