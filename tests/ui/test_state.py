"""The window's state: the choice and the reading stored once (issue 41), without a window."""

from __future__ import annotations

import pytest

from gemmpad.ui import harness
from gemmpad.ui.state import Reading, State
from tests.ui.support import BASE, draw, seven


def test_the_default_kernel_is_read_from_the_answer_not_copied() -> None:
    s = State("cpu", None, 1)
    assert s.kernel is None  # asked for the default, not answered yet
    s.show(Reading("cpu", "cpu.mlp_fused", 1), refused=False)
    assert s.kernel == "cpu.mlp_fused" and s.kernel_choice is None
    assert s.request() == ("cpu", None, 1, False)  # the worker keeps what it named: no new request
    s.choose(backend="numpy")
    assert s.kernel is None  # the CPU's answer does not name NumPy's kernel
    s.show(Reading("cpu", "cpu.mlp_fused", 1), refused=False)  # an older request's answer
    assert s.kernel is None


def test_a_refused_switch_withdraws_the_choice() -> None:
    s = State("cpu", "cpu.mlp_fused", 4)
    s.choose(kernel="cpu.01_naive")
    s.show(Reading("cpu", "cpu.mlp_fused", 4), refused=True)
    assert (s.backend, s.kernel) == ("cpu", "cpu.mlp_fused")
    assert s.request() == ("cpu", "cpu.mlp_fused", 4, False)


def test_a_new_kernel_takes_the_lab_tab_back_and_blank_keeps_the_figures() -> None:
    s = State("cpu", "cpu.mlp_fused", 1)
    s.show(Reading("cpu", "cpu.mlp_fused", 1, layer_us=(1.0, 2.0, 3.0)), refused=False)
    s.show_rung("cuda.07_warptile")
    assert s.lab_rung == "cuda.07_warptile"
    s.show_rung("cpu.mlp_fused")  # the running kernel: follow it
    assert s.lab_rung is None
    s.show_rung("cuda.07_warptile")
    s.choose(kernel="cpu.01_naive")
    assert s.lab_rung is None
    s.blank()
    assert s.reading.prediction is None and s.reading.layer_us == (1.0, 2.0, 3.0)


def test_no_panel_imports_or_types_the_window() -> None:
    """Panels get the state and callbacks (gemmpad.ui.actions), never the window: only what builds
    or drives the window (app, harness) imports it, and no module types it as a Protocol."""
    from tests.test_imports import PACKAGE, import_graph

    graph = import_graph()
    drivers = {"gemmpad.ui.window", "gemmpad.ui.app", "gemmpad.ui.harness"}
    importers = {m for m, edges in graph.items() if "gemmpad.ui.window" in edges}
    assert importers <= drivers, importers - drivers
    typed = [p.name for p in (PACKAGE / "ui").rglob("*.py") if "class App(Protocol)" in p.read_text(encoding="utf-8")]
    assert typed == []


def test_the_named_default_refreshes_the_controls_once(app: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend picked without a kernel: the worker's answer names its default, and the menu
    shows it once, not again at each later answer (the kernel menu's refresh at every reading
    of a drawing is a cost the old copy-back did not have)."""
    other = next((b for b, reason in app.backend_reasons.items() if not reason and b != BASE), None)
    if other is None:
        pytest.skip("one usable backend: nothing to switch to")
    calls: list[str | None] = []
    real = app.engine.show_controls
    monkeypatch.setattr(app.engine, "show_controls", lambda: calls.append(app.state.kernel) or real())
    app.set_backend(other)
    harness.settle(app)
    for _ in range(3):  # three drawings, each read to the end: the newest answer each time
        app.clear()
        draw(app, seven())
    assert app.state.reading.backend == other and app.state.kernel in app.kernel_lists[other]
    assert calls == [None, app.state.kernel]  # the switch (no kernel named yet), then the name
