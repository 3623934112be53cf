"""The layout follows the window: every size, nothing too narrow, nothing overlapping."""

from __future__ import annotations

import pytest

from gemmpad.ui import harness
from tests.ui.support import real_input, draw, seven, shot


def controls(app: object) -> dict[str, int | str]:
    """The leaf widgets whose rectangles the layout test reads back."""
    d, p, e = app.draw, app.pred, app.engine
    items = {"canvas": d.image, "clear": d.clear_btn, "undo": d.undo_btn, "redo": d.redo_btn, "help": d.help_btn,
             "brush": d.brush, "label": d.label, "save": d.save_btn, "digit": p.digit, "conf": p.conf,
             "bars": p.bars_plot, "preview": p.preview, "kernel": e.kernel_button, "batch": e.batch_combo,
             "run": e.continuous_box, "warm": e.warm_box, "latency": e.plot, "gpu": app.status.gpu,
             "caption": p.caption, "runner": p.runner, "hidden-1": p.hidden_img[0], "hidden-2": p.hidden_img[1]}
    items.update({f"backend-{b}": btn for b, btn in e.backend_buttons.items()})
    items.update({f"{k}-{i}": c for k, cells in e.cells.items() for i, c in enumerate(cells)})
    return items


@pytest.mark.parametrize("size", [(1200, 716), (800, 520), (420, 300), (1400, 950), (1000, 640)])
def test_layout_follows_the_window(app: object, size: tuple[int, int], tmp_path_factory: pytest.TempPathFactory) -> None:
    import dearpygui.dearpygui as dpg

    from gemmpad.ui.layout import plan

    draw(app, seven())
    try:
        dpg.set_viewport_width(size[0])
        dpg.set_viewport_height(size[1])
        for _ in range(6):
            app.step()
        vw, vh = dpg.get_viewport_client_width(), dpg.get_viewport_client_height()
        assert (vw, vh) == size
        L = plan(vw, vh)
        assert app.layout == L
        x, y, w, h = harness.rect(app.draw.image)
        assert w == h == L.canvas and x >= 0 and x + w <= vw  # the canvas grows with the window, square
        body_bottom = vh - 14 - L.status_h  # the window padding, then the status bar
        shown = {}
        for name, item in controls(app).items():
            r = harness.rect(item)
            if name == "gpu":
                assert r[1] >= body_bottom  # the status bar is under the panels
                continue
            if dpg.is_item_visible(item) and r[1] >= 0 and r[1] + r[3] <= body_bottom and r[0] + r[2] <= vw:
                shown[name] = r
        for name in ("clear", "undo", "redo", "save", "label", "kernel", "batch") + tuple(
                f"backend-{b}" for b in app.engine.backend_buttons):
            if name not in shown:
                continue
            item = controls(app)[name]
            label = dpg.get_item_label(item) if name not in ("label", "batch") else dpg.get_value(item)
            tw = dpg.get_text_size(label)[0]
            assert shown[name][2] >= tw + 8, f"{name} is {shown[name][2]} px wide, its text {tw} at {size}"
        names = sorted(shown)
        for i, a in enumerate(names):
            ax, ay, aw, ah = shown[a]
            for b in names[i + 1 :]:
                bx, by, bw, bh = shown[b]
                overlap = min(ax + aw, bx + bw) - max(ax, bx) > 1 and min(ay + ah, by + bh) - max(ay, by) > 1
                assert not overlap, f"{a} {shown[a]} overlaps {b} {shown[b]} at {size}"
        if L.mode == "wide":  # everything on one screen at the sizes that allow it
            assert {"canvas", "kernel", "latency", "preview", "bars"} <= set(shown), sorted(shown)
        shot(app, tmp_path_factory, f"layout-{size[0]}x{size[1]}")
    finally:
        dpg.set_viewport_width(1200)
        dpg.set_viewport_height(716)
        for _ in range(4):
            app.step()


def test_the_batch_row_stays_put_across_backends(app: object) -> None:
    """The kernel's description has a fixed height: the Batch row jumped ~8 px when NumPy's
    one-line description replaced a two-line one."""
    import dearpygui.dearpygui as dpg

    ys = {}
    for backend, reason in app.backend_reasons.items():
        if reason:
            continue
        app.set_backend(backend)
        harness.settle(app)
        assert dpg.get_value(app.engine.summary)  # each kernel says what it is
        ys[backend] = harness.rect(app.engine.batch_combo)[1]
    assert len(set(ys.values())) == 1, ys


def test_help_opens_with_a_real_question_mark_and_every_control_has_a_tooltip(app: object) -> None:
    import dearpygui.dearpygui as dpg

    from gemmpad.ui.help_overlay import SECTIONS
    from gemmpad.ui.learn_panel import help_section

    from gemmpad.ui import window

    xt = real_input()
    # keys go to the window under the pointer (no window manager: focus follows it); a test before may
    # have left the pointer off the window
    x, y, w, h = window._viewport_rect()
    xt.move(x + w // 2, y + h - 20)
    try:
        for name, down in (("Shift_L", True), ("slash", True), ("slash", False), ("Shift_L", False)):
            xt.key(name, down)
            for _ in range(2):
                app.step()
        assert app.help.shown
        for _ in range(3):
            app.step()
        (x, y), w, h = dpg.get_item_pos(app.help.root), dpg.get_item_width(app.help.root), dpg.get_item_height(app.help.root)
        vw, vh = dpg.get_viewport_client_width(), dpg.get_viewport_client_height()
        assert 0 <= x and x + w <= vw and 0 <= y and y + h <= vh  # inside the window
        texts = [dpg.get_value(t) for t in app.help.texts]
        assert texts == [body for _, body in (*SECTIONS, help_section())]  # every section is on show
        # the GPU-drawn window's measured toll (ui/NOTES.md, 2026-11-26) is told where the user reads
        assert any("OpenGL to CUDA" in t and "H100" in t for t in texts)
        xt.key("Escape", True)
        xt.key("Escape", False)
        for _ in range(3):
            app.step()
        assert not app.help.shown
    finally:
        xt.close()
    # every button, box, slider, list and tab: the next item in its parent is its tooltip
    kinds = ("mvButton", "mvCombo", "mvSliderFloat", "mvCheckbox", "mvTab")
    missing = []
    for item in dpg.get_all_items():
        if dpg.get_item_type(item).rsplit(":", 1)[-1] not in kinds:
            continue
        siblings = dpg.get_item_children(dpg.get_item_parent(item), 1)
        after = siblings[siblings.index(item) + 1 :]
        if not after or dpg.get_item_type(after[0]) != "mvAppItemType::mvTooltip":
            missing.append(dpg.get_item_label(item) or dpg.get_item_type(item))
    assert not missing, f"controls without a tooltip: {missing}"


def test_the_backend_row_holds_one_button_per_backend(app: object) -> None:
    """The row reads gemmpad.runtime.backends; each description is the button's tooltip, not a text in
    the row (a stray one pushed the CPU and GPU buttons out of the window)."""
    import dearpygui.dearpygui as dpg

    from gemmpad.runtime import backends

    buttons = app.engine.backend_buttons
    assert list(buttons) == [b for b in backends.NAMES if b in buttons] and len(buttons) >= 2
    row = dpg.get_item_parent(next(iter(buttons.values())))
    kinds = [dpg.get_item_type(c).split("::")[-1] for c in dpg.get_item_children(row, 1)]
    assert kinds.count("mvText") == 1 and kinds.count("mvButton") == len(buttons)  # the "Backend" label
    vw = dpg.get_viewport_client_width()
    for btn in buttons.values():
        x, _ = dpg.get_item_rect_min(btn)
        w, _ = dpg.get_item_rect_size(btn)
        assert 0 <= x and x + w <= vw
