"""Issue 42's stale and inconsistent figures: one source for the model's figures (its card),
refreshed when the model changes; nothing left over after Reset; no row jumping when the
model line changes length; an idle Learn with no bar that looks like a text field; a
one-frame latency plot that shows its frame."""

from __future__ import annotations

from pathlib import Path

import dearpygui.dearpygui as dpg
import pytest

from gemmpad.runtime.model import Model, load_model
from gemmpad.ui import harness, style
from tests.ui.support import BASE, NEEDS_MODEL, one


@NEEDS_MODEL
def test_the_model_line_keeps_its_height_and_shows_the_cards_figures(app: object) -> None:
    """The shipped model's line (four figures) wrapped to two lines and pushed the Backend,
    Kernel and Batch rows down from where a card-less model's one line left them."""
    before = app.model
    shipped = load_model()
    try:
        ys, heights = [], []
        for model in (Model(shipped.weights), shipped):
            app.use_model(model)
            harness.settle(app)
            ys.append(harness.rect(next(iter(app.engine.backend_buttons.values())))[1])
            heights.append(harness.rect(app.engine.model_text)[3])
            line = dpg.get_value(app.engine.model_text)
            assert all(score in line for score in model.scores()), (line, model.scores())  # refreshed
        assert ys[0] == ys[1] and heights[0] == heights[1], (ys, heights)
        assert all(score in dpg.get_value(app.engine.model_text) for score in shipped.scores())  # all shown
    finally:
        app.use_model(before)
        harness.settle(app)


def test_reset_takes_learned_in_down_and_the_idle_bar_is_hidden(app: object, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app.learn, "personal_path", tmp_path / "personal-model.npz")
    assert not dpg.is_item_shown(app.learn.progress)  # idle and empty, it looked like a text field
    # as a finished Learn leaves it
    dpg.configure_item(app.learn.progress, overlay="learned in 2.3 s", show=True)
    dpg.set_value(app.learn.figures_text, "MNIST test: 98.7 % -> 98.8 %")
    app.learn.reset()
    harness.settle(app)
    assert not dpg.is_item_shown(app.learn.progress)
    assert "learned in" not in dpg.get_item_configuration(app.learn.progress)["overlay"]
    assert dpg.get_value(app.learn.figures_text) == ""


def test_a_one_frame_latency_plot_draws_its_frame(app: object, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A line through one point draws nothing: the plot looked empty after the first reading."""
    import numpy as np

    harness.replay(app, one())  # one stroke in one frame: one reading
    harness.settle(app)
    assert len(app.state.reading.history) == 1
    pixels = harness.grab(app)
    x, y, w, h = harness.rect(app.engine.plot)
    legend = round(40 * app.scale)  # the legend's colour boxes stand above the plotting area
    plot = pixels[y + legend:y + h, x:x + w]
    near = np.abs(plot - np.array(style.WARM) / 255).max(axis=2) < 0.12  # the end-to-end colour
    assert near.sum() >= 4, "no end-to-end dot on the plot"


def test_every_kernels_description_fits_its_two_lines(app: object) -> None:
    """cpu.01_naive's description wrapped to three lines in a box of two: "agrees with fp32 on" and then
    nothing. Now it is cut at a word with "…", and the tooltip holds all of it."""
    import dearpygui.dearpygui as dpg

    from gemmpad.ui.engine_panel import SUMMARY_LINES
    from gemmpad.ui.text import kernel_summary

    engine = app.engine
    two = (dpg.get_text_size("\n".join(["Ag"] * SUMMARY_LINES), font=app.fonts.small) or (0, 0))[1]
    for kernel in app.kernel_lists[BASE]:
        app.set_kernel(kernel)
        for _ in range(2):
            app.step()
        shown, full = dpg.get_value(engine.summary), kernel_summary(kernel)
        assert dpg.get_item_state(engine.summary)["rect_size"][1] <= two, (kernel, shown)
        assert dpg.get_value(engine.summary_tip) == full
        assert shown == full or (shown.endswith(" …") and full.startswith(shown[:-2])
                                 and full[len(shown) - 2:].startswith("  ")), (kernel, shown)  # a part left out whole


def test_no_text_still_calls_the_batch_test_time_augmentation(app: object) -> None:
    """The batch became identical copies (a speed knob that never changes the answer), but the batch
    box's tooltip and the help still said "B slightly shifted copies ... averaged"."""
    import dearpygui.dearpygui as dpg

    texts = [str(dpg.get_value(i)) for i in dpg.get_all_items() if dpg.get_item_type(i).endswith("mvText")]
    stale = [t for t in texts if "shifted" in t or "augmentation" in t or "averag" in t]
    assert not stale, stale
    batch_tip = dpg.get_item_children(dpg.get_item_children(dpg.get_item_parent(app.engine.batch_combo), 1)[
        dpg.get_item_children(dpg.get_item_parent(app.engine.batch_combo), 1).index(app.engine.batch_combo) + 1], 1)
    assert "identical copies" in dpg.get_value(batch_tip[0])
