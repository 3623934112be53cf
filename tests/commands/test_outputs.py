"""Every output claimed and written as one unit (gemmpad.inputs.files), and the CLI's last word on a
full disk or a Ctrl-C: one line, never a traceback (issue 40, items 6, 7, 8, 15, 19)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gemmpad.commands import cli, predict
from gemmpad.errors import GemmpadError, ModelFileError
from gemmpad.inputs.files import claim
from gemmpad.runtime.model import Model, default_model_path, load_model


def _env() -> dict[str, str]:
    """For a `gemmpad` subprocess: the gemmpad under test (installed, or app/)."""
    import gemmpad

    package_root = str(Path(gemmpad.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]),
            "GEMMPAD_DEBUG": ""}


def _weights(seed: int) -> dict[str, np.ndarray]:
    return {k: v.copy() for k, v in load_model().weights.items()} | {
        "b3": np.random.default_rng(seed).normal(0, 0.1, 10).astype(np.float32)}


# ---------------------------------------------------------------- one writer per name (item 6)


def test_a_second_fine_tune_to_a_claimed_output_is_refused_before_its_work(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "me.npz"
    (tmp_path / "drawings").mkdir()
    with claim(out, "the first run"):  # another process (the window's Learn, another train) writing it now
        rc = cli.main(["fine-tune", "--drawings", str(tmp_path / "drawings"), "--base", str(default_model_path()),
                       "--output", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "another gemmpad is writing" in err and str(out) in err
    assert not out.exists()


def test_claim_is_released_after_the_block(tmp_path: Path) -> None:
    with claim(tmp_path / "m.npz", "first"):
        pass
    with claim(tmp_path / "m.npz", "second"):  # not refused: the first has finished
        pass


def test_claim_makes_no_folder(tmp_path: Path) -> None:
    """A name is claimed before the work: a run that fails then must not leave its folder behind."""
    out = tmp_path / "new" / "m.npz"
    with claim(out, "--output"):
        assert list(tmp_path.iterdir()) == []
        (tmp_path / "new").mkdir()  # as the writer does: the name locked before is still the one locked
        with pytest.raises(GemmpadError, match="another gemmpad is writing"), claim(out, "a second run"):
            pass


# ---------------------------------------------------------------- weights and card as one unit (items 8, 15)


def test_a_full_disk_at_the_card_leaves_no_weights_without_their_card(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    real = Path.write_bytes

    def full_for_cards(self: Path, data: bytes) -> int:  # room for the weights, none for the card
        if ".json" in self.name:
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_for_cards)
    with pytest.raises(OSError):
        Model(_weights(1)).save(tmp_path / "m.npz", {"name": "m"})
    assert list(tmp_path.iterdir()) == []  # nothing that would block the next run ("already exists")


@pytest.mark.parametrize("cut", ["new weights, old card", "new card, old weights"])
def test_a_pair_cut_between_its_renames_is_refused_on_load(tmp_path: Path, cut: str) -> None:
    path = tmp_path / "m.npz"
    Model(_weights(1)).save(path, {"name": "old"})
    old_weights, old_card = path.read_bytes(), path.with_suffix(".json").read_bytes()
    Model(_weights(2)).save(path, {"name": "new"})
    if cut == "new weights, old card":
        path.with_suffix(".json").write_bytes(old_card)
    else:
        path.write_bytes(old_weights)
    with pytest.raises(ModelFileError, match="describes other weights"):
        load_model(path)


def test_a_card_path_that_is_a_directory_fails_before_the_work(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "o.json").mkdir()
    (tmp_path / "drawings").mkdir()  # empty: the old code got this far, after the check that should have failed
    rc = cli.main(["fine-tune", "--drawings", str(tmp_path / "drawings"), "--base", str(default_model_path()),
                   "--output", str(tmp_path / "o.npz")])
    err = capsys.readouterr().err
    assert rc == 2 and "o.json is a directory" in err and "(its card)" in err
    assert not (tmp_path / "o.npz").exists()


# ---------------------------------------------------------------- a full disk is one line (item 8)


def test_a_full_disk_is_one_line_not_an_internal_error(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    def full(args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", "out/m.npz")

    monkeypatch.setattr(predict, "run", full)
    rc = cli.main(["predict", "x.png"])
    err = capsys.readouterr().err
    assert rc == 2 and err == "gemmpad: error: disk full (no space left on the device): out/m.npz\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_predict_into_a_full_stdout_is_one_line(tmp_path: Path) -> None:
    img = np.zeros((28, 28), np.uint8)
    img[6:22, 12:16] = 255
    Image.fromarray(img).save(tmp_path / "one.png")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "gemmpad", "predict", str(tmp_path / "one.png")],
                              stdout=full, stderr=subprocess.PIPE, text=True, env=_env(), timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "gemmpad: error: disk full (no space left on the device)\n"


# ---------------------------------------------------------------- what a card may show (item 19)


@pytest.mark.parametrize("value", [float("nan"), 1e308, True, -0.5, "0.9"])
def test_card_values_that_are_no_accuracy_are_not_shown(value: object) -> None:
    model = Model(load_model().weights, card={"results": {"mnist_test_accuracy": value,
                                                          "real_writers": {"mean": value},
                                                          "drawn_accuracy": {"all": value}}})
    assert model.scores() == []


# ---------------------------------------------------------------- Ctrl-C (item 7)

# A CLI command (eval's run swapped for a pool of two sleeping workers) that says when its
# workers are running: the test interrupts then, as a person pressing Ctrl-C would, whose
# terminal sends SIGINT to the whole process group, workers included.
_POOL_COMMAND = textwrap.dedent("""
    import sys, time
    from gemmpad.commands import cli, evaluate
    from gemmpad.data import pool

    def work(i):
        print("working", flush=True)
        time.sleep(600)
        return i

    evaluate.run = lambda args: sum(pool.ordered_map(work, list(range(8)), 2))
    sys.exit(cli.main(["eval", "x"]))
""")


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_during_a_pool_is_one_line_and_exit_130(presses: int) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _POOL_COMMAND], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(), start_new_session=True)
    try:
        assert proc.stdout is not None
        seen = ""
        while seen.count("working") < 2:  # both workers are running (their lines may interleave)
            line = proc.stdout.readline()
            assert line, proc.communicate()[1]
            seen += line
        for press in range(presses):
            if press:
                time.sleep(0.05)  # the second press while the first unwinds (then the workers wrote tracebacks)
            os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert err == "gemmpad: interrupted\n"
    # 130, or killed by SIGINT (what a shell also shows as 130): a second press that lands after the
    # interpreter has put back the default handler at its very end
    assert proc.returncode in ((130, -signal.SIGINT) if presses > 1 else (130,))


def test_ctrl_c_during_a_long_cpu_product_is_heard_at_once() -> None:
    """`bench gemm --kernels cpu.01_naive --sizes 3000x3000x3000` (a stranger's run) went on for 142 s after
    Ctrl-C: Python hears a signal between bytecodes, and the kernel ran for minutes. Now the module counts
    the press and the kernel stops between rows: one line and exit 130 within seconds."""
    proc = subprocess.Popen([sys.executable, "-m", "gemmpad", "bench", "gemm", "--kernels", "cpu.01_naive",
                             "--sizes", "3000x3000x3000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), start_new_session=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("GEMM benchmark:"), proc.communicate()[1]
        time.sleep(1.0)  # into the product (its first check alone runs for a minute or two here)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, err) == (130, "gemmpad: interrupted\n")


def test_ctrl_c_while_the_command_is_still_loading_is_one_line(tmp_path: Path) -> None:
    """Item 7: a Ctrl-C in the first ~0.1 s, while `gemmpad` was still importing NumPy and the native
    modules, printed a traceback. The command's script (here a file named gemmpad, as pip writes it)
    is interrupted right after `import gemmpad` starts its work, before gemmpad.commands.cli is loaded."""
    script = tmp_path / "gemmpad"
    script.write_text(textwrap.dedent("""
        import os, signal, sys, time
        import gemmpad
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
        from gemmpad.commands.cli import main
        sys.exit(main(["info"]))
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(), timeout=60)
    assert (proc.returncode, proc.stderr) == (130, "gemmpad: interrupted\n")


# ---------------------------------------------------------------- unsure --fit writes where it is told (item 10)


@pytest.fixture
def quick_fit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """`gemmpad unsure --fit` on tiny sets (what is tested is where it writes), the user data
    folder in tmp_path; returns a copy of the shipped model to fit for."""
    from gemmpad.runtime import unsure
    from gemmpad.learn import unsure_fit

    monkeypatch.setenv("GEMMPAD_HOME", str(tmp_path / "home"))
    rows = np.random.default_rng(0).random((60, 784), dtype=np.float32)
    monkeypatch.setattr(unsure_fit, "fit_sets", lambda *a: (rows[:40], rows[40:] * 0.1, {}))
    det = unsure.fit(load_model(), rows[:40], rows[40:] * 0.1)
    monkeypatch.setattr(unsure, "fit", lambda *a, **k: det)  # one fit for the test's three runs
    monkeypatch.setattr(unsure_fit, "measure", lambda *a: {"quick": True})
    monkeypatch.setattr(unsure_fit, "_lines", lambda m: [])
    model = tmp_path / "models" / "m.npz"
    model.parent.mkdir()
    model.write_bytes(default_model_path().read_bytes())
    return model


def test_unsure_fit_writes_to_the_user_folder_and_replaces_only_with_force(quick_fit: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from gemmpad.runtime import unsure

    home = quick_fit.parents[1] / "home"
    assert cli.main(["unsure", "--fit", "--model", str(quick_fit)]) == 0
    written = unsure.user_path_for(load_model(quick_fit))
    assert written.parent == home / "unsure" and written.exists()
    assert not unsure.path_for(quick_fit).exists()  # nothing beside the model (the package, for the shipped one)
    assert unsure.find(load_model(quick_fit))[1] == written  # and the window finds it there

    capsys.readouterr()
    assert cli.main(["unsure", "--fit", "--model", str(quick_fit)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "--force" in err
    assert cli.main(["unsure", "--fit", "--model", str(quick_fit), "--force"]) == 0

    named = quick_fit.parents[1] / "mine.unsure.json"
    assert cli.main(["unsure", "--fit", "--model", str(quick_fit), "--output", str(named)]) == 0
    assert named.exists()


# ---------------------------------------------------------------- one unit, no leftovers (items 8, 19)


def test_files_written_as_one_unit_are_all_kept_or_none(tmp_path: Path) -> None:
    """The window's drawing (strokes + PNG) and a model (card + weights): a full disk at the
    second file leaves neither, so no PNG stands without its strokes for Learn to take."""
    from gemmpad.inputs.files import atomic_paths

    strokes, png = tmp_path / "d.json", tmp_path / "d.png"
    with pytest.raises(OSError):
        with atomic_paths(strokes, png) as (strokes_tmp, png_tmp):
            strokes_tmp.write_text("{}")
            raise OSError(errno.ENOSPC, "No space left on device", str(png_tmp))
    assert list(tmp_path.iterdir()) == []
    with atomic_paths(strokes, png) as (strokes_tmp, png_tmp):
        strokes_tmp.write_text("{}")
        png_tmp.write_bytes(b"png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json", "d.png"]


def test_ctrl_c_while_the_temporary_is_set_up_leaves_no_hidden_file(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from gemmpad.inputs.files import write_bytes

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "chmod", interrupted)  # between making the temporary and writing it
    with pytest.raises(KeyboardInterrupt):
        write_bytes(tmp_path / "x.seen.png", b"png")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- one line, not an internal error (items 13, 19)


def test_eval_json_over_no_readable_image_is_valid_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    (tmp_path / "set" / "3").mkdir(parents=True)
    (tmp_path / "set" / "3" / "bad.png").write_bytes(b"not a png")
    assert cli.main(["eval", "--json", str(tmp_path / "set")]) == 0

    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    out = json.loads(capsys.readouterr().out, parse_constant=no_constants)
    assert out["results"][str(tmp_path / "set")]["accuracy"] is None


@pytest.mark.parametrize("training", ["oops", {"pendigits_writers": 5}, {"pendigits_writers": ["1", None]}])
def test_eval_pendigits_with_a_card_of_any_shape(training: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from gemmpad.commands import evaluate
    from tests.pendigits_data import pendigits_file

    monkeypatch.setattr(evaluate, "writer_sets", lambda *a: {})  # the card is read before; the reading is not tested
    model = tmp_path / "m.npz"
    Model(load_model().weights).save(model, {"training": training})
    rc = cli.main(["eval", "--model", str(model), "--pendigits", str(pendigits_file()), "--writers", "1",
                   "--styles", "brush-18px-280", "--jobs", "1"])
    assert rc == 0, capsys.readouterr().err


@pytest.mark.parametrize("where", ["a file", "/dev/null"])
def test_eval_save_paper_into_a_file_fails_first(where: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "paper.txt" if where == "a file" else Path(where)
    if where == "a file":
        target.write_text("")
    rc = cli.main(["eval", "--pendigits", "/nonexistent/pendigits.tra", "--save-paper", str(target)])
    err = capsys.readouterr().err
    assert rc == 2 and err == f"gemmpad: error: --save-paper {target}: {target} is a file, not a directory\n"


@pytest.mark.parametrize("batch", [1, 2, 4])
def test_a_batch_too_small_for_the_corrected_digits_is_one_line(batch: int) -> None:
    from gemmpad.learn import finetune
    from gemmpad.errors import GemmpadError

    with pytest.raises(GemmpadError, match="batch size must be at least 5"):
        finetune.batch_plan(np.arange(5).repeat(2), np.arange(10).repeat(20), finetune.Settings(batch=batch),
                            np.random.default_rng(0))


def test_a_diverging_numpy_fit_is_one_error_without_warnings(recwarn: pytest.WarningsRecorder) -> None:
    from gemmpad.learn import train_numpy
    from gemmpad.errors import GemmpadError

    rng = np.random.default_rng(0)
    x, y = rng.random((256, 784), dtype=np.float32), rng.integers(0, 10, 256)
    with pytest.raises(GemmpadError, match="diverged"):
        train_numpy.fit(x, y, load_model().weights, epochs=3, batch_size=32, lr_schedule=1e12)
    assert [str(w.message) for w in recwarn] == []


def test_the_window_size_is_capped_at_an_8k_screen() -> None:
    import argparse

    from gemmpad.ui.app import window_size

    assert window_size("7680x4320") == (7680, 4320) and window_size("4320x7680") == (4320, 7680)
    with pytest.raises(argparse.ArgumentTypeError, match="8K"):
        window_size("16384x16384")


def test_train_on_data_whose_every_image_is_rejected_is_one_line(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import struct

    pytest.importorskip("torch")
    for stem, n in (("train", 40), ("t10k", 20)):  # MNIST's files, every image blank (no ink)
        (tmp_path / f"{stem}-images-idx3-ubyte").write_bytes(struct.pack(">IIII", 2051, n, 28, 28) + bytes(n * 784))
        (tmp_path / f"{stem}-labels-idx1-ubyte").write_bytes(struct.pack(">II", 2049, n) + bytes(range(10)) * (n // 10))
    rc = cli.main(["train", "--data", str(tmp_path), "--epochs", "1", "--val", "0", "--augment", "original",
                   "--cache", "", "--jobs", "1", "--quiet", "--output", str(tmp_path / "m.npz")])
    err = capsys.readouterr().err
    assert rc == 2 and "no training image is left" in err, err
