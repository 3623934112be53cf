"""The Lab tab (issue 42, item 7): the selected rung's roofline and anatomy, live where this
machine runs it, from the committed H200 figures where it cannot, "not recorded" where the
registry has no anatomy to give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemmpad.runtime import registry
from gemmpad.errors import CudaUnavailable
from gemmpad.ui import harness, layout
from gemmpad.ui.lab_panel import ANATOMY, NOT_RECORDED, fmt_flops
from tests.ui import layout_check
from tests.ui.support import BASE, draw, seven, shot, show_lab

ROOT = Path(__file__).resolve().parents[2]


def texts(app: object) -> dict[str, object]:
    import dearpygui.dearpygui as dpg

    lab = app.engine.lab
    return {
        "title": dpg.get_value(lab.title), "source": dpg.get_value(lab.source),
        "ceilings": dpg.get_value(lab.ceilings), "changed": dpg.get_value(lab.changed),
        "missing": dpg.get_value(lab.missing), "note": dpg.get_value(lab.anatomy_note),
        "rows": [[dpg.get_value(c) for c in cells] for row, cells in lab.point_cells if dpg.is_item_shown(row)],
        "anatomy": [[dpg.get_value(c) for c in cells] for cells in lab.anatomy_cells],
        "anatomy_shown": dpg.is_item_shown(lab.anatomy_table),
        "series": [dpg.get_item_label(i) for i in lab._series],
        "rung": dpg.get_value(lab.rung),
    }


@pytest.fixture
def lab(app: object) -> object:
    show_lab(app)
    yield app
    import dearpygui.dearpygui as dpg

    app.set_lab_rung(None)
    dpg.set_value(app.engine.tabs, app.engine.latency_tab)


@pytest.mark.skipif(BASE != "cpu", reason="needs the native CPU kernels (per-layer times)")
def test_the_running_rung_is_plotted_live_at_the_batch(lab: object, tmp_path_factory: pytest.TempPathFactory) -> None:
    app = lab
    app.set_kernel("cpu.02_blocked_simd")
    app.set_batch(32)
    draw(app, seven())
    for _ in range(3):
        app.step()
    t = texts(app)
    assert t["title"] == "cpu.02_blocked_simd at batch 32" and t["rung"] == "cpu.02_blocked_simd"
    assert t["source"].startswith("Live on this machine's CPU")
    names = [r[0] for r in t["rows"]]
    assert names == ["L1", "L2", "L3", "network"]
    for row, shape in zip(t["rows"], ["32x100x784", "32x100x100", "32x10x100"]):
        assert row[1] == f"{shape} (live)" and "FLOP/s" in row[3] and row[4].endswith("%"), row
    assert "live" in t["series"] and "other rungs" in t["series"]
    assert "After cpu.01_naive:" in t["changed"]
    # a CPU rung has no CUDA anatomy: no table of "not recorded", one line saying why
    assert not t["anatomy_shown"] and "a CPU rung" in t["note"]
    assert "no datasheet" in t["ceilings"] and "best bandwidth" in t["ceilings"]
    shot(app, tmp_path_factory, "lab-cpu")


def committed_gemm() -> dict:
    """The committed H200 GEMM run (assets/benchmarks/h200/bench-gemm.json)."""
    return json.loads((ROOT / "assets" / "benchmarks" / "h200" / "bench-gemm.json").read_text(encoding="utf-8"))


def committed_tflops(kernel: str, m: int, n: int, k: int) -> str:
    """The committed H200 run's rate for one row, as the Lab writes it (the ladder README's table quotes the same row)."""
    (row,) = [r for r in committed_gemm()["results"] if (r["kernel"], r["M"], r["N"], r["K"]) == (kernel, m, n, k)]
    return fmt_flops(row["gflops"] * 1e9)  # as the Lab writes it: 46.4, but 19 for 19.04


def committed_date() -> str:
    """The day the committed run was measured, as the Lab labels its figures."""
    return committed_gemm()["machine"]["date_utc"][:10]


def test_a_rung_this_machine_cannot_run_shows_the_committed_h200_figures(lab: object, monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    """Without a GPU (or on any machine) a CUDA rung picked in the lab shows the committed run, labelled so,
    under the H200's datasheet ceilings; its anatomy from registry.anatomy when it answers."""
    app = lab
    if app.gpu.available:
        pytest.skip("a GPU is here: its rungs are live")
    monkeypatch.delattr(registry, "anatomy", raising=False)
    app.set_batch(4096)
    harness.settle(app)
    app.set_lab_rung("cuda.07_warptile")
    app.step()
    t = texts(app)
    assert t["title"] == "cuda.07_warptile at batch 4096" and t["rung"] == "cuda.07_warptile"
    assert t["source"] == f"H200, measured {committed_date()} (committed)"
    assert "H200's datasheet" in t["ceilings"] and "fp16/bf16 989.5 TFLOP/s" in t["ceilings"]
    rows = {r[0]: r for r in t["rows"]}
    assert rows["4096³"][3] == committed_tflops("cuda.07_warptile", 4096, 4096, 4096) and rows["4096³"][2] == "683"
    assert rows["L1"][1] == "4096x100x784" and rows["L1"][3] == committed_tflops("cuda.07_warptile", 4096, 100, 784)
    assert rows["L3"][3] == "not measured" and "batch 1, 16, 256, 4096" in t["missing"]
    assert "fp32 67 TFLOP/s" in t["series"] and "memory 4.8 TB/s" in t["series"]
    assert t["changed"].startswith("After cuda.06_vectorized: warp tiling")
    # no anatomy in this install: every cell says so, and the line under the table why
    assert t["anatomy_shown"] and all(cells[1:] == [NOT_RECORDED] * 2 for cells in t["anatomy"])
    assert t["note"].startswith(f"Anatomy {NOT_RECORDED}")
    shot(app, tmp_path_factory, "lab-committed")

    # registry.anatomy answering for one shape and refusing the other (a rung that cannot say)
    def anatomy(name: str, m: int, n: int, k: int) -> dict[str, object]:
        if (m, n, k) != (4096, 4096, 4096):
            raise CudaUnavailable("needs the GPU")
        return {"block_tile": [128, 128], "threads_per_block": 256, "shared_bytes_per_block": 33_792,
                "occupancy": 0.5, "grid": [32, 32, 1]}

    monkeypatch.setattr(registry, "anatomy", anatomy, raising=False)
    app.set_batch(16)
    harness.settle(app)
    app.step()
    t = texts(app)
    cells = {row[0]: row[1:] for row in t["anatomy"]}
    assert cells["block tile"] == [NOT_RECORDED, "128×128"] and cells["threads / block"] == [NOT_RECORDED, "256"]
    assert cells["shared memory / block"][1] == "33.0\u00a0KiB" and cells["occupancy"][1] == "50\u00a0%"
    assert cells["grid"][1] == "32×32×1" and cells["warp tile"] == [NOT_RECORDED] * 2
    assert len(cells) == len(ANATOMY) and not t["note"]


def test_picking_a_kernel_above_brings_the_lab_back_to_it(lab: object) -> None:
    app = lab
    app.set_lab_rung("cuda.10_wgmma_fp16")
    app.step()
    assert texts(app)["rung"] == "cuda.10_wgmma_fp16"
    app.set_kernel(app.kernel_lists[BASE][0])
    harness.settle(app)
    app.step()
    assert texts(app)["rung"] == app.kernel_lists[BASE][0]


def test_the_lab_fits_every_size(lab: object) -> None:
    """Nothing of the lab overlaps another panel or is cut; it stays open across arrangements
    (a change of arrangement reopened the first tab)."""
    import dearpygui.dearpygui as dpg

    app = lab
    draw(app, seven())
    found = []
    seen = 0
    try:
        for size in [(420, 300), (900, 600), (1200, 716), (1600, 1000)]:
            found += layout_check.problems(app, size)
            if app.layout.mode == "two":  # the engine is below the prediction: scroll to it
                app.show_engine()  # (which scrolls the reading away, as asked)
                found += [p for p in layout_check.problems(app, size) if not p.startswith("the reading is out")]
            seen += sum(dpg.is_item_visible(i) for i in layout_check.leaves(app.engine.lab_region))
    finally:
        dpg.set_viewport_width(layout.DEFAULT_WINDOW[0])
        dpg.set_viewport_height(layout.DEFAULT_WINDOW[1])
        for _ in range(4):
            app.step()
    assert not found, "\n".join(found)
    assert seen > 10  # the lab's widgets were on screen to be checked


@pytest.mark.parametrize("scale", [2.0])
def test_the_lab_fits_at_a_larger_scale(display: str, scale: float) -> None:
    """The Lab tab open at UI scale 2 (another process: fonts are built for one scale)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from tests.ui.support import env

    root = Path(__file__).resolve().parents[2]
    e = env(display)
    e["PYTHONPATH"] = f"{e['PYTHONPATH']}{':' if e['PYTHONPATH'] else ''}{root}"
    sizes = ["1200x716", "1600x1000", "2560x1440"]
    proc = subprocess.run([sys.executable, "-m", "tests.ui.layout_check", "--lab", str(scale), *sizes], env=e, cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == len(sizes), proc.stdout[-2000:]
    found = [p for line in lines for p in json.loads(line)]
    assert not found, "\n".join(found)


def test_on_a_gpu_the_lab_is_live_under_its_cards_ceilings_or_its_measured_bandwidth() -> None:
    """What the tab says on a GPU (lab_view is pure): a card in the table gets its datasheet ceilings,
    one not in it the best bandwidth measured here, and says so."""
    from gemmpad.runtime.native import CudaStatus
    from gemmpad.ui.lab_panel import lab_view

    layer_us = (10.0, 4.0, 2.0)
    h100 = lab_view("cuda.07_warptile", 32, CudaStatus(True, "", True, "NVIDIA H100 80GB HBM3"), layer_us)
    assert h100.source.startswith(f"Live on this H100 80GB HBM3 (orange); blue: H200, measured {committed_date()}")
    assert "H100 SXM's datasheet" in h100.ceiling_note and h100.roofs[0].bandwidth_gbs == 3350.0
    rows = {r[0]: r for r in h100.rows}
    assert rows["L1"][1] == "32x100x784 (live)" and rows["L1"][3] == "502\u00a0GFLOP/s"  # 2*32*100*784 / 10 µs
    assert rows["L1"][4] == f"{100 * 501.76e9 / (roofline_roof(32, 100, 784, 3350.0)):.0f}\u00a0%"
    other = lab_view("cuda.07_warptile", 32, CudaStatus(True, "", True, "NVIDIA GeForce GTX 1080"), layer_us)
    assert "not in the table of known cards" in other.ceiling_note and "measured here" in other.ceiling_note
    assert len(other.roofs) == 1 and other.roofs[0].peak_tflops is None


def test_another_networks_layers_are_its_own_gemms_never_the_shipped_figures() -> None:
    """An imported 784-64-32-10 network: its live rows are its own shapes and FLOPs, and with nothing
    run here the rows say not measured instead of the committed 784-100-100-10 figures."""
    from gemmpad.runtime.classifier import Timing
    from gemmpad.runtime.native import CudaStatus
    from gemmpad.ui.lab_panel import lab_view

    gpu = CudaStatus(True, "", True, "NVIDIA H100 80GB HBM3")
    sizes = (784, 64, 32, 10)
    live = lab_view("cuda.07_warptile", 32, gpu, (10.0, 4.0, 2.0), [Timing(20.0, 30.0, 32)] * 3, sizes=sizes)
    rows = {r[0]: r for r in live.rows}
    assert rows["L1"][1] == "32x64x784 (live)" and rows["L1"][3] == "321\u00a0GFLOP/s"  # 2*32*64*784 / 10 µs
    assert rows["L2"][1] == "32x32x64 (live)" and rows["L3"][1] == "32x10x32 (live)"
    flops = 2 * 32 * (784 * 64 + 64 * 32 + 32 * 10)
    assert rows["network"][3] == f"{flops / 20e-6 / 1e9:.3g}\u00a0GFLOP/s"
    assert [p.label for p in live.live][-1] == "whole 784-64-32-10 network, batch 32 (live)"
    idle = lab_view("cuda.07_warptile", 32, gpu, sizes=sizes)
    assert [r[3] for r in idle.rows[:4]] == ["not measured"] * 4
    shipped = lab_view("cuda.07_warptile", 32, gpu)  # the shipped network: the committed figures where there are some
    assert [r[1] for r in shipped.rows[:3]] == ["32x100x784", "32x100x100", "32x10x100"]


def roofline_roof(m: int, n: int, k: int, bandwidth_gbs: float) -> float:
    from gemmpad.bench import roofline

    return roofline.roof(roofline.intensity(m, n, k, "fp32"), bandwidth_gbs, 67.0)


def test_anatomy_cells_read_whatever_form_the_registry_gives() -> None:
    from gemmpad.ui.lab_panel import _cell

    assert _cell("grid", {"x": 32, "y": 16, "z": 1}) == "32×16×1" and _cell("block_tile", (128, 256, 64)) == "128×256×64"
    assert _cell("occupancy", 0.25) == "25\u00a0%" == _cell("occupancy", 25)
    assert _cell("shared_bytes_per_block", 512) == "512\u00a0B" and _cell("shared_bytes_per_block", 49152) == "48.0\u00a0KiB"
    assert _cell("kernel", "gemm_warptile<128, 128>") == "gemm_warptile<128, 128>" and _cell("warp_tile", None) == NOT_RECORDED


def test_the_rung_before_is_a_rung_never_a_dispatcher() -> None:
    """The cuda.auto_* dispatchers sit in the registry beside the rungs; 'what changed' names the
    rung below (07 builds on 06), and a dispatcher says it is one."""
    from gemmpad.ui.lab_panel import changed_line, rung_before

    assert rung_before("cuda.07_warptile") == "cuda.06_vectorized"
    assert rung_before("cuda.auto_fp32") is None
    assert changed_line("cuda.07_warptile").startswith("After cuda.06_vectorized: ")
    assert changed_line("cuda.auto_fp32").startswith("A dispatcher, not a rung: ")
