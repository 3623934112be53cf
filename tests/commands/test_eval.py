"""gemmpad eval: scores add up, writer ranges parse, folders and the pendigits file are read, by writer."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
from gemmpad.commands import evaluate
from gemmpad.data import pendigits
from gemmpad.commands.cli import main
from gemmpad.errors import GemmpadError
from gemmpad.runtime.model import SHAPES, Model, default_model_path, load_model
from PIL import Image

from tests.pendigits_data import pendigits_file


def constant_model(digit: int) -> Model:
    """A model that reads every image as `digit`."""
    w = {k: np.zeros(s, np.float32) for k, s in SHAPES.items()}
    w["b3"][digit] = 5.0
    return Model(w)


def test_scores_per_digit_and_confusion() -> None:
    s = evaluate.Scores(labels=np.array([0, 0, 1, 1, 1, 7]), pred=np.array([0, 3, 1, 1, -1, 1]))
    assert s.accuracy == pytest.approx(3 / 6)
    assert s.per_digit() == {"0": 0.5, "1": pytest.approx(2 / 3), "7": 0.0}
    m = s.confusion()
    assert m.shape == (10, 11) and m.sum() == 6
    assert m[0, 0] == 1 and m[0, 3] == 1 and m[1, 1] == 2 and m[1, 10] == 1 and m[7, 1] == 1
    pooled = evaluate.Scores.pooled([s, s])
    assert len(pooled.labels) == 12 and pooled.accuracy == s.accuracy


@pytest.mark.parametrize("spec,ids", [("1-6", [1, 2, 3, 4, 5, 6]), ("3", [3]), ("1-3,8", [1, 2, 3, 8]),
                                      ("none", []), ("all", list(range(1, 31)))])
def test_writer_range(spec: str, ids: list[int]) -> None:
    assert evaluate.writer_range(spec) == ids


@pytest.mark.parametrize("spec", ["", "6-1", "a-b", "0", "1-", "-3"])
def test_bad_writer_range(spec: str) -> None:
    with pytest.raises(GemmpadError, match="writer range"):
        evaluate.writer_range(spec)


def _folder(tmp_path: Path) -> Path:
    one = pendigits.PenDigit(digit=1, writer=1, strokes=[np.array([[200, 400], [205, 100]], np.float32)])
    for d in (1, 4):
        (tmp_path / str(d)).mkdir(parents=True)
        for i in range(3):
            img = pendigits.render(one, pendigits.Style(width=6.0 + 4 * i, dark_ink=True))
            Image.fromarray((img * 255).astype(np.uint8)).save(tmp_path / str(d) / f"{i}.png")
    Image.fromarray(np.full((50, 50), 255, np.uint8)).save(tmp_path / "4" / "blank.png")
    (tmp_path / "notes").mkdir()
    (tmp_path / "4" / ".hidden.png").write_bytes(b"half-written")
    (tmp_path / "x").mkdir()  # not a digit: passed over
    Image.fromarray(np.zeros((9, 9), np.uint8)).save(tmp_path / "x" / "0.png")
    return tmp_path


def test_directory_scores(tmp_path: Path) -> None:
    root = _folder(tmp_path / "set")
    s = evaluate.directory_scores(constant_model(4), root)
    assert s.labels.tolist() == [1, 1, 1, 4, 4, 4, 4]
    assert s.pred.tolist() == [4, 4, 4, 4, 4, 4, -1]  # the blank page: no ink found
    with pytest.raises(GemmpadError, match="no images"):
        evaluate.directory_scores(constant_model(4), tmp_path / "set" / "notes")
    with pytest.raises(GemmpadError, match="not a directory"):
        evaluate.directory_scores(constant_model(4), tmp_path / "absent")


def test_a_corrupt_image_is_passed_over_with_a_line(tmp_path: Path) -> None:
    """Issue 20: a broken PNG in a labelled folder ended the run as "cannot read image:
    SyntaxError ..." without saying which of the files it was. It is not a misread digit
    either: it is passed over with a line naming it, and the rest are scored."""
    from tests.hostile_files import broken_idat

    root = _folder(tmp_path / "set")
    (root / "1" / "broken.png").write_bytes(broken_idat((root / "4" / "0.png").read_bytes()))
    lines: list[str] = []
    s = evaluate.directory_scores(constant_model(4), root, warn=lines.append)
    assert len(s.labels) == 7  # the six drawings and the blank page; not the broken file
    assert len(lines) == 1 and "set/1/broken.png: cannot read image: SyntaxError" in lines[0]
    assert lines[0].endswith("(skipped)")


def test_models_that_overflow_are_not_read_as_zeros(tmp_path: Path) -> None:
    """Issue 20, finding 4: NaN probabilities have an argmax (0), which scored as a reading."""
    root = _folder(tmp_path / "set")
    model = constant_model(4)
    model.weights["b3"][:] = np.inf  # past the load-time probe, as an overflow on one input would be
    with pytest.raises(GemmpadError, match="output is not finite"):
        evaluate.directory_scores(model, root)


def test_tta_averages_the_jittered_copies(tmp_path: Path) -> None:
    root = _folder(tmp_path / "set")
    model = load_model(default_model_path())
    one = evaluate.directory_scores(model, root, tta=1)
    many = evaluate.directory_scores(model, root, tta=8)
    assert one.labels.tolist() == many.labels.tolist()
    assert many.pred[-1] == -1 and set(many.pred[:3]) <= set(range(10))


def test_cli_eval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _folder(tmp_path / "set")
    model = tmp_path / "m.npz"
    constant_model(1).save(model)
    assert main(["eval", "--model", str(model), str(root)]) == 0
    out = capsys.readouterr().out
    assert f"{root}: 42.86 % of 7" in out and "per digit: 1 100.0  4 0.0" in out
    assert "confusion (row" not in out and "(confusion matrices: --verbose or --json)" in out
    assert main(["eval", "--model", str(model), "--verbose", str(root)]) == 0
    assert "confusion (row: true digit" in capsys.readouterr().out
    assert main(["eval", "--model", str(model), "--json", str(root)]) == 0
    assert '"accuracy": 0.42857' in capsys.readouterr().out
    assert main(["eval", "--model", str(model)]) == 2
    assert "nothing to evaluate" in capsys.readouterr().err
    assert main(["eval", "--model", str(model), "--pendigits", "--styles", "felt-tip"]) == 2
    assert "unknown ['felt-tip']" in capsys.readouterr().err
    # a bad --writers is refused even where no pendigits set is asked for (it was accepted unread)
    assert main(["eval", "--model", str(model), "--writers", "abc", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "writer range 'abc'" in err


@pytest.mark.skipif(not default_model_path().exists(), reason="the shipped model models/mnist-mlp.npz is absent")
def test_eval_names_the_model_as_predict_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """eval's first line and its JSON named the default model by its path inside the install, where
    predict says "the shipped model" (with its card's name and date); a named file is named as typed by
    both."""
    import json

    root = _folder(tmp_path / "set")
    image = str(root / "1" / "0.png")
    said = {}
    for given in ([], ["--model", str(default_model_path())]):
        assert main(["eval", *given, str(root)]) == 0
        said["eval"] = capsys.readouterr().out.splitlines()[0].removesuffix(", tta 1")
        assert main(["predict", "--backend", "numpy", *given, image]) == 0
        said["predict"] = capsys.readouterr().out.splitlines()[0].split("; no unsure detector")[0]
        assert main(["eval", "--json", *given, str(root)]) == 0
        said["eval --json"] = "model " + json.loads(capsys.readouterr().out)["model"]
        assert main(["predict", "--backend", "numpy", "--json", *given, image]) == 0
        said["predict --json"] = "model " + json.loads(capsys.readouterr().out)["model"]
        assert len(set(said.values())) == 1, said
        assert (str(default_model_path()) in said["eval"]) == bool(given), said
    assert said["eval"].startswith(f"model {default_model_path()} (")


def test_writer_sets_read_the_same_in_any_number_of_processes() -> None:
    """Each set (a style, or paper with its own seeded photos) is one task: 1 or 3 processes agree."""
    samples = [s for s in pendigits.read_pendigits(pendigits_file()) if s.writer == 1][:12]
    model = load_model()
    names = ["thin-4px-dark", "small-8px-corner", evaluate.PAPER]
    one = evaluate.writer_sets(model, samples, names, jobs=1)
    three = evaluate.writer_sets(model, samples, names, jobs=3)
    assert list(one) == list(three) == names
    for name in names:
        np.testing.assert_array_equal(one[name].pred, three[name].pred)
        np.testing.assert_array_equal(one[name].labels, [s.digit for s in samples])
    report = evaluate.real_writer_report(model, samples, jobs=2)
    assert report["paper"] == one[evaluate.PAPER].accuracy
    assert report["styles"]["thin-4px-dark"] == one["thin-4px-dark"].accuracy


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, as a person's shell is."""

    def isatty(self) -> bool:
        return True


def test_eval_prints_the_summary_first_and_progress_only_on_a_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39: a run of minutes said nothing until the end, then buried its answer under
    confusion matrices. The accuracies come first; a bar shows on a terminal, none in a pipe."""
    model = tmp_path / "m.npz"
    constant_model(1).save(model)
    a, b = _folder(tmp_path / "a"), _folder(tmp_path / "b")
    assert main(["eval", "--model", str(model), str(a), str(b)]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[1:4] == [f"{a}: 42.86 % of 7", f"{b}: 42.86 % of 7",
                          "mean over the 2 sets 42.86 %, worst 42.86 %"]
    assert captured.err == ""  # piped: no bar
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["eval", "--model", str(model), str(a)]) == 0
    assert "a:   0%|" in tty.getvalue() and "0/7 [" in tty.getvalue()  # tqdm: the 7 images to come
    samples = [s for s in pendigits.read_pendigits(pendigits_file()) if s.writer == 1][:3]
    evaluate.writer_sets(constant_model(1), samples, ["thin-4px-dark", "small-8px-corner"])
    assert "0/2 [" in tty.getvalue() and "set/s" in tty.getvalue()


def test_card_tables_show_forms_and_a_cross_validation_in_place_of_one_held_out_group() -> None:
    """issue 43: a card with forms shows them per variant and digit; one trained on every writer
    (--folds) shows its folds, and the app's first figure is their unseen writers."""
    from gemmpad.learn import crossval

    shipped = load_model(default_model_path()).card
    confusion = np.zeros((10, 11), np.int64)  # 9 of 10 right per digit, one read as the next digit
    for d in range(10):
        confusion[d, d], confusion[d, (d + 1) % 10] = 9, 1
    nine = {str(d): 0.9 for d in range(10)}
    real = {"writers": [1], "samples": 100, "mean": 0.9, "worst": 0.9, "styles": dict.fromkeys(pendigits.STYLES, 0.9),
            "per_digit": nine, "confusion": confusion.tolist(), "paper": 0.9, "paper_per_digit": nine}
    real.update(forms=0.9, forms_per_digit={str(d): 0.9 for d in range(10)}, forms_lined=["boxed-32"],
                forms_variants={"stretch-16": {"confusion": confusion.tolist(), "per_digit": {"1": 0.5}},
                                "boxed-32": {"confusion": confusion.tolist(), "per_digit": {"1": 0.25}}})
    card = {"results": {**shipped["results"], "real_writers": real}}
    text = evaluate.card_tables(card)
    assert "| real writers on scanned forms (no printed lines) | the same digits | **90.00 %** |" in text
    assert "| forms, `stretch-16` | nan | 50.0 |" in text and "| forms, `boxed-32` | nan | 25.0 |" in text
    cv = crossval.summary([{"results": {**card["results"], "real_writers": {**real, "writers": [w]}}} for w in (1, 2)])
    everyone = {"results": {**shipped["results"], "real_writers": None, "cross_validation": cv}}
    text = evaluate.card_tables(everyone)
    assert "pendigits writers" not in text and "| **all** | 2 writers |" in text and "| MNIST test |" in text
    assert Model(load_model(default_model_path()).weights, everyone).scores()[0] == f"unseen writers {100 * cv['mean']:.1f} %"


def _small_pendigits(tmp_path: Path) -> Path:
    """A pendigits file of writers 1 and 2, four digits each: a run of seconds."""
    from tests.pendigits_data import unipen

    samples = pendigits.read_pendigits(pendigits_file())
    few = [s for s in samples if s.writer == 1][:4] + [s for s in samples if s.writer == 2][:4]
    path = tmp_path / "small.tra"
    path.write_text(unipen(few))
    return path


def test_save_paper_tests_only_this_runs_set_and_refuses_a_used_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The folder is tested whole after the paper set is written into it: a second run into
    the same folder measured the first run's images as its own (8 of 8, not writer 2's 4)."""
    small, out = _small_pendigits(tmp_path), tmp_path / "paper"
    args = ["eval", "--pendigits", str(small), "--styles", "brush-18px-280", "--jobs", "1", "--save-paper", str(out)]
    assert main([*args, "--writers", "1"]) == 0
    assert _tested(capsys.readouterr().out, out) == 4 and len(list(out.rglob("*.png"))) == 4
    assert main([*args, "--writers", "2"]) == 2
    assert capsys.readouterr().err == (f"gemmpad: error: --save-paper {out}: {out} is not empty (its files would be "
                                       "counted as this run's); name a new or empty folder\n")
    assert sorted(p.name[:3] for p in out.rglob("*.png")) == ["w01"] * 4  # nothing written
    fresh = tmp_path / "empty"
    fresh.mkdir()
    assert main([*args[:-1], str(fresh), "--writers", "2"]) == 0
    assert _tested(capsys.readouterr().out, fresh) == 4


def _tested(out: str, folder: Path) -> int:
    """How many images eval's headline says it tested in `folder`."""
    (line,) = [line for line in out.splitlines() if line.startswith(f"{folder}: ")]
    return int(line.rsplit(" of ", 1)[1])


@pytest.mark.parametrize("bad", [["--pendigits", "/nonexistent/pendigits.tra"], ["--writers", "29"],
                                 ["--drawn-styles", "felt-tip"]])
def test_save_paper_makes_no_folder_when_an_input_is_bad(bad: list[str], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a" / "b"
    args = ["--pendigits", str(_small_pendigits(tmp_path)), *bad]
    assert main(["eval", "--jobs", "1", "--save-paper", str(out), *args]) == 2
    assert capsys.readouterr().err.count("\n") == 1 and not (tmp_path / "a").exists()
