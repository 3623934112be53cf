"""What is wrong with the window's layout at one size: the check the layout tests share, in
this process (scale 1) and in a child process per UI scale (`python -m tests.ui.layout_check
[--lab] SCALE WxH ...` prints one JSON list of problems per size, --lab with the Lab tab open; Dear PyGui has one context per
process, and fonts are built for one scale)."""

from __future__ import annotations

import json
import sys

import dearpygui.dearpygui as dpg

from gemmpad.ui import harness

LEAVES = {"mvText", "mvButton", "mvImage", "mvImageButton", "mvPlot", "mvCombo", "mvSliderFloat", "mvCheckbox",
          "mvProgressBar", "mvSelectable", "mvTab"}
SKIP = {"mvTooltip", "mvPopup", "mvSpacer", "mvTableColumn"}


def _kind(item: int | str) -> str:
    return dpg.get_item_type(item).rsplit(":", 1)[-1]


def leaves(root: int | str) -> list[int | str]:
    """The shown widgets under `root` (a plot counts as one)."""
    out: list[int | str] = []
    for child in dpg.get_item_children(root, 1) or []:
        kind = _kind(child)
        if kind in SKIP or not dpg.is_item_shown(child):
            continue
        if kind in LEAVES:
            out.append(child)
        else:
            out.extend(leaves(child))
    return out


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]) > 1 and min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]) > 1


def region_rect(item: int | str) -> tuple[int, int, int, int]:
    """A child window's rectangle in window pixels. Dear PyGui reports a child window's
    position within the window holding it (its content, unscrolled): add up the chain."""
    x, y = dpg.get_item_pos(item)
    w, h = dpg.get_item_state(item)["rect_size"]
    parent = dpg.get_item_parent(item)
    while parent is not None and _kind(parent) not in ("mvChildWindow", "mvWindowAppItem"):
        parent = dpg.get_item_parent(parent)
    if parent is not None and _kind(parent) == "mvChildWindow":
        px, py, _, _ = region_rect(parent)
        sx, sy = dpg.get_item_state(parent)["scroll_pos"]
        x, y = px + x - sx, py + y - sy
    elif parent is not None:
        sx, sy = dpg.get_item_state(parent).get("scroll_pos", (0, 0))
        x, y = x - sx, y - sy
    return int(x), int(y), int(w), int(h)


def _clip(r: tuple[int, int, int, int], box: tuple[int, int, int, int]) -> tuple[int, int, int, int] | None:
    """What of `r` a scrolling region `box` shows (None: nothing)."""
    x0, y0 = max(r[0], box[0]), max(r[1], box[1])
    x1, y1 = min(r[0] + r[2], box[0] + box[2]), min(r[1] + r[3], box[1] + box[3])
    return (x0, y0, x1 - x0, y1 - y0) if x1 > x0 and y1 > y0 else None


def scrolled_to_reading(app: object) -> tuple[int, int]:
    """In one column: scroll the window until the prediction panel's digit is at its top, as far as it
    scrolls, and return where the digit's top and the probabilities' bottom then are (window pixels);
    scrolled back after. A few hops: the panels below the fold take their height only once in sight (a
    frame or two after), so how far the window scrolls grows as it does."""
    pad = round(14 * app.scale)  # the window's padding
    for _ in range(8):
        now = dpg.get_y_scroll(app._root)
        want = max(0.0, min(now + harness.rect(app.pred.digit)[1] - pad, dpg.get_y_scroll_max(app._root)))
        if abs(want - now) <= 1:
            break
        dpg.set_y_scroll(app._root, float(want))
        for _ in range(5):  # the scroll, the panels' new height, then how far the window scrolls
            app.step()
    digit, bars = harness.rect(app.pred.digit), harness.rect(app.pred.bars_plot)
    dpg.set_y_scroll(app._root, 0.0)
    for _ in range(3):
        app.step()
    return digit[1], bars[1] + bars[3]


def problems(app: object, size: tuple[int, int], frames: int = 6) -> list[str]:
    """Resize the window to `size` and list what is wrong: a floating window over the panels,
    widgets of two panels overlapping, a widget cut by the window's edge (or, where nothing
    scrolls, by its bottom), no reading in sight, the digit read and its probabilities not in sight
    together when scrolled to (where the window says they fit), the canvas hint wider than the canvas."""
    dpg.set_viewport_width(size[0])
    dpg.set_viewport_height(size[1])
    for _ in range(frames):
        app.step()
    vw, vh = dpg.get_viewport_client_width(), dpg.get_viewport_client_height()
    L = app.layout
    at = f"at {vw}x{vh} scale {app.scale}"
    out: list[str] = []
    for item in dpg.get_all_items():
        if _kind(item) == "mvWindowAppItem" and dpg.is_item_shown(item) and item not in (app._root, app.help.root):
            out.append(f"a floating window {dpg.get_item_label(item)!r} {at}")
    panels = {"draw": app.draw.root, "prediction": app.pred.root, "engine": app.engine.root,
              "status": app.status.root}
    learn = set(leaves(app.learn.root))
    lab = set(leaves(app.engine.lab_region))
    # widgets in a scrolling region show only inside it (scrolled away they are clipped, not cut)
    regions = {"learn": region_rect(app.learn.root), "right": region_rect(app._right),
               "lab": region_rect(app.engine.lab_region)}
    rects: dict[str, list[tuple[str, tuple[int, int, int, int]]]] = {}
    for panel, root in panels.items():
        edge = region_rect(root)
        edge_right = edge[0] + edge[2]  # a panel clips what reaches past its side
        for item in leaves(root):
            if not dpg.is_item_visible(item):
                continue
            r = harness.rect(item)
            region = "learn" if item in learn else "lab" if item in lab and L.mode == "wide" \
                else "right" if panel in ("prediction", "engine") and L.mode == "two" else None
            if region is not None:
                shown = _clip(r, regions[region])
                if shown is None:
                    continue
                if shown[2] == r[2]:
                    r = shown  # scrolled vertically; a cut by the side is still a cut
            words = dpg.get_value(item) if _kind(item) == "mvText" else dpg.get_item_label(item)
            name = f"{panel}:{_kind(item)}:{str(words)[:30]!r}"
            right = min(vw, edge_right, regions[region][0] + regions[region][2] if region is not None else vw)
            if r[0] < 0 or r[0] + r[2] > right:
                out.append(f"{name} {r} is cut by the window's side {at}")
            if L.mode == "wide" and item not in learn | lab and (r[1] < 0 or r[1] + r[3] > vh):
                out.append(f"{name} {r} is cut by the window's bottom {at}")
            rects.setdefault(panel, []).append((name, r))
    names = list(rects)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for na, ra in rects[a]:
                for nb, rb in rects[b]:
                    if _overlap(ra, rb):
                        out.append(f"{na} {ra} overlaps {nb} {rb} {at}")
    if L.mode == "wide":  # side by side, the prediction panel shows whole: the hidden layers too
        hidden = [(dpg.get_value(i) if _kind(i) == "mvText" else _kind(i), harness.rect(i)) for i in leaves(app.pred.root)
                  if not dpg.is_item_visible(i)]
        if hidden:
            out.append(f"prediction widgets out of sight (scrolled away) {hidden} {at}")
    reading = app.draw.reading if L.mode == "one" else app.pred.digit
    r = harness.rect(reading)
    if app.state.reading.prediction is not None and not (dpg.is_item_shown(reading) and 0 <= r[1] and r[1] + r[3] <= vh
                                           and r[0] + r[2] <= vw):
        out.append(f"the reading is out of sight {r} {at}")
    if L.mode == "one" and L.reading_fits and app.state.reading.prediction is not None:
        top, bottom = scrolled_to_reading(app)
        if top < 0 or bottom > vh:
            out.append(f"the digit read ({top}) and its probabilities (to {bottom}) do not show together {at}")
    if app.canvas.empty:
        hint, canvas = harness.rect(app.draw.hint), harness.rect(app.draw.image)
        if _clip(hint, canvas) != hint:
            out.append(f"the canvas hint {hint} does not fit the canvas {canvas} {at}")
    return out


def main(argv: list[str]) -> int:
    from pathlib import Path
    from tempfile import TemporaryDirectory

    from gemmpad.runtime.classifier import Classifier
    from gemmpad.ui.window import App
    from tests.ui.support import BASE, window_model

    from gemmpad.inputs import strokes
    from tests.ui.support import seven, show_lab

    lab = argv[0] == "--lab"  # the Lab tab open (its roofline and tables checked too)
    argv = argv[1:] if lab else argv
    scale = float(argv[0])
    with TemporaryDirectory() as tmp:
        for i, digit in enumerate([1, 3, 3, 5, 7, 8, 9, 9, 2, 4, 0, 6]):  # a dozen corrections to list
            strokes.save(Path(tmp) / str(digit) / f"{i}.json", seven(), [18.0, 18.0], strokes.CANVAS)
        app = App(Classifier(window_model(), backend=BASE), drawings_dir=Path(tmp), vsync=False, scale=scale)
        try:
            app.step()
            if lab:
                show_lab(app)
            for i, spec in enumerate(argv[1:]):
                if i == 2:  # the first two sizes with the canvas empty (its hint), the rest with a drawing
                    harness.replay(app, seven())
                    harness.settle(app)
                w, h = (int(v) for v in spec.split("x"))
                print(json.dumps(problems(app, (w, h))), flush=True)
        finally:
            app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
