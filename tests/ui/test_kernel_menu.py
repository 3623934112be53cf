"""The kernel menu lists the whole ladder: what runs here to pick, the rest greyed with the reason,
the source file and a committed figure (issue 39: without a GPU the CUDA rungs were not listed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmpad.runtime import native, registry
from tests.ui.support import BASE, shot

ROOT = Path(__file__).resolve().parents[2]


def test_the_menu_lists_every_kernel_without_the_cuda_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """No window: the sections a laptop's install gets."""
    from gemmpad.ui.engine_panel import kernel_menu

    monkeypatch.setattr(native, "_cuda_module", None)
    monkeypatch.setattr(native, "_CUDA_IMPORT_ERROR", "")
    monkeypatch.setattr(native, "cuda_module_if_built", lambda: None)
    native.cuda_status.cache_clear()
    try:
        cpu = [s.name for s in registry.kernels(device="cpu")]
        sections = kernel_menu({"cpu": cpu, "numpy": ["numpy"]})
        cuda = registry.kernels(device="cuda")
    finally:
        native.cuda_status.cache_clear()
    headings = [h for h, _ in sections]
    assert headings[:2] == ["CPU", "NumPy"] and len(headings) == 3
    assert headings[2].startswith("Cannot run here: this install has no CUDA module: ")
    greyed = sections[2][1]
    assert [r.name for r in greyed] == [s.name for s in cuda] and len(greyed) > 20
    assert all(r.backend == "" and (ROOT / r.source).is_file() for r in greyed)
    wgmma = next(r for r in greyed if r.name == "cuda.10_wgmma_fp16")
    assert wgmma.figures.startswith("H100 ") and ", H200 " in wgmma.figures
    assert wgmma.figures.endswith(" TFLOP/s at 4096x4096x4096")
    assert "Measured: NVIDIA H200: " in wgmma.about
    assert [r.backend for r in sections[0][1]] == ["cpu"] * len(cpu)


def test_the_window_menu_greys_what_cannot_run(app: object, tmp_path_factory: pytest.TempPathFactory) -> None:
    import dearpygui.dearpygui as dpg

    offered = {k for ks in app.kernel_lists.values() for k in ks}
    items = app.engine.menu_items
    assert set(items) == {s.name for s in registry.kernels()} | offered
    for name, sel in items.items():
        assert dpg.get_item_configuration(sel)["enabled"] == (name in offered), name
    greyed = [s for s in registry.kernels() if s.name not in offered]
    if not greyed:
        pytest.skip("this machine runs every kernel: nothing to grey")
    menu_text = " ".join(str(dpg.get_value(i)) for i in dpg.get_item_children(app.engine.kernel_menu, 1) or []
                         if dpg.get_item_type(i) == "mvAppItemType::mvText")
    for reason in {s.unavailable_reason for s in greyed}:
        assert f"Cannot run here: {reason}" in menu_text
    dpg.configure_item(app.engine.kernel_menu, show=True)
    try:
        for _ in range(3):
            app.step()
        assert dpg.is_item_shown(app.engine.kernel_menu)
        shot(app, tmp_path_factory, "kernel-menu")
    finally:
        dpg.configure_item(app.engine.kernel_menu, show=False)
        app.step()


def test_picking_in_the_menu_runs_the_kernel(app: object) -> None:
    """A pick closes the menu and runs the kernel, the button showing its name; one of another
    usable backend switches to that backend."""
    import dearpygui.dearpygui as dpg

    first = app.kernel_lists[BASE][0]
    sel = app.engine.menu_items[first]
    dpg.get_item_callback(sel)(sel, True, dpg.get_item_user_data(sel))
    assert app.state.kernel == first and dpg.get_item_label(app.engine.kernel_button) == first
    assert dpg.get_value(sel) is True and not dpg.is_item_shown(app.engine.kernel_menu)
    other = next(b for b, ks in app.kernel_lists.items() if ks and b != BASE)
    app.set_kernel(app.kernel_lists[other][0])
    assert app.state.backend == other and app.state.kernel == app.kernel_lists[other][0]
