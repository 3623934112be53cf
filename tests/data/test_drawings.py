"""gemmpad.data.drawings: a person's folder of labelled drawings, every bad thing in it skipped with a line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gemmpad.data import drawings
from gemmpad.inputs import strokes
from gemmpad.errors import GemmpadError

SEVEN = [np.array([[60.0, 50.0], [220.0, 50.0], [120.0, 240.0]])]
ONE = [np.array([[140.0, 40.0], [140.0, 240.0]])]


def _png(path: Path, lines: list[np.ndarray], width: float = 18.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray((strokes.render(lines, width=width) * 255).astype(np.uint8)).save(path)


def test_a_folder_with_every_kind_of_bad_input(tmp_path: Path) -> None:
    """The issue's bad input: corrupt files, empty folders, a label folder that is not a digit."""
    root = tmp_path / "drawings"
    strokes.save(root / "7" / "a.json", SEVEN, [12.0], (300, 280))  # the window's form
    (root / "7" / "b.json").write_text("[[[60, 50], [220, 50], [120, 240]]]")  # the older bare list
    _png(root / "7" / "a.png", SEVEN)  # the picture of a.json: read once, from the strokes
    _png(root / "1" / "c.png", ONE)  # a picture alone
    (root / "1" / "bad.json").write_text("{not json")
    (root / "1" / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    (root / "1" / "twin.json").write_text("[[[1, 2], [3]]]")  # damaged strokes, a good picture beside them
    _png(root / "1" / "twin.png", ONE)
    (root / "1" / "notes.txt").write_text("hello")
    strokes.save(root / "1" / "far.json", [np.array([[1e5, 1e5]])])
    (root / "3").mkdir()  # empty
    strokes.save(root / "x" / "d.json", SEVEN)  # not a digit
    strokes.save(root / "12" / "e.json", SEVEN)
    _png(root / "4" / "blank.png", [])  # no ink
    (root / "loose.json").write_text("[]")
    strokes.save(root / "unlabelled" / "f.json", SEVEN)  # the window's unlabelled saves: not a label, no line
    (root / ".hidden").mkdir()
    lines: list[str] = []
    got = drawings.read_folder(root, say=lines.append)
    assert sorted((e.label, e.path.name) for e in got) == [(1, "c.png"), (1, "twin.png"), (7, "a.json"), (7, "b.json")]
    text = "\n".join(lines)
    for expected in (f"skipped {root / '1' / 'bad.json'}: not a valid strokes JSON file",
                     f"skipped {root / '1' / 'bad.png'}: cannot read image",
                     f"skipped {root / '1' / 'notes.txt'}: not a strokes file",
                     f"skipped {root / '1' / 'twin.json'}: stroke 0 is not a list of [x, y] points",
                     f"skipped {root / '1' / 'far.json'}: stroke 0 has a point more than",
                     f"skipped {root / '3'}/: no drawings in it",
                     f"skipped {root / 'x'}/: the folder name is not a digit",
                     f"skipped {root / '12'}/: the folder name is not a digit",
                     f"skipped {root / '4' / 'blank.png'}: no ink in it",
                     f"skipped {root / '4'}/: no drawings in it",
                     f"skipped {root / 'loose.json'}: not a folder"):
        assert expected in text, (expected, lines)
    assert "unlabelled" not in text and ".hidden" not in text
    assert len(lines) == 11
    a = next(e for e in got if e.path.name == "a.json")
    assert a.drawing is not None and a.drawing.widths == [12.0] and a.drawing.canvas == (300, 280)
    assert next(e for e in got if e.path.name == "c.png").drawing is None


def test_not_a_folder_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(GemmpadError, match="not a folder of drawings"):
        drawings.read_folder(tmp_path / "absent")
    (tmp_path / "f").write_text("x")
    with pytest.raises(GemmpadError, match="not a folder of drawings"):
        drawings.read_folder(tmp_path / "f")


def test_the_strokes_file_keeps_widths_and_canvas(tmp_path: Path) -> None:
    """A drawing painted again from its file is the drawing the app showed, brush and canvas included."""
    lines = [np.array([[30.0, 30.0], [200.0, 40.0]]), np.array([[100.0, 20.0], [110.0, 250.0]])]
    strokes.save(tmp_path / "s.json", lines, [6.0, 30.0], (260, 300))
    back = strokes.load_drawing(tmp_path / "s.json")
    assert back.widths == [6.0, 30.0] and back.canvas == (260, 300)
    expected = np.zeros((260, 300), np.float32)
    strokes.paint_stroke(expected, lines[0], 6.0)
    strokes.paint_stroke(expected, lines[1], 30.0)
    assert np.array_equal(back.render(), expected)
    assert not np.array_equal(back.render(), strokes.render(lines, (260, 300)))  # the widths matter


@pytest.mark.parametrize(("doc", "message"), [
    ('{"canvas": [280], "strokes": []}', "canvas"),
    ('{"canvas": [0, 280], "strokes": []}', "canvas"),
    ('{"canvas": [99999, 280], "strokes": []}', "canvas"),
    ('{"canvas": [280.5, 280], "strokes": []}', "canvas"),
    ('{"canvas": [280, 280], "strokes": [[[1, 2]]]}', '"width": px'),
    ('{"canvas": [280, 280], "strokes": [{"width": -1, "points": [[1, 2]]}]}', "width must be"),
    ('{"canvas": [280, 280], "strokes": [{"width": "thick", "points": [[1, 2]]}]}', "width must be"),
    ('{"canvas": [280, 280], "strokes": [{"width": 1e9, "points": [[1, 2]]}]}', "width must be"),
    ('{"canvas": [280, 280]}', "expected a list of strokes"),
])
def test_bad_widths_and_canvas_are_refused(tmp_path: Path, doc: str, message: str) -> None:
    (tmp_path / "s.json").write_text(doc)
    with pytest.raises(GemmpadError, match=message):
        strokes.load_drawing(tmp_path / "s.json")


def test_pen_drawing_is_the_app_rendering_of_a_pendigits_sample() -> None:
    from gemmpad.data import pendigits
    from tests.pendigits_data import pendigits_file

    sample = pendigits.read_pendigits(pendigits_file())[0]
    d = drawings.pen_drawing(sample, "thin-4px-light")
    assert np.array_equal(d.render(), pendigits.render(sample, "thin-4px-light"))
    e = drawings.example_of(d, sample.digit)
    assert e.key == drawings.example_of(drawings.pen_drawing(sample, "thin-4px-light"), sample.digit).key
