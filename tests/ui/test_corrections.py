"""Issue 42: a wrong correction could not be undone (Ctrl+Z took back the stroke, not the
saved file) and there was no list to review corrections before Learn. Now the Learn section
lists them (a thumbnail and the digit each; a click relabels or deletes), Ctrl+Z right after
a correction deletes it, and the list is exactly what Learn reads."""

from __future__ import annotations

import shutil

import dearpygui.dearpygui as dpg
import pytest

from gemmpad import drawings
from gemmpad.ui import harness
from gemmpad.ui.learn_panel import corrections
from tests.ui.support import draw, one, seven


@pytest.fixture
def empty_folder(app: object) -> object:
    """The window's drawings folder, emptied before and after."""
    def wipe() -> None:
        for sub in app.drawings_dir.iterdir():
            shutil.rmtree(sub) if sub.is_dir() else sub.unlink()
        app.learn.refresh()

    wipe()
    yield app
    wipe()


def _files(app: object) -> list[str]:
    return sorted(str(p.relative_to(app.drawings_dir)) for p in app.drawings_dir.rglob("*") if p.is_file())


def test_ctrl_z_right_after_a_correction_takes_it_back(empty_folder: object) -> None:
    app = empty_folder
    draw(app, one())
    app.shortcut(dpg.mvKey_3)  # the wrong key: a 1 filed as a 3
    assert [d for d, _ in app.learn.listed] == [3] and len(_files(app)) == 2  # strokes and PNG
    app.shortcut(dpg.mvKey_Z, ctrl=True)
    harness.settle(app)
    assert _files(app) == [] and app.learn.listed == []
    assert not app.canvas.empty  # the drawing stays: press the right digit now
    app.shortcut(dpg.mvKey_1)
    assert [d for d, _ in app.learn.listed] == [1]
    draw(app, seven())  # something drawn since: Ctrl+Z is the stroke's again
    app.shortcut(dpg.mvKey_Z, ctrl=True)
    assert [d for d, _ in app.learn.listed] == [1]


def test_the_list_shows_what_learn_reads_and_relabels_and_deletes(empty_folder: object) -> None:
    app = empty_folder
    for digit, drawing in ((7, seven), (1, one), (3, one)):
        draw(app, drawing())
        app.learn.correct(app, digit)
        app.clear()
    harness.settle(app)
    assert [d for d, _ in app.learn.listed] == [1, 3, 7]
    thumbs = [c for c in dpg.get_all_items() if dpg.get_item_type(c).endswith("mvImageButton")
              and dpg.is_item_shown(c)]
    assert len(thumbs) == 3
    wrong = app.learn.listed[1][1]  # the 1 filed as a 3
    app.learn.relabel(wrong, 1)
    assert [d for d, _ in app.learn.listed] == [1, 1, 7]
    app.learn.delete(app.learn.listed[2][1])
    harness.settle(app)
    learned = drawings.read_folder(app.drawings_dir, say=lambda _line: None)
    assert [(e.label, e.path) for e in learned] == app.learn.listed == corrections(app.drawings_dir)
    assert len(learned) == 2 and len(_files(app)) == 4  # each a strokes file and its PNG
