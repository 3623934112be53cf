"""A failed Learn says why and what to do in the Learn panel, and the words stay until dismissed
(issue 39: a grey status line, cut off and gone after ~6 s, said it before)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import dearpygui.dearpygui as dpg
import numpy as np
import pytest

from gemmpad.learn import finetune, rehearsal
from gemmpad.inputs import strokes
from gemmpad.errors import DataError
from gemmpad.runtime.model import default_model_path
from gemmpad.ui import status_bar
from gemmpad.ui.workers.learner import Learner

FIX = "the Learn sets of mnist-mlp (mnist-mlp.rehearsal.npz) are missing: reinstall gemmpad"


def _learn_and_wait(app: object) -> None:
    if app.learn.learner._reader is not None:
        app.learn.learner._reader.join(60)  # the window's prefetch at start
    app.learn.learner._refs = None  # as in a fresh session: the sets are looked up again
    app.shortcut(dpg.mvKey_L)
    deadline = time.monotonic() + 60
    while (app.learn.learner.running or app.learn.learner._result is not None) and time.monotonic() < deadline:
        app.step()  # until the panel has taken the result


@pytest.mark.parametrize(("failure", "shown"), [
    (DataError(FIX), f"Not learned: {FIX}"),
    (ValueError("boom"), "Not learned: gemmpad failed (ValueError: boom). Your drawings are kept"),
])
def test_a_learn_error_stays_in_the_panel_until_dismissed(app: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          failure: Exception, shown: str) -> None:
    monkeypatch.setattr(app.learn.learner, "cache_dir", tmp_path / "cache")
    line = np.array([[120.0, 40.0], [125.0, 140.0], [130.0, 240.0]], np.float32)
    strokes.save(app.drawings_dir / "1" / "error-test.json", [line], [18.0], (280, 280))

    def fail(*_a: object, **_k: object) -> object:
        raise failure

    monkeypatch.setattr(rehearsal, "sets_for", fail)
    monkeypatch.setattr(status_bar, "MESSAGE_S", 0.0)  # any message that can expire has expired
    try:
        _learn_and_wait(app)
        for _ in range(5):
            app.step()
        panel = app.learn
        assert dpg.is_item_shown(panel.error_text) and dpg.is_item_shown(panel.dismiss_btn)
        assert dpg.get_value(panel.error_text).startswith(shown)
        assert "site-packages" not in dpg.get_value(panel.error_text)
        assert app.status.message.startswith(shown)  # red, until replaced: not faded
        assert dpg.get_item_configuration(panel.progress)["overlay"] == "not learned"
        panel.dismiss()
        app.step()
        assert not dpg.is_item_shown(panel.error_text) and not dpg.is_item_shown(panel.dismiss_btn)
        assert not dpg.is_item_shown(panel.progress)  # the "not learned" bar goes with the error
        assert not app.status.message.startswith("Not learned")
    finally:
        (app.drawings_dir / "1" / "error-test.json").unlink()



def test_l_with_no_corrections_keeps_the_buttons_in_sight(app: object, tmp_path: Path) -> None:
    """At the default size, L with no corrections showed "Not learned: no corrections yet" below the
    section's fold and scrolled the section to it: the Learn and Reset buttons went out of sight. Now
    nothing starts; the count under the buttons says what to do."""
    from gemmpad.ui import harness, layout
    from tests.ui.layout_check import region_rect

    kept = tmp_path / "kept"  # the corrections earlier tests of the session saved, put back after
    kept.mkdir()
    for digit in app.drawings_dir.iterdir() if app.drawings_dir.is_dir() else []:
        shutil.move(digit, kept / digit.name)
    try:
        app.learn.refresh()
        assert not app.learn.listed and not app.learn.skipped
        dpg.set_viewport_width(layout.DEFAULT_WINDOW[0])
        dpg.set_viewport_height(layout.DEFAULT_WINDOW[1])
        for _ in range(3):
            app.step()
        _learn_and_wait(app)
        for _ in range(8):  # past the frames a Learn's outcome or error is brought into view in
            app.step()
        region = region_rect(app.learn.root)
        for item in (app.learn.learn_btn, app.learn.reset_btn, app.learn.count_text):
            x, y, w, h = harness.rect(item)
            assert dpg.is_item_visible(item) and region[1] <= y and y + h <= region[1] + region[3], \
                (dpg.get_item_label(item), (y, h), region, dpg.get_y_scroll(app.learn.root))
        assert not dpg.is_item_shown(app.learn.error_text) and not dpg.is_item_shown(app.learn.progress)
        assert app.status.message == "Nothing to learn: no corrections yet"
    finally:
        app.learn.dismiss()
        dpg.set_y_scroll(app.learn.root, 0.0)
        for digit in kept.iterdir():
            shutil.move(digit, app.drawings_dir / digit.name)
        app.learn.refresh()


def test_the_time_shown_runs_from_the_key_press(app: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A Learn that spends 0.3 s before learn() (first-time work) reports it in its time."""
    learner = app.learn.learner
    monkeypatch.setattr(app.learn, "personal_path", tmp_path / "personal-model.npz")  # never the user's
    monkeypatch.setattr(learner, "cache_dir", tmp_path / "cache")
    monkeypatch.setattr(learner, "replay_rows", 256)
    monkeypatch.setattr(learner, "start", lambda base, settings=None: Learner.start(
        learner, base, finetune.Settings(steps=5, holdout=0.2)))
    line = np.array([[120.0, 40.0], [125.0, 140.0], [130.0, 240.0]], np.float32)
    strokes.save(app.drawings_dir / "1" / "time-test.json", [line], [18.0], (280, 280))
    real = rehearsal.sets_for

    def slow(*a: object, **k: object) -> object:
        time.sleep(0.3)
        return real(*a, **k)

    monkeypatch.setattr(rehearsal, "sets_for", slow)
    try:
        _learn_and_wait(app)
        outcome = app.learn.outcome
        assert outcome is not None, dpg.get_value(app.learn.error_text)
        shown = float(dpg.get_item_configuration(app.learn.progress)["overlay"].split()[2])
        assert shown >= 0.3 and shown >= round(outcome.seconds["total"], 1)
    finally:
        (app.drawings_dir / "1" / "time-test.json").unlink()
        app.learn.reset()


def test_a_learns_outcome_shows_with_the_buttons_in_sight(app: object) -> None:
    """At the default size the outcome of a Learn (its figures, "Use it anyway", or an error and Dismiss)
    appeared below the fold of Learn's section: a new user saw nothing happen. Then the section scrolled to
    it, and the Learn and Reset buttons went out of sight. Now the outcome shows under the buttons, and
    the section scrolls no further than keeps them in sight."""
    from gemmpad.ui import harness, layout
    from tests.ui.layout_check import region_rect
    from tests.ui.support import seven

    dpg.set_viewport_width(layout.DEFAULT_WINDOW[0])
    dpg.set_viewport_height(layout.DEFAULT_WINDOW[1])
    made = [app.drawings_dir / str(d) / f"outcome-{i}.json" for i, d in enumerate([3, 1, 4, 1, 5])]
    for path in made:
        strokes.save(path, seven(), [18.0, 18.0], strokes.CANVAS)
    app.learn.refresh()
    panel = app.learn

    def in_sight(*items: int | str) -> None:
        top, bottom = region_rect(panel.root)[1], sum(region_rect(panel.root)[1::2])
        for item in (panel.learn_btn, panel.reset_btn, *items):
            x, y, w, h = harness.rect(item)
            assert dpg.is_item_visible(item) and top <= y and y + h <= bottom, \
                (dpg.get_item_label(item) or dpg.get_value(item), (y, h), (top, bottom), dpg.get_y_scroll(panel.root))

    try:
        for _ in range(3):
            app.step()
        panel.show_error(DataError(FIX))
        for _ in range(6):
            app.step()
        in_sight(panel.error_text, panel.dismiss_btn)
        panel.dismiss()
        # a Learn whose model is refused: its bar, figures and "Use it anyway" in view
        dpg.set_y_scroll(panel.root, 0.0)
        dpg.configure_item(panel.progress, show=True)  # as the Learn that ran showed it
        refused = finetune.Outcome(weights={}, before={"held-out": 0.6, "MNIST test": 0.991},
                                   after={"held-out": 1.0, "MNIST test": 0.985}, accepted=False,
                                   reason="it would read others worse", engine="numpy", trained_on=5, held_out=1,
                                   rows=5, steps=10, seconds={"total": 1.0})
        panel.learner._result = (refused, [], [])
        for _ in range(6):
            app.step()
        assert panel.outcome is refused
        in_sight(panel.bar_row, panel.figures_text, panel.insist_btn)  # (a progress bar has no rectangle of its own)
    finally:
        panel.outcome = None
        for item in (panel.progress, panel.figures_text, panel.insist_btn):
            dpg.configure_item(item, show=False)
        dpg.set_y_scroll(panel.root, 0.0)
        for path in made:
            path.unlink()
        panel.refresh()


def _outcome(accepted: bool) -> finetune.Outcome:
    """A finished Learn's outcome as the panel takes it (the shipped weights stand in for new ones)."""
    from gemmpad.runtime.model import load_model

    return finetune.Outcome(load_model().weights, {"MNIST test": 0.99}, {"MNIST test": 0.985 if accepted else 0.98},
                            accepted, "" if accepted else "it would read others worse (MNIST test 99.00 -> 98.00 %)",
                            "numpy", 5, 0, 40, 300, seconds={"total": 1.0})


def test_a_learns_figures_name_the_first_file_it_skipped_and_count_the_rest(tmp_path: Path) -> None:
    """The figures said "1 files skipped: skipped /…/blank.png: no ink in it": the reader's own line,
    its word doubled, the count wrong in number and counting a cache note as a file, the file by its
    full path."""
    from gemmpad.ui.learn_panel import LearnPanel, in_folder

    outcome = finetune.Outcome({}, {"MNIST test": 0.98}, {"MNIST test": 0.981}, True, "", "numpy", 5, 0, 0, 3,
                               {"total": 0.4})
    notes = ["skipped /d/4/blank.png: no ink in it", "could not keep the drawings' copies in /c: Read-only"]
    assert LearnPanel._figures_text(outcome, notes[:1]).splitlines()[-1] == "skipped /d/4/blank.png: no ink in it"
    assert LearnPanel._figures_text(outcome, notes).splitlines()[-1] == \
        "skipped /d/4/blank.png: no ink in it (and 1 more)"
    assert "skipped" not in LearnPanel._figures_text(outcome, [])
    # the files named within the drawings folder, as the count and the list name them
    assert in_folder(f"skipped {tmp_path / 'drawings' / '4' / 'b.png'}: no ink in it", tmp_path / "drawings") == \
        "skipped 4/b.png: no ink in it"


def test_a_learn_that_could_not_be_saved_says_so_in_red(app: object, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """A read-only data folder: the new model reads, and the panel and status line say it was not saved
    (the status line said "the new model reads now", over the error it had just shown)."""
    monkeypatch.setattr(app.learn, "personal_path", tmp_path / "personal-model.npz")

    def refuse(*_a: object, **_k: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(finetune, "save_personal", refuse)
    monkeypatch.setattr(status_bar, "MESSAGE_S", 0.0)
    before = app.model
    try:
        app.learn.learner._result = (_outcome(True), [], [])
        app.learn.poll()
        app.step()
        overlay = dpg.get_item_configuration(app.learn.progress)["overlay"]
        assert overlay.startswith("learned in") and overlay.endswith(", not saved")
        assert "was not saved (Read-only file system)" in app.status.message and app.status._msg_error
        assert app.model.path is None  # the new weights read, from memory
    finally:
        app.learn.reset()
        app.use_model(before)


def test_use_it_anyway_says_it_is_used(app: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """After "Use it anyway" the bar said "not used" and the figures "Not used: ..." while the model line
    showed the new model."""
    monkeypatch.setattr(app.learn, "personal_path", tmp_path / "personal-model.npz")
    before = app.model
    try:
        app.learn.learner._result = (_outcome(False), [], [])
        app.learn.poll()
        assert dpg.get_item_configuration(app.learn.progress)["overlay"] == "not used"
        assert "Not used:" in dpg.get_value(app.learn.figures_text)
        app.learn.insist()
        app.step()
        assert dpg.get_item_configuration(app.learn.progress)["overlay"] == "used anyway"
        assert "Not used" not in dpg.get_value(app.learn.figures_text)
        assert not dpg.is_item_shown(app.learn.insist_btn)
        assert app.status.message.startswith("Using the model it made anyway: it reads now, saved as personal-model.npz")
        assert (tmp_path / "personal-model.npz").exists() and app.model.path == tmp_path / "personal-model.npz"
    finally:
        app.learn.reset()
        app.use_model(before)


def test_reset_that_cannot_move_the_personal_model_aside_moves_nothing(app: object, monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    """Reset with a read-only folder (or a folder where a .previous name should be) closed the window
    ("Read-only file system", exit 2; "IsADirectoryError", exit 3) after moving the model but not its
    card: now all three stay where they were, the base model reads, and the status line says why."""
    mine = tmp_path / "personal-model.npz"
    monkeypatch.setattr(app.learn, "personal_path", mine)
    files = {mine: default_model_path().read_bytes(),  # a readable model: its place is .previous
             mine.with_suffix(".json"): default_model_path().with_suffix(".json").read_bytes(),
             tmp_path / "personal-model.unsure.json": b"detector"}
    for f, data in files.items():
        f.write_bytes(data)
    (tmp_path / "personal-model.previous.json").mkdir()  # where the card should go: a folder
    app.learn.reset()
    app.step()
    assert {f: f.read_bytes() for f in files} == files
    assert not (tmp_path / "personal-model.previous.npz").exists()
    assert "could not be moved aside" in app.status.message and app.status._msg_error
    assert app.model.path != mine


def test_reset_of_an_unreadable_personal_model_keeps_the_good_one_put_aside_before(
        app: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A Reset of a corrupt personal model replaced the readable personal-model.previous.npz the Reset
    before had kept: now the unreadable one goes to .broken names and the window says where."""
    mine = tmp_path / "personal-model.npz"
    monkeypatch.setattr(app.learn, "personal_path", mine)
    good = {tmp_path / "personal-model.previous.npz": default_model_path().read_bytes(),
            tmp_path / "personal-model.previous.json": b"good card"}
    for f, data in {**good, mine: b"not a model", mine.with_suffix(".json"): b"card"}.items():
        f.write_bytes(data)
    app.learn.reset()
    app.step()
    assert {f: f.read_bytes() for f in good} == good
    assert (tmp_path / "personal-model.broken.npz").read_bytes() == b"not a model"
    assert (tmp_path / "personal-model.broken.json").read_bytes() == b"card"
    assert not mine.exists() and not mine.with_suffix(".json").exists()
    assert app.status.message.endswith("your personal model could not be read and is kept as personal-model.broken.npz")
    assert not app.status._msg_error and app.model.path != mine
