"""Driven by tests/ui/test_ui_learn.py in a process of its own (Dear PyGui allows one window per
process, and test_ui.py's session keeps one open): a real window under Xvfb, corrected and
taught, printing one JSON line of what it saw.

    python -m tests.ui.ui_learn_script HOME_DIR PENDIGITS_FILE

The writer's drawings come from PENDIGITS_FILE, read here by the script; the window itself is
given no data folder at all (the test points every data variable at empty folders), so its
Learn runs on what the package ships.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import dearpygui.dearpygui as dpg

from gemmpad.bench.learn import cells
from gemmpad.runtime import unsure
from gemmpad.runtime.classifier import Classifier
from gemmpad.runtime.model import default_model_path, load_model
from gemmpad.ui import harness
from gemmpad.ui.window import App
from tests.finetune_data import SMALL_REPLAY
from tests.pendigits_data import unseen_writers


def main(home: Path, pendigits_path: Path) -> dict:
    shipped = default_model_path()
    md5 = hashlib.md5(shipped.read_bytes()).hexdigest()
    model = load_model()
    unseen, _ = unseen_writers(set(model.trained_writers), pendigits_path)
    cell = cells(model, unseen, ["brush-18px-280"], 0.9, 6)[0]  # the 6th misread sample is the second drawing
    fixes, second = cell.corrections[:5], cell.corrections[5]
    app = App(Classifier(None, backend="numpy"), drawings_dir=home / "drawings", vsync=False)
    app.learn.learner.replay_rows = SMALL_REPLAY  # the plumbing is tested here; test_finetune measures learning
    out: dict = {"writer": cell.writer, "digit": cell.digit, "read_before": [], "shipped_md5": md5}
    try:
        app.step()

        def read(example) -> int:
            app.clear()
            harness.replay(app, example.drawing.strokes)
            harness.settle(app)
            return app.state.reading.prediction.digit

        for i, e in enumerate(fixes):
            out["read_before"].append(read(e))
            if i == 0:
                app.pred.on_bar_click(cell.digit)  # a click on the digit's bar
            else:
                app.shortcut(getattr(dpg, f"mvKey_{cell.digit}"))  # its key
        out["saved"] = sorted(p.name for p in (home / "drawings" / str(cell.digit)).glob("*.json"))
        out["second_before"] = read(second)
        app.shortcut(dpg.mvKey_L)
        frames, t0 = [], time.perf_counter()
        while app.learn.learner.running or app.learn.outcome is None:
            t = time.perf_counter()
            app.step()
            frames.append(time.perf_counter() - t)
            if time.perf_counter() - t0 > 600:
                raise TimeoutError("Learn did not finish in 600 s")
        out["frames_while_learning"] = len(frames)
        out["slowest_frame_s"] = max(frames)
        out["accepted"] = app.learn.outcome.accepted
        if not app.learn.outcome.accepted:
            app.learn.insist()  # "Use it anyway"
        out["figures"] = app.learn.figures
        out["second_after"] = read(second)
        out["personal_exists"] = (home / "personal-model.npz").exists()
        out["model_line"] = dpg.get_value(app.engine.model_text)
        out["detector_after"] = _detector(app)
        personal, _ = unsure.for_model(load_model(home / "personal-model.npz"))  # what the next start finds
        out["detector_next_start"] = personal is not None and personal.model_sha256 == out["detector_after"]["sha256"]
        app.learn.reset()
        out["detector_after_reset"] = _detector(app)
        out["second_after_reset"] = read(second)
        out["personal_after_reset"] = (home / "personal-model.npz").exists()
        out["previous_kept"] = all((home / f"personal-model.previous{s}").exists() for s in (".npz", ".unsure.json"))
        out["shipped_md5_after"] = hashlib.md5(shipped.read_bytes()).hexdigest()
        out["help_mentions_folder"] = str(home / "drawings") in json.dumps(
            [dpg.get_value(t) for t in app.help.texts])
    finally:
        app.close()
    return out


def _detector(app: App) -> dict:
    """The unsure detector the window reads with now: whose weights it belongs to, and its tooltip."""
    det = app.detector
    return {"sha256": det.model_sha256 if det else None, "model_sha256": unsure.fingerprint(app._model),
            "tooltip": dpg.get_value(app.pred._digit_tip)}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]))), flush=True)
