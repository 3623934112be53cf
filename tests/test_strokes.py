"""Strokes files (the app's --replay / --record and saved drawings): round trip and every bad file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gemmpad import strokes
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
