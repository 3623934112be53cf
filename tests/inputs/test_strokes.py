"""Strokes files (the app's --replay / --record and saved drawings): round trip and every bad file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gemmpad.inputs import strokes
from gemmpad.errors import GemmpadError


def test_round_trip_rounds_to_a_tenth_of_a_pixel(tmp_path: Path, rng: np.random.Generator) -> None:
    drawn = [rng.uniform(0, 280, (n, 2)) for n in (1, 2, 17)]
    strokes.save(tmp_path / "s.json", drawn)
    back = strokes.load(tmp_path / "s.json")
    assert [s.shape for s in back] == [(1, 2), (2, 2), (17, 2)]
    for a, b in zip(drawn, back):
        np.testing.assert_allclose(b, a, atol=0.05 + 1e-9)
    assert not list(tmp_path.glob(".*tmp*"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not a valid strokes JSON file"),
        ('{"strokes": {"0": [[1, 2]]}}', "expected a list of strokes, got dict"),
        ("[[[1, 2], [3]]]", "stroke 0 is not a list of \\[x, y\\] points"),
        ('[[[1, 2]], "ab"]', "stroke 1 is not a list of \\[x, y\\] points"),
        ("[[]]", "stroke 0 must be a non-empty list"),
        ("[[[1, 2, 3]]]", "stroke 0 must be a non-empty list"),
        ("[[[1, NaN]]]", "finite"),
        ("[[[1, Infinity]]]", "finite"),
        ("[[[1e12, 1e12], [-1e12, 5]]]", "from the canvas"),
    ],
    ids=["not JSON", "not a list", "ragged point", "a string", "empty stroke", "3-D point", "NaN", "Inf", "far away"],
)
def test_bad_files_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "s.json").write_text(text)
    with pytest.raises(GemmpadError, match=message):
        strokes.load(tmp_path / "s.json")


def test_missing_and_unreadable(tmp_path: Path) -> None:
    with pytest.raises(GemmpadError, match="strokes JSON file not found"):
        strokes.load(tmp_path / "absent.json")
    with pytest.raises(GemmpadError, match="is a directory, not a strokes JSON file"):
        strokes.load(tmp_path)
    (tmp_path / "latin1.json").write_bytes(b"[\xff]")
    with pytest.raises(GemmpadError, match="not a valid strokes JSON file"):
        strokes.load(tmp_path / "latin1.json")


def test_points_are_capped_per_stroke_and_in_all(tmp_path: Path) -> None:
    """Issue 20, finding 6: replay costs time per point (a 20,000-point stroke took 158 s)."""
    import json

    one = [[[1.0, 2.0]] * (strokes.MAX_STROKE_POINTS + 1)]
    (tmp_path / "long.json").write_text(json.dumps(one))
    with pytest.raises(GemmpadError, match=f"stroke 0 has {strokes.MAX_STROKE_POINTS + 1:,} points, more than"):
        strokes.load(tmp_path / "long.json")
    many = [[[1.0, 2.0]] * strokes.MAX_STROKE_POINTS] * (strokes.MAX_POINTS // strokes.MAX_STROKE_POINTS + 1)
    (tmp_path / "many.json").write_text(json.dumps(many))
    with pytest.raises(GemmpadError, match=f"more than {strokes.MAX_POINTS:,} points in all"):
        strokes.load(tmp_path / "many.json")
    ok = [[[1.0, 2.0]] * strokes.MAX_STROKE_POINTS] * (strokes.MAX_POINTS // strokes.MAX_STROKE_POINTS)
    (tmp_path / "ok.json").write_text(json.dumps(ok))
    assert sum(len(s) for s in strokes.load(tmp_path / "ok.json")) == strokes.MAX_POINTS


def test_deep_nesting_and_fifos_are_clear_errors(tmp_path: Path) -> None:
    """Issue 20, findings 5 and 8: a FIFO hung --replay; 100,000 levels of nesting gave RecursionError."""
    from tests.hostile_files import fifo

    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(GemmpadError, match="nested 100000 levels deep"):
        strokes.load(tmp_path / "deep.json")
    done = fifo(tmp_path / "f.json")
    with pytest.raises(GemmpadError, match="is a FIFO"):
        strokes.load(tmp_path / "f.json")
    done.set()


def test_widths_and_canvas_travel_with_the_strokes(tmp_path: Path, rng: np.random.Generator) -> None:
    """Issue 22: a saved drawing recorded neither brush width nor canvas size, so a replay
    painted every stroke at 18 px on 280x280 whatever was drawn."""
    drawn = [rng.uniform(0, 200, (n, 2)) for n in (3, 9)]
    strokes.save(tmp_path / "s.json", drawn, [7.5, 31.0], (200, 240))
    d = strokes.load_drawing(tmp_path / "s.json")
    assert d.widths == [7.5, 31.0] and d.canvas == (200, 240)
    painted = np.zeros((200, 240), np.float32)
    for s, w in zip(drawn, (7.5, 31.0)):
        strokes.paint_stroke(painted, s, w)
    assert np.abs(d.render() - painted).max() < 0.2  # only the 0.1 px rounding of the points differs
    half = d.on_canvas((100, 200))  # scaled into a smaller canvas, aspect kept
    assert half.widths == [3.75, 15.5] and half.canvas == (100, 200)
    np.testing.assert_allclose(half.strokes[1], d.strokes[1] / 2)
    (tmp_path / "old.json").write_text("[[[1, 2], [3, 4]]]")  # the older bare list: default width and canvas
    old = strokes.load_drawing(tmp_path / "old.json")
    assert old.widths == [strokes.DEFAULT_WIDTH] and old.canvas == strokes.CANVAS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"canvas": [280], "strokes": []}', '"canvas" must be \\[height, width\\]'),
        ('{"canvas": [280, 1e9], "strokes": []}', '"canvas" must be'),
        ('{"canvas": [280, 280], "strokes": [[[1, 2]]]}', '"strokes" must be a list of'),
        ('{"canvas": [280, 280], "strokes": [{"width": -1, "points": [[1, 2]]}]}', "stroke 0's width must be"),
        ('{"canvas": [280, 280], "strokes": [{"width": true, "points": [[1, 2]]}]}', "stroke 0's width must be"),
        ('{"canvas": [280, 280], "strokes": [{"width": 9, "points": [[1, NaN]]}]}', "finite"),
    ],
    ids=["short canvas", "huge canvas", "bare points", "negative width", "boolean width", "NaN point"],
)
def test_bad_widths_and_canvases_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "s.json").write_text(text)
    with pytest.raises(GemmpadError, match=message):
        strokes.load_drawing(tmp_path / "s.json")


def _zigzag(n: int, far: float) -> np.ndarray:
    return np.column_stack([np.where(np.arange(n) % 2 == 0, 0.0, far), np.linspace(0.0, far, n)])


def test_drawings_that_would_cost_minutes_to_paint_are_refused(tmp_path: Path) -> None:
    """Issue 40 #5: within every point cap, a 110 KB file (canvas 4096, width 200, five
    2,000-point zig-zags) cost half an hour of fine-tuning, and three far points on a small
    canvas 35 s and a GB to replay. The price (pixels touched at the app's canvas) is known
    before any painting."""
    cases = {
        "zigzag": ([_zigzag(2000, 2800.0)] * 5, [200.0] * 5, (4096, 4096)),
        "far points": ([np.array([[0.0, 0.0], [160.0, 160.0], [0.0, 160.0]])], [18.0], (16, 16)),
    }
    for name, (lines, widths, canvas) in cases.items():
        path = tmp_path / f"{name}.json"
        strokes.save(path, lines, widths, canvas)
        assert path.stat().st_size < strokes.MAX_FILE_BYTES and sum(map(len, lines)) <= strokes.MAX_POINTS
        with pytest.raises(GemmpadError, match="million pixels at the app's canvas"):
            strokes.load_drawing(path)
    # What a hand makes is far below the cap: the screenshot's digit, and 10,000 points at the widest brush.
    shipped = strokes.load_drawing(Path(__file__).resolve().parents[2] / "assets" / "screenshot-strokes.json")
    assert shipped.paint_cost() < strokes.MAX_PAINT_COST / 100
    walk = np.clip(140 + np.cumsum(np.random.default_rng(5).normal(0, 1.5, (10_000, 2)), axis=0), 0, 280)
    assert strokes.Drawing(list(walk.reshape(5, 2000, 2)), [40.0] * 5).paint_cost() < strokes.MAX_PAINT_COST


def test_the_price_scales_with_the_drawing_on_the_apps_canvas() -> None:
    """The same drawing saved at twice the canvas (points and widths doubled) costs the same."""
    line = [np.array([[10.0, 10.0], [200.0, 150.0], [30.0, 250.0]])]
    small = strokes.Drawing(line, [12.0])
    big = strokes.Drawing([line[0] * 2], [24.0], (560, 560))
    assert big.paint_cost() == pytest.approx(small.paint_cost())
    assert strokes.Drawing(line, [24.0]).paint_cost() > small.paint_cost()  # wider: more pixels


def test_restyled_paintings_over_the_cap_are_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scribble within a few pixels is cheap as drawn, but a fine-tune's restyle scales it to
    fill a canvas with a pen of its own: 10,000 points at up to 90 px, minutes. Those paintings
    are left out before painting; an ordinary drawing keeps all of its restyles."""
    from gemmpad.data import drawings, pendigits
    from gemmpad.learn import finetune

    painted: list[pendigits.Style] = []
    monkeypatch.setattr(pendigits, "render", lambda pen, style: painted.append(style) or np.zeros((28, 28), np.float32))
    rng = np.random.default_rng(3)
    scribble = strokes.Drawing([rng.uniform(100, 105, (2000, 2)) for _ in range(5)], [0.5] * 5)
    assert scribble.paint_cost() <= strokes.MAX_PAINT_COST  # the file itself loads
    finetune.restyled(drawings.Example(3, Path("s.json"), np.zeros((28, 28), np.float32), scribble, "0" * 20), 3, 0)
    assert painted == []
    digit = strokes.Drawing([np.array([[100.0, 60.0], [180.0, 60.0], [120.0, 220.0]])], [18.0])
    finetune.restyled(drawings.Example(7, Path("d.json"), np.zeros((28, 28), np.float32), digit, "1" * 20), 3, 0)
    assert len(painted) == 3


def test_how_far_a_point_may_lie_is_relative_to_the_canvas(tmp_path: Path) -> None:
    """Found by the property fuzz (issue 40): a point 161 px out on a 16 px canvas was legal
    (the limit was 2,800 px whatever the canvas) but lies 2,817 px out once replayed on the
    app's canvas, so the recording of that replay could not be loaded back."""
    path = tmp_path / "s.json"
    strokes.save(path, [np.array([[0.0, 161.0]])], [1.0], (16, 16))
    with pytest.raises(GemmpadError, match="more than 160 px from the canvas origin"):
        strokes.load_drawing(path)
    strokes.save(path, [np.array([[0.0, 160.0]])], [1.0], (16, 16))
    replayed = strokes.load_drawing(path).on_canvas(strokes.CANVAS)
    strokes.save(path, replayed.strokes, replayed.widths, replayed.canvas)
    strokes.load_drawing(path)
    strokes.save(path, [np.array([[40_960.0, 0.0]])], [1.0], (4096, 16))
    assert strokes.load_drawing(path).on_canvas(strokes.CANVAS).strokes[0][0, 0] == pytest.approx(2800.0)
