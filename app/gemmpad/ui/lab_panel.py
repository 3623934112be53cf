"""The Lab tab: why the selected rung is as fast as it is.

A roofline (log-log: achieved FLOP/s against FLOPs per byte moved) with the device's
ceilings, this rung's points at the MLP's layer shapes at the current batch and at the 4096³
reference, the other rungs faint beside it; under it the rung's anatomy (tiles, threads,
registers, shared memory, occupancy) from `registry.anatomy`, and what changed from the rung
before. With a GPU the ceilings are its card's and the live points its own; without one the
committed H200 figures are shown, labelled so. `lab_view` decides every word and number
(tested without a window); LabPanel only draws it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dearpygui.dearpygui as dpg
import numpy as np

from gemmpad.runtime import registry
from gemmpad.bench import roofline
from gemmpad.runtime.classifier import Timing
from gemmpad.errors import GemmpadError
from gemmpad.runtime.native import CudaStatus
from gemmpad.bench.roofline import Point
from gemmpad.ui import style
from gemmpad.ui.draw_panel import tip
from gemmpad.ui.style import Fonts
from gemmpad.ui.text import NBSP

# registry.anatomy's keys, in the order the table shows them, with their labels
ANATOMY = (("block_tile", "block tile"), ("warp_tile", "warp tile"), ("thread_tile", "thread tile"),
           ("threads_per_block", "threads / block"), ("registers_per_thread", "registers / thread"),
           ("shared_bytes_per_block", "shared memory / block"), ("max_active_blocks_per_sm", "blocks / SM"),
           ("occupancy", "occupancy"), ("grid", "grid"), ("kernel", "kernel launched"))
NOT_RECORDED = "not recorded"
LAB_PLOT_H = 280
LAYERS = ("L1", "L2", "L3")


@dataclass(frozen=True)
class Roof:
    """One ceiling: the memory roof (peak None) or a precision's compute roof."""

    label: str
    bandwidth_gbs: float
    peak_tflops: float | None = None
    own: bool = False  # the selected rung's precision (drawn bright)


@dataclass(frozen=True)
class LabView:
    title: str  # "cuda.07_warptile at batch 32"
    source: str  # where the figures come from: live on this GPU, or the committed run
    roofs: list[Roof]
    ceiling_note: str  # where the ceilings come from
    this: list[Point]  # the rung's points (committed and live)
    live: list[Point]
    others: list[Point]  # every other rung of the device, faint
    rows: list[tuple[str, str, str, str, str]]  # what, shape, FLOP/byte, achieved, share of the roof
    missing: str  # why some rows are not measured, and where figures are
    anatomy: list[tuple[str, str, str]]  # label, at layer 1 of the batch, at 4096³
    anatomy_note: str
    changed: str  # one line: what this rung changed from the one before
    x_range: tuple[float, float] = (0.1, 1e4)
    y_range: tuple[float, float] = (1e8, 1e16)


def fmt_flops(v: float) -> str:
    """FLOP/s in the unit that suits it, to three significant digits without trailing zeros:
    "974 GFLOP/s", "46.4 TFLOP/s", "19 TFLOP/s", "1.2 PFLOP/s"."""
    for scale, unit in ((1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s")):
        if v >= scale:
            x = v / scale
            return f"{x:.3g}{NBSP}{unit}" if x < 1000 else f"{x:,.0f}{NBSP}{unit}"
    return f"{v:.3g}{NBSP}FLOP/s"


def _short(device: str) -> str:
    """ "NVIDIA H200" -> "H200"."""
    return device.removeprefix("NVIDIA ").strip() or "the GPU"


def _number(kernel: str) -> int | None:
    m = re.match(r"\w+\.(\d+)_", kernel)
    return int(m.group(1)) if m else None


def rung_before(kernel: str) -> str | None:
    """The rung this one builds on: the last of the same device with a lower number."""
    n = _number(kernel)
    if n is None:
        return None
    device = kernel.split(".", 1)[0]
    earlier = [s.name for s in registry.kernels(device=device, kind="gemm")  # rungs only: no cuda.auto_*
               if (m := _number(s.name)) is not None and m < n]
    return earlier[-1] if earlier else None


def changed_line(kernel: str) -> str:
    """What the rung's header says it changed, from the registry's summary (the kernel manifest's
    without the CUDA module)."""
    if kernel == "numpy":
        return "NumPy's matmul (BLAS): the reference, not a rung."
    try:
        spec = registry.get(kernel)
    except GemmpadError:
        return ""
    if spec.kind == "mlp":
        return f"Whole network in one call: {spec.summary}"
    if _number(kernel) is None:
        return f"A dispatcher, not a rung: {spec.summary}"
    before = rung_before(kernel)
    return f"After {before}: {spec.summary}" if before else f"The first rung: {spec.summary}"


def _cell(key: str, value: object) -> str:
    """An anatomy value as the table shows it."""
    if value is None:
        return NOT_RECORDED
    if isinstance(value, dict):  # a grid or tile given by axis ({"x": 32, "y": 32, "z": 1})
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return "×".join(str(v) for v in value)
    if key == "occupancy" and isinstance(value, (int, float)):  # a share of the SM's warps (or a percent)
        return f"{float(value) if value > 1 else 100 * float(value):.0f}{NBSP}%"
    if key == "shared_bytes_per_block" and isinstance(value, (int, float)):
        return f"{value / 1024:.1f}{NBSP}KiB" if value >= 1024 else f"{int(value)}{NBSP}B"
    return str(value)


def _committed_anatomy(kernel: str, shape: tuple[int, int, int]) -> dict[str, Any] | None:
    """The committed (H200) anatomy of `kernel` from the kernel manifest's "anatomy" section,
    at `shape` when it is kept by shape; None when the manifest has none."""
    try:
        entry = next((k for k in registry._manifest().get("kernels", []) if k.get("name") == kernel), None)
    except (OSError, ValueError):
        return None
    found = entry.get("anatomy") if isinstance(entry, dict) else None
    if not isinstance(found, dict):
        return None
    if any(key in found for key, _ in ANATOMY):
        return found
    by_shape = found.get("x".join(map(str, shape)))
    return by_shape if isinstance(by_shape, dict) else None


def anatomy(kernel: str, shape: tuple[int, int, int]) -> tuple[dict[str, Any] | None, str]:
    """(registry.anatomy's answer or the committed one, a note when neither says)."""
    ask = getattr(registry, "anatomy", None)
    note = ""
    if ask is not None:
        try:
            return ask(kernel, *shape), ""
        except GemmpadError as exc:  # a rung that cannot say (no GPU, a CPU rung)
            note = str(exc)
    committed = _committed_anatomy(kernel, shape)
    if committed is not None:
        return committed, ""
    return None, note or "this install does not record kernel anatomy"


def lab_view(kernel: str, batch: int, gpu: CudaStatus, layer_us: tuple[float, ...] = (),
             history: list[Timing] | None = None, figures: dict[str, Any] | None = None,
             sizes: tuple[int, ...] = roofline.SHIPPED_SIZES) -> LabView:
    """Everything the Lab tab shows for `kernel` at `batch`: live figures where this machine ran
    it (`layer_us`, `history`), else the committed ones (`figures`: lab_figures.json). `sizes`: the
    network's widths (an imported one's layers are other GEMMs; the committed figures are the
    shipped network's, so its rows then show only what ran here)."""
    figures = roofline.committed() if figures is None else figures
    device = kernel.split(".", 1)[0] if "." in kernel else "cpu"
    precision = "fp32"
    kind = "mlp" if kernel == "numpy" else "gemm"
    try:
        spec = registry.get(kernel)
        precision, kind = spec.precision, spec.kind
    except GemmpadError:
        pass
    date, where = figures.get("date", ""), figures.get("device", "")
    committed = roofline.committed_points(figures, device)
    this = [p for p in committed if p.kernel == kernel]
    others = [p for p in committed if p.kernel != kernel]

    live: list[Point] = []
    if len(layer_us) == 3 and all(t > 0 for t in layer_us):
        live = [roofline.gemm_point(kernel, precision, *shape, t / 1e6)
                for shape, t in zip(roofline.layer_shapes(batch, sizes), layer_us)]
    if history:
        median = float(np.median([t.kernel_us for t in history]))
        if median > 0:
            live.append(roofline.mlp_point(kernel, precision, batch, median / 1e6, sizes))
    live = [Point(p.kernel, p.precision, p.x, p.y, p.label + " (live)") for p in live]

    on_gpu = device == "cuda" and gpu.available
    if device == "cuda":
        card = roofline.card_for(gpu.device if on_gpu else where)
        committed_run = f"{_short(where)}, measured {date} (committed)" if where else "no committed figures"
        source = f"Live on this {_short(gpu.device)} (orange); blue: {committed_run}" if on_gpu else committed_run
    else:
        card = None
        host = figures.get("cpu", "")
        source = "Live on this machine's CPU (orange)" + (f"; blue: {host}, measured {date} (committed)"
                                                          if host and date else "")
    if card is not None:
        roofs = [Roof(f"memory {card.bandwidth_gbs / 1000:g} TB/s", card.bandwidth_gbs)]
        alike: dict[float, list[str]] = {}  # precisions of one peak share a line (fp16 and bf16)
        for p, peak in card.peak_tflops.items():
            alike.setdefault(peak, []).append(p)
        roofs += [Roof(f"{'/'.join(ps)} {peak:g} TFLOP/s", card.bandwidth_gbs, peak, precision in ps)
                  for peak, ps in alike.items()]
        peaks = "; ".join(r.label for r in roofs[1:])
        ceiling_note = (f"Ceilings from the {card.name}'s datasheet ({card.source}), dense: {roofs[0].label}; "
                        f"{peaks} (this rung's {precision} in green).")
    else:
        # this machine's own points where there are some (the committed run was another machine's)
        measured = roofline.best_bandwidth_gbs(live) or roofline.best_bandwidth_gbs(this + others)
        where_measured = "here" if roofline.best_bandwidth_gbs(live) else "in the committed run"
        roofs = [Roof(f"best measured {measured:,.0f} GB/s", measured)] if measured else []
        what = "this GPU is not in the table of known cards" if device == "cuda" else "a CPU has no datasheet table here"
        ceiling_note = (f"Ceilings: {what}; the line is the best bandwidth measured {where_measured} (least bytes "
                        "over time), a floor under the real one." if measured else
                        f"Ceilings: {what}, and nothing was measured yet.")

    def find(label: str) -> Point | None:
        for p in live + this:
            if p.label.removesuffix(" (live)") == label:
                return p
        return None

    def share(p: Point) -> str:
        peaks = [r for r in roofs if r.peak_tflops is not None and r.own]
        bw = roofs[0].bandwidth_gbs if roofs else None
        if bw is None:
            return "—"
        top = roofline.roof(p.x, bw, peaks[0].peak_tflops) if peaks else p.x * bw * 1e9
        return f"{100 * p.y / top:.0f}{NBSP}%"

    rows: list[tuple[str, str, str, str, str]] = []
    wanted = [] if kind == "mlp" else [(name, "x".join(map(str, shape)))
                                       for name, shape in zip(LAYERS, roofline.layer_shapes(batch, sizes))]
    wanted += [("network", roofline.mlp_label(batch, sizes))]
    if device == "cuda" and kind == "gemm":
        wanted += [("4096³", "x".join(map(str, roofline.REFERENCE_SHAPE)))]
    for name, label in wanted:
        p = find(label)
        shape = label if "x" in label else "fused" if kind == "mlp" else "three layers"
        if p is None:
            rows.append((name, shape, "", "not measured", ""))
        else:
            rows.append((name, shape + (" (live)" if p in live else ""), f"{p.x:.3g}", fmt_flops(p.y), share(p)))

    benched = sorted({int(p.label.split("x")[0]) for p in this if p.label.split("x")[1:] in
                      [[str(n), str(k)] for _, n, k in roofline.layer_shapes(batch, sizes)]} |
                     {int(p.label.rsplit(" ", 1)[1]) for p in this if p.label.startswith("whole network")})
    if any(r[3] == "not measured" for r in rows) and benched:
        missing = f"Committed figures at batch {', '.join(map(str, benched))} (on the plot): pick one of those " \
                  "batches to read them here."
    elif any(r[3] == "not measured" for r in rows):
        missing = "Not measured: nothing committed for this rung at these shapes; run it here to see it live."
    else:
        missing = ""
    anat: list[tuple[str, str, str]] = []
    note = "" if device == "cuda" else f"Anatomy: {'NumPy calls BLAS' if kernel == 'numpy' else 'a CPU rung'}; " \
                                         "the tiles and occupancy of a CUDA rung show here."
    if device == "cuda":
        at_layer, note1 = anatomy(kernel, roofline.layer_shapes(batch, sizes)[0])
        at_ref, note2 = anatomy(kernel, roofline.REFERENCE_SHAPE)
        anat = [(label, _cell(key, (at_layer or {}).get(key)), _cell(key, (at_ref or {}).get(key)))
                for key, label in ANATOMY]
        if at_layer is None and at_ref is None:
            note = f"Anatomy {NOT_RECORDED}: {note1 or note2}."
    pts = this + others + live
    xs = [p.x for p in pts] + [r.bandwidth_gbs and roofline.ridge(r.bandwidth_gbs, r.peak_tflops)
                                 for r in roofs if r.peak_tflops]
    ys = [p.y for p in pts] + [r.peak_tflops * 1e12 for r in roofs if r.peak_tflops]
    x_range = (min(xs, default=1.0) / 3, max(xs, default=100.0) * 3)
    y_range = (min(ys, default=1e9) / 3, max(ys, default=1e12) * 3)
    return LabView(f"{kernel} at batch {batch}", source, roofs, ceiling_note, this, live, others, rows, missing,
                   anat, note, changed_line(kernel), x_range, y_range)


def decade_ticks(lo: float, hi: float, fmt: Any) -> tuple[tuple[str, float], ...]:
    """A tick on every power of ten between lo and hi, labelled by `fmt`."""
    return tuple((fmt(10.0**e), 10.0**e) for e in range(int(np.ceil(np.log10(lo))), int(np.floor(np.log10(hi))) + 1))


def _text_theme(colour: style.RGB) -> int | str:
    """Text in `colour` (a plot annotation's label)."""
    with dpg.theme() as theme:
        with dpg.theme_component(dpg.mvAll):
            dpg.add_theme_color(dpg.mvThemeCol_Text, style.rgba(colour))
    return theme


class LabPanel:
    """The Lab tab's widgets; show() redraws them from a LabView when it changed."""

    def __init__(self, fonts: Fonts, scale: float, rungs: list[str], pick: Callable[[str], None]) -> None:
        self.fonts, self.scale = fonts, scale
        self._shown: LabView | None = None
        s = scale
        with dpg.group(horizontal=True):
            dpg.add_text("Rung", color=style.MUTED)
            # every rung, those this machine cannot run too: their committed figures show
            self.rung = dpg.add_combo(rungs, width=-1, callback=lambda sender, v: pick(str(v)))
        tip(self.rung, "The kernel the lab shows: the engine's own until you pick another here (any rung, also "
                       "those this machine cannot run: their committed figures show). Picking a kernel above "
                       "brings the lab back to it.")
        self.title = dpg.add_text("", wrap=0)
        self.source = dpg.add_text("", color=style.MUTED, wrap=0)
        dpg.bind_item_font(self.source, fonts.small)
        with dpg.plot(height=round(LAB_PLOT_H * s), width=-1, no_title=True, no_menus=True, no_box_select=True,
                      no_mouse_pos=True, no_inputs=True) as self.plot:
            dpg.add_plot_legend(location=dpg.mvPlot_Location_SouthEast, no_buttons=True)
            self.x_axis = dpg.add_plot_axis(dpg.mvXAxis, label="FLOPs per byte moved (log)", no_menus=True,
                                            scale=dpg.mvPlotScale_Log10)
            self.y_axis = dpg.add_plot_axis(dpg.mvYAxis, label="FLOP/s (log)", no_menus=True,
                                            scale=dpg.mvPlotScale_Log10)
        tip(self.title, "The roofline: a kernel is held down by memory (under the sloped line: it moves too many "
                        "bytes for its work) or by the arithmetic units (under the flat line of its precision). "
                        "Points: this rung at the MLP's layer shapes and at 4096³; grey: the other rungs.")
        self.ceilings = dpg.add_text("", color=style.MUTED, wrap=0)
        dpg.bind_item_font(self.ceilings, fonts.small)
        with dpg.table(header_row=True, policy=dpg.mvTable_SizingStretchProp, borders_innerH=False,
                       borders_outerH=False, borders_innerV=False, borders_outerV=False) as self.points_table:
            for label, weight in (("", 0.7), ("shape", 1.6), ("FLOP/B", 0.7), ("achieved", 1.2), ("of roof", 0.7)):
                dpg.add_table_column(label=label, init_width_or_weight=weight)
            self.point_cells = []
            for _ in range(5):
                with dpg.table_row() as row:
                    self.point_cells.append((row, [dpg.add_text("") for _ in range(5)]))
        self.missing = dpg.add_text("", color=style.MUTED, wrap=0)
        dpg.bind_item_font(self.missing, fonts.small)
        self.changed = dpg.add_text("", color=style.MUTED, wrap=0)
        dpg.bind_item_font(self.changed, fonts.small)
        with dpg.table(header_row=True, policy=dpg.mvTable_SizingStretchProp, borders_innerH=False,
                       borders_outerH=False, borders_innerV=False, borders_outerV=False) as self.anatomy_table:
            for label, weight in (("anatomy", 1.3), ("layer 1", 1.0), ("4096³", 1.0)):
                dpg.add_table_column(label=label, init_width_or_weight=weight)
            self.anatomy_cells = []
            for _ in ANATOMY:
                with dpg.table_row():
                    self.anatomy_cells.append([dpg.add_text("") for _ in range(3)])
        self.anatomy_note = dpg.add_text("", color=style.MUTED, wrap=0)
        dpg.bind_item_font(self.anatomy_note, fonts.small)
        self._series: list[int | str] = []
        self._annotation_themes = {own: _text_theme(style.GOOD if own else style.MUTED) for own in (False, True)}
        self._themes = {
            "other": style.series_theme(dpg.mvScatterSeries, style.BAR, markers=True),
            "this": style.series_theme(dpg.mvScatterSeries, style.ACCENT, markers=True),
            "live": style.series_theme(dpg.mvScatterSeries, style.WARM, markers=True),
            "roof": style.series_theme(dpg.mvLineSeries, style.MUTED),
            "own": style.series_theme(dpg.mvLineSeries, style.GOOD),
        }

    def layout(self, width: int) -> None:
        for item in (self.title, self.source, self.ceilings, self.missing, self.changed, self.anatomy_note):
            dpg.configure_item(item, wrap=width)

    def show(self, view: LabView, rung: str) -> None:
        dpg.set_value(self.rung, rung)
        if view == self._shown:
            return
        self._shown = view
        dpg.set_value(self.title, view.title)
        dpg.set_value(self.source, view.source)
        dpg.set_value(self.ceilings, view.ceiling_note)
        dpg.set_value(self.changed, view.changed)
        dpg.set_value(self.missing, view.missing)
        dpg.configure_item(self.missing, show=bool(view.missing))
        dpg.configure_item(self.anatomy_table, show=bool(view.anatomy))
        for (row, cells), values in zip(self.point_cells, view.rows + [("",) * 5] * 5):
            dpg.configure_item(row, show=any(values))
            for cell, v in zip(cells, values):
                dpg.set_value(cell, v)
        for cells, values in zip(self.anatomy_cells, view.anatomy):
            for cell, v in zip(cells, values):
                dpg.set_value(cell, v)
                dpg.configure_item(cell, color=style.MUTED if v == NOT_RECORDED else style.TEXT)
        dpg.set_value(self.anatomy_note, view.anatomy_note)
        dpg.configure_item(self.anatomy_note, show=bool(view.anatomy_note))
        self._plot(view)

    def _plot(self, view: LabView) -> None:
        for item in self._series:
            dpg.delete_item(item)
        self._series = []
        (x0, x1), (y0, y1) = view.x_range, view.y_range

        def line(xs: list[float], ys: list[float], label: str, theme: str) -> None:
            """A ceiling; the memory roof and this rung's precision labelled on the plot (a legend of eight
            lines covered the points)."""
            item = dpg.add_line_series(xs, ys, label=f"##{label}", parent=self.y_axis)
            dpg.bind_item_theme(item, self._themes[theme])
            self._series.append(item)
            if theme == "roof" and ys[0] == ys[-1]:
                return  # the other precisions' roofs, close together on a log scale: named in the note below
            colour = style.GOOD if theme == "own" else style.MUTED
            # a flat roof's label where it starts (the knees differ, so the labels do not pile up);
            # the memory roof's half way up its slope
            at = (xs[0], ys[0]) if ys[0] == ys[-1] else (float(np.sqrt(xs[0] * xs[-1])), float(np.sqrt(ys[0] * ys[-1])))
            note = dpg.add_plot_annotation(label=label, default_value=at, offset=(4, -8) if ys[0] == ys[-1] else (-4, -8),
                                           color=style.rgba(style.BG, 160), clamped=True, parent=self.plot)
            dpg.bind_item_theme(note, self._annotation_themes[colour == style.GOOD])
            self._series.append(note)

        def scatter(points: list[Point], label: str, theme: str) -> None:
            if points:
                item = dpg.add_scatter_series([p.x for p in points], [p.y for p in points], label=label,
                                              parent=self.y_axis)
                dpg.bind_item_theme(item, self._themes[theme])
                self._series.append(item)

        for r in view.roofs:
            if r.peak_tflops is None:
                top = max((q.peak_tflops or 0) for q in view.roofs) * 1e12 or y1
                line([x0, min(x1, top / (r.bandwidth_gbs * 1e9))], [x0 * r.bandwidth_gbs * 1e9,
                     min(top, x1 * r.bandwidth_gbs * 1e9)], r.label, "roof")
            else:
                knee = roofline.ridge(r.bandwidth_gbs, r.peak_tflops)
                if knee < x1:
                    line([max(knee, x0), x1], [r.peak_tflops * 1e12] * 2, r.label, "own" if r.own else "roof")
        scatter(view.others, "other rungs", "other")
        scatter(view.this, view.title.split(" ", 1)[0], "this")
        scatter(view.live, "live", "live")
        dpg.set_axis_limits(self.x_axis, x0, x1)
        dpg.set_axis_limits(self.y_axis, y0, y1)
        dpg.set_axis_ticks(self.x_axis, decade_ticks(x0, x1, lambda v: f"{v:g}"))
        dpg.set_axis_ticks(self.y_axis, decade_ticks(y0, y1, fmt_flops))
