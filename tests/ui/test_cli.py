"""`gemmpad app` run as a user would: --replay, --screenshot, --exit, bad arguments and files."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gemmpad.inputs import strokes
from tests.ui.support import BASE, HAVE_MODEL, at_canvas_size, env, seven, window_model


def run_app(display: str, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`gemmpad app ARGS` in a subprocess on `display` (with random weights saved in `folder`
    when no model ships)."""
    if not HAVE_MODEL:
        window_model().save(folder / "random-mlp.npz")
        args = (*args, "--model", str(folder / "random-mlp.npz"))
    return subprocess.run([sys.executable, "-m", "gemmpad", "app", *args], env=env(display),
                          capture_output=True, text=True, timeout=120)


def test_replay_screenshot_exit(display: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    from PIL import Image

    from gemmpad.ui import style

    out = tmp_path_factory.getbasetemp() / "screenshots"
    out.mkdir(exist_ok=True)
    drawing = seven()
    widths = [24.0, 12.0]  # the replay draws each stroke at its recorded width
    painted = strokes.Drawing(drawing, widths).render()
    replay = out / "seven.json"
    strokes.save(replay, drawing, widths)
    png = out / "replay-seven.png"
    record = out / "recorded.json"
    t0 = time.perf_counter()
    proc = run_app(display, out, "--replay", str(replay), "--backend", BASE, "--screenshot", str(png), "--exit",
                   "--no-vsync", "--record", str(record))
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    result = json.loads(line)
    print(f"screenshot: {png}\nreplay wall {wall:.2f} s; {line}")
    assert result["backend"] == BASE
    assert result["kernel"] == "numpy" if BASE == "numpy" else result["kernel"].startswith("cpu.")
    assert result["strokes"] == 2 and result["batch"] == 1
    assert len(result["probs"]) == 10 and abs(sum(result["probs"]) - 1) < 1e-3
    assert result["kernel_us"] > 0 and result["end_to_end_us"] >= result["kernel_us"]
    assert result["startup_s"] is not None and 0 < result["startup_s"] < 30
    if HAVE_MODEL:
        assert result["digit"] == 7
    # --record wrote back what was drawn (the painted polyline: the samples joined by short curves).
    recorded = strokes.load_drawing(record)
    assert len(recorded.strokes) == len(drawing) and recorded.widths == widths and recorded.canvas == strokes.CANVAS
    for got, want in zip(recorded.strokes, drawing):
        np.testing.assert_allclose(got[[0, -1]], want[[0, -1]], atol=0.06)
    assert np.abs(recorded.render() - painted).mean() < 0.005
    # The screenshot shows the drawing where the canvas is.
    img = np.asarray(Image.open(png).convert("RGB"), dtype=np.float32) / 255.0
    assert img.shape[0] > 500 and img.shape[1] > 900
    x, y, w, h = result["canvas_rect"]
    shown = at_canvas_size(style.coverage_from_rgba(img[y : y + h, x : x + w]))
    assert np.abs(shown - painted).mean() < 0.01



def test_a_network_of_other_hidden_widths_reads_as_its_function(display: str, tmp_path: Path) -> None:
    """`gemmpad import` writes networks whose hidden layers are not 100 units and says to open them
    with `gemmpad app --model`: the window died on the first reading ("cannot reshape array of size
    64 into shape (10,10)"). The window's model widened to 784-107-101-10 by silent units (no
    weights out of the new first-layer units, none into the new second-layer one) computes the
    same function: the window must read the drawing as it reads it with the model itself."""
    w = {k: np.asarray(v, np.float32) for k, v in window_model().weights.items()}
    wide = {"W1": np.pad(w["W1"], ((0, 0), (0, 7))), "b1": np.pad(w["b1"], (0, 7)),
            "W2": np.pad(w["W2"], ((0, 7), (0, 1))), "b2": np.pad(w["b2"], (0, 1)),
            "W3": np.pad(w["W3"], ((0, 1), (0, 0))), "b3": w["b3"]}
    np.savez(tmp_path / "narrow.npz", **w)
    np.savez(tmp_path / "wide.npz", **wide)
    strokes.save(tmp_path / "seven.json", seven(), [18.0, 18.0])
    readings = []
    for name in ("narrow.npz", "wide.npz"):
        proc = subprocess.run([sys.executable, "-m", "gemmpad", "app", "--model", str(tmp_path / name), "--replay",
                               str(tmp_path / "seven.json"), "--backend", BASE, "--exit", "--no-vsync"],
                              env=env(display), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        readings.append(json.loads(proc.stdout.splitlines()[-1]))
    narrow, wide_reading = readings
    assert wide_reading["error"] == "" and wide_reading["digit"] == narrow["digit"]
    np.testing.assert_allclose(wide_reading["probs"], narrow["probs"], atol=1e-4)
    if HAVE_MODEL:
        assert wide_reading["digit"] == 7


def test_ctrl_c_in_the_terminal_keeps_the_recorded_drawing(display: str, tmp_path: Path) -> None:
    """--record wrote the strokes on Ctrl+Q but not on Ctrl-C in the terminal ("gemmpad: interrupted",
    exit 130): a session ended that way lost its drawing."""
    replay, record = tmp_path / "seven.json", tmp_path / "recorded.json"
    strokes.save(replay, seven(), [18.0, 18.0])
    args = ["--replay", str(replay), "--record", str(record), "--backend", BASE, "--no-vsync"]
    if not HAVE_MODEL:
        window_model().save(tmp_path / "random-mlp.npz")
        args += ["--model", str(tmp_path / "random-mlp.npz")]
    proc = subprocess.Popen([sys.executable, "-m", "gemmpad", "app", *args], env=env(display),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        json.loads(proc.stdout.readline())  # the replay's summary: the drawing is on the canvas, the loop runs
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err.strip() == "gemmpad: interrupted", err
    recorded = strokes.load_drawing(record)
    assert len(recorded.strokes) == 2 and recorded.widths == [18.0, 18.0]

def test_scale_and_size_make_a_larger_window(display: str, tmp_path: Path) -> None:
    """--scale 1.5 (high-DPI screens) with --size: the layout is planned at that scale."""
    from gemmpad.ui.layout import plan

    proc = run_app(display, tmp_path, "--exit", "--scale", "1.5", "--size", "1500x900")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["scale"] == 1.5 and summary["viewport"] == [1500, 900]
    side = plan(1500, 900, 1.5).canvas
    assert summary["canvas_rect"][2:] == [side, side]


def test_a_size_larger_than_the_screen_is_honoured_as_far_as_the_screen_allows(display: str, tmp_path: Path) -> None:
    """--size 3000x700 on the 1600x1000 test screen opened a window 3000 px wide, its right off-screen:
    now as wide as the screen, the height as asked, and one line says so."""
    from gemmpad.ui.app import screen_size

    screen = screen_size()
    assert screen is not None
    proc = run_app(display, tmp_path, "--exit", "--size", f"{screen[0] + 1400}x700")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["viewport"] == [screen[0], 700]
    notice = [line for line in proc.stderr.splitlines() if "--size" in line]
    assert notice == [f"gemmpad: --size {screen[0] + 1400}x700 is larger than the screen ({screen[0]}x{screen[1]}): "
                      f"opening {screen[0]}x700"]
    fits = run_app(display, tmp_path, "--exit", "--size", "900x600")  # a size that fits: as asked, nothing said
    assert json.loads(fits.stdout.splitlines()[-1])["viewport"] == [900, 600] and "--size" not in fits.stderr


def test_a_scale_too_large_for_the_window_says_which_fits(display: str, tmp_path: Path) -> None:
    """--scale 4 in a 1280x720 window: the digit read and its probabilities cannot show together however the
    window scrolls, even with the chart at its least; the window scrolled them out of sight, saying
    nothing. Now one line says so and names the largest scale that fits, on the terminal and in the
    window's status line; at a scale that fits nothing is said."""
    from gemmpad.ui.layout import fitting_scale, plan

    assert not plan(1280, 720, 4.0).reading_fits and fitting_scale(1280, 720, 4.0) == 2.75
    proc = run_app(display, tmp_path, "--exit", "--scale", "4", "--size", "1280x720")
    assert proc.returncode == 0, proc.stderr
    line = ("at UI scale 4 the digit read and its ten probabilities cannot show together in a window 720 px high: "
            "start gemmpad with --scale 2.75 (or make the window taller)")
    assert [s for s in proc.stderr.splitlines() if "--scale" in s] == [f"gemmpad: {line}"]
    assert json.loads(proc.stdout.splitlines()[-1])["status"] == line[0].upper() + line[1:]
    fits = run_app(display, tmp_path, "--exit", "--scale", "2.75", "--size", "1280x720")
    assert fits.returncode == 0 and "--scale" not in fits.stderr, fits.stderr


def test_no_display_gives_a_clear_message_not_an_abort(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "gemmpad", "app", "--exit"], env=env(None),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "DISPLAY" in proc.stderr and "xvfb-run" in proc.stderr and "gemmpad predict" in proc.stderr
    assert "Traceback" not in proc.stderr
    bad = subprocess.run([sys.executable, "-m", "gemmpad", "app", "--exit"], env={**env(None), "DISPLAY": ":4242"},
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cannot open display" in bad.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replay", "/nonexistent/strokes.json"], "strokes JSON file not found"),
        (["--batch", "5000"], "argument --batch: must be between 1 and 4,096, got 5000"),
        (["--threads", "0"], "argument --threads: must be between 1 and 1,024, got 0"),
        (["--frames", "-1"], "argument --frames: must be between 0 and 1,000,000, got -1"),
        (["--kernel", "numpy.no_such_kernel", "--backend", "numpy"], "no_such_kernel"),
        (["--screenshot", "/dev/null/shot.png"], "--screenshot /dev/null/shot.png: /dev/null is a file, not a directory"),
        (["--screenshot", "TMP/shot"], "--screenshot TMP/shot: the file type comes from the suffix"),
        (["--screenshot", "/tmp"], "--screenshot /tmp: /tmp is a directory"),
        (["--record", "/dev/null/strokes.json"], "--record /dev/null/strokes.json: /dev/null is a file"),
        (["--record", "/tmp"], "--record /tmp: /tmp is a directory"),
        (["--brush", "nan"], "argument --brush: must be a finite number"),
    ],
)
def test_bad_arguments_give_one_line_errors(display: str, args: list[str], message: str, tmp_path: Path) -> None:
    """TMP is the test's own empty folder: a fixed /tmp/shot failed where a folder of that name existed."""
    args, message = [a.replace("TMP", str(tmp_path)) for a in args], message.replace("TMP", str(tmp_path))
    proc = run_app(display, tmp_path, *args, "--exit")
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr



@pytest.mark.parametrize(("option", "name"), [("--screenshot", "shot.png"), ("--record", "strokes.json")])
def test_an_existing_output_is_replaced_only_with_force(display: str, tmp_path: Path, option: str, name: str) -> None:
    """--screenshot and --record silently replaced an existing file, where every other output of the
    command line refuses one unless --force: now refused in one line before the window opens."""
    out = tmp_path / name
    out.write_bytes(b"not yours to lose")
    proc = run_app(display, tmp_path, option, str(out), "--exit")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip() == f"gemmpad: error: {option}: {out} already exists; pass --force to replace it"
    assert out.read_bytes() == b"not yours to lose"
    proc = run_app(display, tmp_path, option, str(out), "--exit", "--force")
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() != b"not yours to lose"


def test_hostile_files_for_the_window_are_one_line_errors(display: str, tmp_path: Path) -> None:
    """Issue 20: --replay of a FIFO hung (finding 5), --record replaced special files and
    symlinks (finding 7), a model that overflows showed "nan %" (finding 4)."""
    from tests.hostile_files import fifo

    escapes = [fifo(tmp_path / "replay.json"), fifo(tmp_path / "record.json")]
    huge = {k: np.asarray(v, np.float32) for k, v in window_model().weights.items()}
    huge["W1"] = np.full_like(huge["W1"], 3e38)
    np.savez(tmp_path / "huge.npz", **huge)
    model = ["--model", str(tmp_path / "huge.npz")]
    cases = [(["--replay", str(tmp_path / "replay.json")], "replay.json: is a FIFO, not a regular file"),
             (["--record", str(tmp_path / "record.json")], "record.json is not a regular file"),
             (model, "huge.npz: the network's output is not finite")]
    try:
        for args, message in cases:
            proc = subprocess.run([sys.executable, "-m", "gemmpad", "app", *args, "--exit"], env=env(display),
                                  capture_output=True, text=True, timeout=60)
            assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    finally:
        for done in escapes:
            done.set()
    assert (tmp_path / "record.json").is_fifo()


def test_the_summary_line_is_strict_json(display: str, tmp_path: Path) -> None:
    """Issue 20, finding 4's rule (JSON output is always valid JSON): with no frame timed yet,
    `app --exit` printed "frame_ms_median": NaN."""
    proc = run_app(display, tmp_path, "--exit")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1], parse_constant=lambda c: pytest.fail(f"{c} in {proc.stdout}"))
    assert summary["frame_ms_median"] is None or summary["frame_ms_median"] > 0


def test_replay_and_record_of_a_costly_or_sparse_file(display: str, tmp_path: Path) -> None:
    """Issue 40 #5 as a user meets it: `app --replay far_points.json` took 35 s and a GB (now
    refused in one line before the window opens), and the --record of a replay of points 8 px
    apart could not be loaded back (one stroke became ~6,000 points)."""
    far = tmp_path / "far_points.json"
    strokes.save(far, [np.array([[0.0, 0.0], [160.0, 160.0], [0.0, 160.0]])], [18.0], (16, 16))
    proc = run_app(display, tmp_path, "--replay", str(far), "--exit")
    assert proc.returncode == 2 and "million pixels at the app's canvas" in proc.stderr, proc.stderr
    sparse = tmp_path / "sparse.json"
    line = np.column_stack([np.linspace(20, 260, 2000), 140 + 100 * np.sin(np.arange(2000) * 0.08)])
    strokes.save(sparse, [line], [8.0])
    record = tmp_path / "recorded.json"
    proc = run_app(display, tmp_path, "--replay", str(sparse), "--exit", "--no-vsync", "--record", str(record))
    assert proc.returncode == 0, proc.stderr
    back = strokes.load_drawing(record)
    assert len(back.strokes) > 1 and max(map(len, back.strokes)) <= strokes.MAX_STROKE_POINTS


def test_a_personal_model_that_cannot_be_used_is_said_in_the_window(display: str, tmp_path: Path) -> None:
    """A corrupt personal model: the window starts with the shipped model and says why in its status line,
    in red (it said so only on stderr, which a window started from a desktop has nowhere to show)."""
    if not HAVE_MODEL:
        pytest.skip("no shipped model to fall back on")
    home = tmp_path / "home"
    home.mkdir()
    (home / "personal-model.npz").write_bytes(b"PK\x03\x04 not a model")
    proc = subprocess.run([sys.executable, "-m", "gemmpad", "app", "--backend", BASE, "--exit"],
                          env={**env(display), "GEMMPAD_HOME": str(home)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    said = "your personal model cannot be used ("
    assert f"gemmpad: {said}" in proc.stderr
    status = json.loads(proc.stdout.splitlines()[-1])["status"]
    assert status.startswith("Your personal model cannot be used (") and status.endswith("starting with the shipped model")
