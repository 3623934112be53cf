"""`gemmpad fine-tune --drawings DIR --base MODEL --output OUT` (gemmpad.learn.personal): bad input skipped
with a line, the personal model written atomically as a new file, never over the shipped model."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from gemmpad.commands import cli
from gemmpad.data import drawings, pendigits, userdata
from gemmpad.learn import finetune, personal, rehearsal, train
from gemmpad.inputs import strokes
from gemmpad.errors import GemmpadError
from gemmpad.runtime.model import default_model_path, load_model
from tests.finetune_data import small_references
from tests.pendigits_data import pendigits_file


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Six real drawings of writer 3 (two digits) as the window stores them, plus bad input."""
    pen = [s for s in pendigits.read_pendigits(pendigits_file()) if s.writer == 3]
    root = tmp_path / "drawings"
    for i, s in enumerate([s for s in pen if s.digit == 5][:3] + [s for s in pen if s.digit == 2][:3]):
        d = drawings.pen_drawing(s, "brush-18px-280")
        strokes.save(root / str(s.digit) / f"{i}.json", d.strokes, d.widths, d.canvas)
    (root / "5" / "corrupt.json").write_text('{"canvas": [280, 280], "strokes": [{"width": "x", "points": [[1, 2]]}]}')
    (root / "8").mkdir()
    strokes.save(root / "seven" / "a.json", [np.array([[10.0, 10.0], [200.0, 200.0]])])
    return root


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small replay (with --steps 40 below): what is tested here is the plumbing, not the learning."""
    monkeypatch.setattr(rehearsal, "sets_for", lambda model, *a, **k: small_references(model))


def _train(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["fine-tune", *argv, *(["--steps", "40"] if "--base" in argv and "--steps" not in argv else [])])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_fine_tune_skips_bad_input_and_writes_a_new_file(folder: Path, tmp_path: Path, fast: None,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    shipped = default_model_path()
    before = _md5(shipped)
    out = tmp_path / "me.npz"
    rc, text, err = _train(capsys, "--drawings", str(folder), "--base", str(shipped), "--output", str(out),
                           "--insist")
    assert rc == 0, err
    assert f"skipped {folder / '5' / 'corrupt.json'}: stroke 0's width must be" in text
    assert f"skipped {folder / '8'}/: no drawings in it" in text
    assert f"skipped {folder / 'seven'}/: the folder name is not a digit" in text
    assert "6 drawings (2: 3, 5: 3)" in text
    assert "MNIST test" in text and "steps on numpy" in text
    model = load_model(out)
    assert model.card["fine_tuned"]["drawings"] == 6 and model.card["fine_tuned"]["per_digit"]["5"] == 3
    assert not np.array_equal(model.weights["W1"], load_model(shipped).weights["W1"])
    assert _md5(shipped) == before
    # the shipped model's unsure detector carried over beside it; no temporaries left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["drawings", "me.json", "me.npz", "me.unsure.json"]
    assert f"wrote {out}, {tmp_path / 'me.json'} and {tmp_path / 'me.unsure.json'}" in text

    rc, _, err = _train(capsys, "--drawings", str(folder), "--base", str(shipped), "--output", str(out))
    assert rc == 2 and "already exist" in err and "--force" in err


@pytest.mark.parametrize("target", ["shipped", "base"])
def test_never_over_the_shipped_or_base_model(folder: Path, tmp_path: Path, target: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    shipped = default_model_path()
    base = tmp_path / "base.npz"
    load_model(shipped).save(base)
    before = _md5(shipped), _md5(base)
    out = shipped if target == "shipped" else base
    rc, _, err = _train(capsys, "--drawings", str(folder), "--base", str(base), "--output", str(out), "--force")
    assert rc == 2 and "a personal model is always a new file" in err
    assert (_md5(shipped), _md5(base)) == before


def test_without_options_it_is_the_windows_learn(folder: Path, tmp_path: Path, fast: None,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`gemmpad fine-tune` alone: the shipped model, the drawings the window saved, the personal model
    in the user folder (a stranger knows neither the shipped model's path nor the drawings folder)."""
    monkeypatch.setenv("GEMMPAD_DRAWINGS", str(folder))
    monkeypatch.setenv("GEMMPAD_HOME", str(tmp_path / "home"))
    rc, text, err = _train(capsys, "--steps", "40", "--insist")
    assert rc == 0, err
    assert "6 drawings (2: 3, 5: 3)" in text
    model = load_model(userdata.personal_model_path())
    assert model.card["fine_tuned"]["drawings"] == 6
    # again, after one more drawing: the personal model is replaced, as Learn replaces it (no --force asked)
    strokes.save(folder / "2" / "more.json", [np.array([[60.0, 40.0], [200.0, 40.0], [60.0, 240.0], [220.0, 240.0]])])
    rc, text, err = _train(capsys, "--steps", "40", "--insist")
    assert rc == 0, err
    assert load_model(userdata.personal_model_path()).card["fine_tuned"]["drawings"] == 7


def test_refused_by_the_safety_rule_writes_nothing(folder: Path, tmp_path: Path, fast: None,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(finetune, "MAX_DROP", -1.0)  # any result is "worse": the rule must refuse it
    out = tmp_path / "me.npz"
    rc, text, err = _train(capsys, "--drawings", str(folder), "--base", str(default_model_path()), "--output", str(out))
    assert rc == 1 and err.startswith("gemmpad fine-tune: it would read others worse") and "--insist" in err
    assert "it would read others worse" not in text  # said once (stdout said it too, as "not saved: ...")
    assert not out.exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--base", "{tmp}/m.npz", "--drawings", "{tmp}"], "model file not found"),
    (["--steps", "5"], "no drawings yet in {tmp}/none: draw and correct digits in the window"),
    (["--drawings", "{tmp}/absent", "--base", "{shipped}", "--output", "{tmp}/o.npz"], "not a folder of drawings"),
    (["--drawings", "{tmp}", "--base", "{tmp}/absent.npz"], "model file not found"),
    (["--drawings", "{tmp}", "--base", "{shipped}", "--output", "{tmp}/o.txt"], "suffix"),
    (["--drawings", "{tmp}", "--base", "{shipped}", "--output", "{tmp}/o.npz", "--cache", "{shipped}"],
     "is a file, not a directory"),  # before the drawings are read, not after the fine-tune
])
def test_bad_arguments_are_one_line(tmp_path: Path, argv: list[str], message: str,
                                    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMMPAD_DRAWINGS", str(tmp_path / "none"))  # the default --drawings: no drawings yet
    message = message.format(tmp=tmp_path)
    args = [a.format(tmp=tmp_path, shipped=default_model_path()) for a in argv]
    rc, _, err = _train(capsys, *args)
    assert rc == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_base_of_other_widths_is_refused_first_naming_its_file(folder: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Every trainer takes 784-100-100-10 only: an imported 784-64-64-10 base was refused after the
    replay sets' minutes, as "weights: W1 has shape (784, 64), expected (784, 100)"."""
    from gemmpad.runtime.model import Model, shapes

    base = tmp_path / "h64.npz"
    Model({k: np.full(s, 0.01, np.float32) for k, s in shapes(64, 64).items()}).save(base)
    rc, _, err = _train(capsys, "--drawings", str(folder), "--base", str(base), "--output", str(tmp_path / "p.npz"))
    assert rc == 2 and err == (f"gemmpad: error: {base}: a 784-64-64-10 network; Learn fine-tunes only "
                               "784-100-100-10 networks (other widths are read, not fine-tuned)\n")
    assert not (tmp_path / "p.npz").exists()


def test_train_with_base_points_to_fine_tune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fine-tuning was `gemmpad train --drawings D --base M`; now its own command, which the old
    spelling names in one line (issue 41)."""
    capsys.readouterr()
    rc = cli.main(["train", "--drawings", str(tmp_path), "--base", str(default_model_path())])
    err = capsys.readouterr().err
    assert rc == 2 and err.strip() == "gemmpad: error: fine-tuning is its own command: gemmpad fine-tune [--drawings DIR] [--base MODEL]"


def test_check_target_refuses_an_existing_file(tmp_path: Path) -> None:
    (tmp_path / "me.json").write_text("{}")
    with pytest.raises(GemmpadError, match=f"^--output: {tmp_path / 'me.json'} already exists; pass --force"):
        personal.check_target(tmp_path / "me.npz", load_model(), replace=False)
    personal.check_target(tmp_path / "me.npz", load_model(), replace=True)
    (tmp_path / "me.json").unlink()
    (tmp_path / "me.unsure.json").write_text("{}")  # the detector beside the model is replaced too
    with pytest.raises(GemmpadError, match=f"^--output: {tmp_path / 'me.unsure.json'} already exists; pass --force"):
        personal.check_target(tmp_path / "me.npz", load_model(), replace=False)

    (tmp_path / "me.unsure.json").unlink()


def test_check_target_refuses_a_name_whose_card_is_another_models_detector(tmp_path: Path) -> None:
    """me.unsure.npz's card would be me.unsure.json, me.npz's detector: refused even with --force."""
    (tmp_path / "me.unsure.json").write_text("{}")
    for replace in (False, True):
        with pytest.raises(GemmpadError, match="^--output .*me.unsure.npz: me.unsure.npz's card would be named "
                                               "me.unsure.json, the name of me.npz's unsure detector"):
            personal.check_target(tmp_path / "me.unsure.npz", load_model(), replace=replace)
    assert (tmp_path / "me.unsure.json").read_text() == "{}"
    personal.check_target(tmp_path / "me.unsured.npz", load_model(), replace=False)  # only the exact suffix

@pytest.mark.slow
def test_drawings_without_base_join_a_full_training_run(folder: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from tests.mnist_data import mnist_dir
    from tests.learn.test_train import parse

    base = ["--data", str(mnist_dir()), "--limit", "600", "--val", "100", "--epochs", "1", "--augment", "none",
            "--eval-drawn", "0", "--val-writers", "none", "--cache", "", "--quiet"]
    with pytest.raises(GemmpadError, match="not a folder"):  # before minutes of building, not after
        train.run(parse(*base, "--drawings", str(tmp_path / "absent"), "--output", str(tmp_path / "x.npz")))
    assert train.run(parse(*base, "--drawings", str(folder), "--output", str(tmp_path / "m.npz"))) == 0
    sources = load_model(tmp_path / "m.npz").card["training"]["sources"]
    assert sources["original"] == 500 and sources["drawings"] > 6  # the six drawings and their copies



def test_steps_rounded_up_to_whole_passes_are_said(folder: Path, tmp_path: Path, fast: None,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """--steps 1 runs one pass over the rows (issue 40: 67 steps, without a word); the line says so."""
    rc, text, err = _train(capsys, "--drawings", str(folder), "--base", str(default_model_path()), "--output",
                           str(tmp_path / "me.npz"), "--insist", "--steps", "1")
    assert rc == 0, err
    assert "(1 asked for, rounded up to whole passes over these rows and the replay)" in text


def test_a_base_whose_detector_is_broken_is_said_and_leaves_none(folder: Path, tmp_path: Path, fast: None,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """fine-tune from a base with a broken unsure detector wrote the model without one, said nothing, and
    removed the output's own earlier detector: the person's non-digits then read as digits."""
    base = tmp_path / "base.npz"
    load_model().save(base)
    (tmp_path / "base.unsure.json").write_text("{")
    out = tmp_path / "me.npz"
    rc, text, err = _train(capsys, "--drawings", str(folder), "--base", str(base), "--output", str(out), "--insist")
    assert rc == 0, err
    assert f"wrote {out} and {tmp_path / 'me.json'}" in text
    assert f"no unsure detector for {out}: none carried over from the base model (" in text
    assert "base.unsure.json: not a valid unsure detector file" in text
    assert not (tmp_path / "me.unsure.json").exists()
