"""pendigits: the file reads whole or fails loudly, splits never share a writer, renders look like app drawings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gemmpad.data import pendigits
from gemmpad.errors import DataError
from gemmpad.inputs.preprocess import preprocess

from tests.pendigits_data import pendigits_file

GOOD = """.INCLUDE        dene.doc
.LEXICON "0" "1" "2" "3" "4" "5" "6" "7" "8" "9"

.SEGMENT DIGIT    0 ? "7"
.COMMENT 7 12  224
.PEN_DOWN
 100  400
 300  400
 200  100
.PEN_UP
.PEN_DOWN
 150  250
 280  250
.PEN_UP
.DT 100

.SEGMENT DIGIT    1 ? "1"
.COMMENT 1 3   54
.PEN_DOWN
 200  400
 200  100
.PEN_UP
.DT 100
"""


def write(tmp_path: Path, text: str | bytes, name: str = "p.tra") -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def test_reads_digits_writers_and_strokes(tmp_path: Path) -> None:
    seven, one = pendigits.read_pendigits(write(tmp_path, GOOD))
    assert (seven.digit, seven.writer, one.digit, one.writer) == (7, 12, 1, 3)
    assert len(seven.strokes) == 2 and len(one.strokes) == 1
    assert seven.strokes[0].dtype == np.float32 and seven.strokes[0].shape == (3, 2)
    np.testing.assert_array_equal(seven.strokes[1], [[150, 250], [280, 250]])


def test_a_folder_means_the_file_inside(tmp_path: Path) -> None:
    write(tmp_path, GOOD, pendigits.FILENAME)
    assert len(pendigits.read_pendigits(tmp_path)) == 2


@pytest.mark.parametrize("text,message", [
    (GOOD[: GOOD.index(" 200  100")], "truncated"),  # cut inside a stroke
    (GOOD.replace('? "7"', "? 7"), "digit in quotes"),
    (GOOD.replace(".COMMENT 7 12", ".COMMENT 4 12"), "says digit 4"),
    (GOOD.replace(" 300  400", " 300  x"), "two numbers"),
    (GOOD.replace(" 300  400", " 300  1e9"), "finite coordinates"),
    (GOOD.replace(" 300  400", " 300  nan"), "finite coordinates"),
    (GOOD.replace(".PEN_UP\n.PEN_DOWN", ".PEN_DOWN", 1), "inside a .PEN_DOWN"),
    (GOOD.replace(".COMMENT 1 3   54\n", ""), "no .COMMENT"),
    (GOOD.replace(".DT 100\n\n.SEGMENT", " 5 5\n.SEGMENT", 1), "outside a .PEN_DOWN"),
    ("just some text\n", "outside a .PEN_DOWN"),
    ("", "no digits"),
    (GOOD.replace(".PEN_DOWN\n 200  400\n 200  100\n.PEN_UP\n", ""), "no strokes"),
], ids=["truncated", "unquoted label", "label mismatch", "not a number", "huge", "nan", "missing pen up",
        "no writer", "stray points", "not unipen", "empty", "no strokes"])
def test_bad_files_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(DataError, match=message):
        pendigits.read_pendigits(write(tmp_path, text))


def test_missing_binary_and_huge_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataError, match="not found"):
        pendigits.read_pendigits(tmp_path / "absent.tra")
    with pytest.raises(DataError, match="not ASCII"):
        pendigits.read_pendigits(write(tmp_path, b"\x1f\x8b\x08\x00" + bytes(range(256))))
    monkeypatch.setattr(pendigits, "MAX_BYTES", 100)
    with pytest.raises(DataError, match="more than a pendigits file"):
        pendigits.read_pendigits(write(tmp_path, GOOD))


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Issue 20, finding 5's rule for this file too: `eval --pendigits FIFO` waited forever."""
    from tests.hostile_files import fifo

    done = fifo(tmp_path / "pendigits.tes")
    try:
        with pytest.raises(DataError, match="pendigits.tes: is a FIFO, not a regular file"):
            pendigits.read_pendigits(tmp_path / "pendigits.tes")
    finally:
        done.set()


def test_default_path_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = write(tmp_path, GOOD, pendigits.FILENAME)
    monkeypatch.setenv("GEMMPAD_PENDIGITS", str(f))
    assert pendigits.default_path() == f
    monkeypatch.setenv("GEMMPAD_PENDIGITS", str(tmp_path))
    assert pendigits.default_path() == f
    monkeypatch.setenv("GEMMPAD_PENDIGITS", str(tmp_path / "nowhere"))
    monkeypatch.setenv("GEMMPAD_DATA", str(tmp_path / "mnist"))
    monkeypatch.setattr(pendigits, "__file__", str(tmp_path / "a" / "b" / "c" / "pendigits.py"))
    with pytest.raises(DataError, match="GEMMPAD_PENDIGITS"):
        pendigits.default_path()


def _fake(writers_: list[int]) -> list[pendigits.PenDigit]:
    stroke = np.array([[0, 0], [0, 100]], np.float32)
    return [pendigits.PenDigit(digit=w % 10, writer=w, strokes=[stroke]) for w in writers_ for _ in range(3)]


def test_folds_cover_every_writer_once() -> None:
    samples = _fake([5, 1, 9, 2, 30, 7, 11])
    folds = pendigits.writer_folds(samples, 3)
    assert folds == pendigits.writer_folds(samples, 3)  # deterministic
    flat = [w for f in folds for w in f]
    assert sorted(flat) == pendigits.writers(samples) and len(flat) == len(set(flat))
    for fold in folds:
        train, test = pendigits.split_by_writer(samples, fold)
        assert {s.writer for s in test} == set(fold)
        assert not {s.writer for s in train} & set(fold)
        assert len(train) + len(test) == len(samples)
    assert [s.writer for s in pendigits.select_writers(samples, 2, 9)] == [5] * 3 + [9] * 3 + [2] * 3 + [7] * 3
    with pytest.raises(ValueError):
        pendigits.writer_folds(samples, 8)


def test_render_matches_the_style() -> None:
    one = pendigits.PenDigit(digit=1, writer=1, strokes=[np.array([[200, 400], [200, 100]], np.float32)])
    st = pendigits.Style(canvas=(100, 120), width=6.0, height=0.5, centre=(0.25, 0.5))
    light = pendigits.render(one, st)
    assert light.shape == (100, 120) and light.dtype == np.float32 and light.max() == 1.0
    rows, cols = np.nonzero(light > 0.5)
    assert rows.max() - rows.min() + 1 == pytest.approx(50 + 6, abs=2)  # height 0.5 of 100, plus the pen's caps
    assert cols.max() - cols.min() + 1 == pytest.approx(6, abs=1)  # pen width
    assert cols.mean() == pytest.approx(30, abs=1)  # centred at x = 0.25 of 120
    dark = pendigits.render(one, pendigits.Style(canvas=(100, 120), width=6.0, height=0.5, centre=(0.25, 0.5),
                                                 dark_ink=True))
    np.testing.assert_allclose(dark, 1.0 - light)


def test_y_up_becomes_y_down() -> None:
    seven = pendigits.PenDigit(digit=7, writer=1, strokes=[np.array([[100, 400], [300, 400], [200, 100]], np.float32)])
    canvas = pendigits.render(seven, pendigits.Style(width=4.0))
    rows, _ = np.nonzero(canvas > 0.5)
    top_row = canvas[rows.min()]
    assert (top_row > 0.5).sum() > 50  # the bar is at the top, as written


@pytest.fixture(scope="module")
def real() -> list[pendigits.PenDigit]:
    return pendigits.read_pendigits(pendigits_file())


def test_every_style_of_a_real_digit_preprocesses_to_ink(real: list[pendigits.PenDigit]) -> None:
    samples = real
    for name in pendigits.STYLES:
        x = preprocess(pendigits.render(samples[0], name))
        assert x is not None and x.max() > 0.5, name


def test_the_shared_file_is_whole(real: list[pendigits.PenDigit]) -> None:
    samples = real
    assert len(samples) == 7494 and pendigits.writers(samples) == list(range(1, 31))
    assert {s.digit for s in samples} == set(range(10))


def _length(p: np.ndarray) -> float:
    return float(np.linalg.norm(np.diff(p.astype(np.float64), axis=0), axis=1).sum())


def test_reshaped_is_the_same_digit_moved_a_little_and_depends_on_the_stream_only(real: list[pendigits.PenDigit]) -> None:
    """Training's writer-to-writer variation: same digit, writer and strokes, every point near where
    it was (the amounts are fractions of the digit's size), the same copy for the same stream."""
    for s in real[::250]:
        a = pendigits.reshaped(s, np.random.default_rng(7))
        b = pendigits.reshaped(s, np.random.default_rng(7))
        c = pendigits.reshaped(s, np.random.default_rng(8))
        assert (a.digit, a.writer, len(a.strokes)) == (s.digit, s.writer, len(s.strokes))
        assert all(p.dtype == np.float32 and p.ndim == 2 and p.shape[1] == 2 and np.isfinite(p).all() for p in a.strokes)
        assert all(np.array_equal(p, q) for p, q in zip(a.strokes, b.strokes))
        assert not all(p.shape == q.shape and np.allclose(p, q) for p, q in zip(a.strokes, c.strokes))
        pts, new = np.vstack(s.strokes), np.vstack(a.strokes)
        size = float(np.ptp(pts, axis=0).max())
        lo, hi = pts.min(axis=0) - 0.4 * size, pts.max(axis=0) + 0.4 * size
        assert (new >= lo).all() and (new <= hi).all()
        for p, q in zip(s.strokes, a.strokes):
            if len(p) >= 3 and _length(p) > 0.2 * size:
                assert 0.5 < _length(q) / _length(p) < 1.6


def test_reshaped_cuts_strokes_short_and_runs_them_on() -> None:
    """Where a stroke stops is what differs between people: over many copies a straight stroke
    comes out both shorter and longer, and stays straight (the cut and the run-on follow it)."""
    line = pendigits.PenDigit(1, 1, [np.column_stack([np.full(11, 200.0), np.linspace(100, 400, 11)]).astype(np.float32)])
    rng = np.random.default_rng(0)
    lengths = []
    for _ in range(200):
        p = pendigits.reshaped(line, rng).strokes[0].astype(np.float64)
        lengths.append(_length(p))
    ratio = np.array(lengths) / 300.0
    assert ratio.min() < 0.85 and ratio.max() > 1.1  # cut short and run on both happen
    assert 0.6 < ratio.min() and ratio.max() < 1.45
    t = np.array([-30.0, 0.0, 150.0, 300.0, 330.0])  # _along: inside by interpolation, straight on past either end
    arc = np.linspace(0.0, 300.0, 11)
    np.testing.assert_allclose(pendigits._along(arc, np.linspace(100, 400, 11), t), [70, 100, 250, 400, 430])


def test_reshaped_keeps_dots_and_two_point_strokes_and_reads_as_ink(real: list[pendigits.PenDigit]) -> None:
    odd = pendigits.PenDigit(0, 3, [np.array([[5.0, 5.0]], np.float32), np.array([[0.0, 0.0], [100.0, 100.0]], np.float32)])
    out = pendigits.reshaped(odd, np.random.default_rng(1))
    assert [p.shape for p in out.strokes] == [(1, 2), (2, 2)]
    rng = np.random.default_rng(2)
    for s in real[::500]:
        x = preprocess(pendigits.render(pendigits.reshaped(s, rng), pendigits.random_style(rng)))
        assert x is not None and x.max() > 0.5
