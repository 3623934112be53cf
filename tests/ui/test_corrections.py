"""Issue 42: a wrong correction could not be undone (Ctrl+Z took back the stroke, not the
saved file) and there was no list to review corrections before Learn. Now the Learn section
lists them (a thumbnail and the digit each; a click relabels or deletes), Ctrl+Z right after
a correction deletes it, and the list is exactly what Learn reads."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import dearpygui.dearpygui as dpg
import numpy as np
import pytest
from PIL import Image

from gemmpad.data import drawings
from gemmpad.ui import harness
from gemmpad.ui.learn_panel import corrections, thumbnail
from tests.ui.support import draw, one, real_input, seven


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
        app.learn.correct(digit)
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
    assert [(e.label, e.path) for e in learned] == app.learn.listed == corrections(app.drawings_dir, thumbnail)[0]
    assert len(learned) == 2 and len(_files(app)) == 4  # each a strokes file and its PNG



def test_the_count_leaves_out_and_names_the_files_learn_cannot_read(empty_folder: object) -> None:
    """A corrupt strokes file was counted ("3 corrections") while Learn trained on 2 and skipped it,
    and the list showed 2. Now the count is what Learn trains on, the file it skips named; a correction
    whose strokes cannot be read but whose picture can is listed as the picture, as Learn reads it."""
    app = empty_folder
    for digit, drawing in ((7, seven), (5, one)):
        draw(app, drawing())
        app.learn.correct(digit)
        app.clear()
    (bad := app.drawings_dir / "3" / "bad.json").parent.mkdir()
    bad.write_text("{not json", encoding="utf-8")
    (strokes_only := next((app.drawings_dir / "5").glob("*.json"))).write_text("[", encoding="utf-8")
    app.learn.refresh()
    harness.settle(app)
    learned = drawings.read_folder(app.drawings_dir, say=lambda _line: None)
    assert [(e.label, e.path) for e in learned] == app.learn.listed
    assert [d for d, p in app.learn.listed] == [5, 7] and app.learn.listed[0][1] == strokes_only.with_suffix(".png")
    assert app.learn.skipped == [(bad, "cannot be read")]
    thumbs = [c for c in dpg.get_all_items() if dpg.get_item_type(c).endswith("mvImageButton")
              and dpg.is_item_shown(c)]
    assert len(thumbs) == 2
    assert dpg.get_value(app.learn.count_text) == ("2 corrections (1 more file skipped: 3/bad.json cannot be read): "
                                                   "click one to relabel or delete it")
    draw(app, seven())
    app.shortcut(dpg.mvKey_3)  # the status line counts a digit's drawings as Learn reads them too
    assert ": 1 drawing of 3. L learns" in app.status.message
    for _d, path in app.learn.listed:
        app.learn.delete(path)
    assert dpg.get_value(app.learn.count_text).startswith("No corrections yet (1 file skipped: 3/bad.json cannot be read). ")

def test_the_count_leaves_out_and_names_a_drawing_with_no_ink(empty_folder: object) -> None:
    """A drawing that reads but holds no ink (a blank picture) was counted and listed as a correction
    ("2 corrections") while Learn skipped it ("no ink in it") and trained on 1. Now the count is what
    Learn trains on and the blank file is named as skipped, for that reason."""
    app = empty_folder
    draw(app, seven())
    app.learn.correct(7)
    app.clear()
    (blank := app.drawings_dir / "4" / "blank.png").parent.mkdir()
    Image.fromarray(np.zeros((28, 28), np.uint8)).save(blank)
    app.learn.refresh()
    harness.settle(app)
    skipped: list[str] = []
    learned = drawings.read_folder(app.drawings_dir, say=skipped.append)
    assert [(e.label, e.path) for e in learned] == app.learn.listed and [d for d, _ in app.learn.listed] == [7]
    assert skipped[0] == f"skipped {blank}: no ink in it"  # (then: "no drawings in" 4/)
    assert app.learn.skipped == [(blank, "has no ink")]
    assert dpg.get_value(app.learn.count_text) == ("1 correction (1 more file skipped: 4/blank.png has no ink): "
                                                   "click one to relabel or delete it")


def test_a_thumbnails_menu_deletes_and_relabels_through_its_widgets(empty_folder: object) -> None:
    """Real clicks: the thumbnail opens its menu, Delete deletes; the relabel list's callback as
    Dear PyGui calls it (sender, value, user data) moves the files."""
    app = empty_folder
    for digit in (3, 5):
        draw(app, seven())
        app.learn.correct(digit)
        app.clear()
    harness.settle(app)
    xt = real_input()
    try:
        _click(app, xt, _shown("mvImageButton")[0])
        (delete,) = _shown("mvButton", "Delete".__eq__)
        (relabel,) = _shown("mvCombo", "relabel as".__eq__)
        dpg.get_item_callback(relabel)(relabel, "8", dpg.get_item_user_data(relabel))
        assert [d for d, _ in app.learn.listed] == [5, 8]
        for _ in range(3):
            app.step()
        _click(app, xt, _shown("mvImageButton")[0])
        _click(app, xt, _shown("mvButton", "Delete".__eq__)[0])
        assert [d for d, _ in app.learn.listed] == [8]
    finally:
        xt.move(0, 0)
        xt.close()
        for _ in range(3):
            app.step()


def test_a_skipped_file_is_listed_and_deleted_through_its_menu(empty_folder: object) -> None:
    """A file Learn skips was only named in the count ("1 more file skipped: 3/bad.json ..."): nothing
    to click, so deleting it meant finding the folder by hand. Now each skipped file is listed under the
    thumbnails and a click opens its menu, whose Delete deletes it (its picture too), as a correction's."""
    app = empty_folder
    draw(app, seven())
    app.learn.correct(7)
    app.clear()
    (bad := app.drawings_dir / "3" / "bad.json").parent.mkdir()
    bad.write_text("{not json", encoding="utf-8")
    bad.with_suffix(".png").write_bytes(b"not a picture either")
    (blank := app.drawings_dir / "4" / "blank.png").parent.mkdir()
    Image.fromarray(np.zeros((28, 28), np.uint8)).save(blank)
    app.learn.refresh()
    for _ in range(3):
        app.step()
    assert app.learn.skipped == [(bad, "cannot be read"), (blank, "has no ink")]
    xt = real_input()
    try:
        for path, rest in ((bad, [(blank, "has no ink")]), (blank, [])):
            name = str(path.relative_to(app.drawings_dir))
            dpg.set_y_scroll(app.learn.root, dpg.get_y_scroll_max(app.learn.root))  # under the thumbnails
            for _ in range(3):
                app.step()
            (entry,) = _shown("mvButton", lambda label: label.startswith(name))
            _click(app, xt, entry)
            (delete,) = _shown("mvButton", "Delete".__eq__)
            _click(app, xt, delete)
            assert not path.exists() and not path.with_suffix(".png").exists() and app.learn.skipped == rest
            for _ in range(3):
                app.step()
        assert [d for d, _ in app.learn.listed] == [7]  # the correction stays
        assert dpg.get_value(app.learn.count_text).startswith("1 correction: ")
    finally:
        xt.move(0, 0)
        xt.close()
        dpg.set_y_scroll(app.learn.root, 0.0)
        for _ in range(3):
            app.step()


def _shown(kind: str, label: Callable[[str], bool] = lambda _label: True) -> list[int | str]:
    """The widgets of a kind (mvButton, mvImageButton, ...) visible now, whose label passes `label`."""
    return [c for c in dpg.get_all_items() if dpg.get_item_type(c).endswith(kind) and dpg.is_item_visible(c)
            and label(dpg.get_item_label(c) or "")]


def _click(app: object, xt: object, item: int | str) -> None:
    """A real click in the middle of `item`, and the frames it takes to land."""
    vx, vy = dpg.get_viewport_pos()
    x, y, w, h = harness.rect(item)
    xt.move(int(vx + x + w // 2), int(vy + y + h // 2))
    for _ in range(3):
        app.step()
    xt.button(True)
    app.step()
    app.step()
    xt.button(False)
    for _ in range(4):
        app.step()


def test_one_correction_shows_whole_at_the_default_size(empty_folder: object) -> None:
    """Issue 42's "a scrollbar always shows mid-dashboard": at the default size the first correction
    made Learn's section scroll, the digit it was filed as 15 px below the fold. Now the digit is beside
    its thumbnail and the section shows whole."""
    from gemmpad.ui import layout
    from tests.ui.layout_check import region_rect

    app = empty_folder
    dpg.set_viewport_width(layout.DEFAULT_WINDOW[0])
    dpg.set_viewport_height(layout.DEFAULT_WINDOW[1])
    draw(app, seven())
    app.shortcut(dpg.mvKey_3)
    for _ in range(3):
        app.step()
    assert dpg.get_y_scroll_max(app.learn.root) == 0
    region = region_rect(app.learn.root)
    row = dpg.get_item_children(app.learn.list_group, 1)[0]
    texts = [t for t in _leaves(row) if dpg.get_item_type(t).endswith("mvText")
             and not dpg.get_item_type(dpg.get_item_parent(t)).endswith("mvTooltip")]
    assert [dpg.get_value(t).strip() for t in texts] == ["3"]
    x, y, w, h = harness.rect(texts[0])
    assert region[1] <= y and y + h <= region[1] + region[3] and dpg.is_item_visible(texts[0])


def _leaves(item: int | str) -> list[int | str]:
    out = []
    for child in dpg.get_item_children(item, 1) or []:
        out += [child] if not dpg.get_item_children(child, 1) else _leaves(child)
    return out


def test_hidden_buttons_have_no_tooltip_over_the_text_before_them(app: object) -> None:
    """With "Use it anyway" and "Dismiss" hidden, hovering the corrections hint popped up their tooltips
    (Dear PyGui draws a tooltip when the item drawn last is hovered): hidden with their buttons now."""
    from gemmpad.ui.draw_panel import _TOOLTIPS

    panel = app.learn
    assert not dpg.is_item_shown(panel.insist_btn) and not dpg.is_item_shown(panel.dismiss_btn)
    xt = real_input()
    try:
        harness.settle(app)
        vx, vy = dpg.get_viewport_pos()
        x, y = dpg.get_item_rect_min(panel.count_text)
        w, h = dpg.get_item_rect_size(panel.count_text)
        assert w > 0 and h > 0
        xt.move(int(vx + x + min(40, w / 2)), int(vy + y + h / 2))
        for _ in range(40):  # past the tooltip's delay
            app.step()
        assert dpg.is_item_hovered(panel.count_text)
        for button in (panel.insist_btn, panel.dismiss_btn):
            assert not dpg.get_item_state(_TOOLTIPS[button])["visible"]
    finally:
        xt.move(0, 0)
        xt.close()
