"""`gemmpad bench`: what every subcommand checks before it measures anything."""

from __future__ import annotations

import sys

import gemmpad
import pytest

from tests.cli_helpers import run_cli


@pytest.mark.parametrize("what", ["gemm", "mlp", "train"])
def test_bench_unwritable_out_fails_before_the_run(monkeypatch, capsys, tmp_path, what):
    (tmp_path / "plain").write_text("a file")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", what, "--out", str(tmp_path / "plain" / "res"))
    assert rc == 2 and out == ""  # nothing measured, so nothing lost
    assert err.startswith("gemmpad: error: --out ") and "plain is a file, not a directory" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("what, result, args", [
    ("gemm", "bench-gemm.json", ["--sizes", "8x8x8", "--kernels", "cpu.01_naive", "--budget-s", "0.01"]),
    ("mlp", "bench-mlp.json", ["--kernels", "numpy", "--batches", "1", "--sweep", "--budget-s", "0.01"]),
    ("train", "train_parity.png", ["--parity-epochs", "0"]),
    ("learn", "learn.md", ["--drawings"]),
])
def test_bench_out_refuses_an_existing_result_without_force(monkeypatch, capsys, tmp_path, what, result, args):
    """A second run into a folder replaced the first's results in silence: every bench --out now
    refuses a file it would write, before the run, in the CLI's one wording (refuse_existing)."""
    kept = tmp_path / result
    kept.write_text("an earlier run's")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", what, *args, "--out", str(tmp_path))
    assert (rc, out) == (2, "")
    assert err == f"gemmpad: error: --out: {kept} already exists; pass --force to replace it\n"
    assert kept.read_text() == "an earlier run's"


def test_bench_kernels_that_match_nothing_are_an_error(monkeypatch, capsys):
    for what, pattern, message in (("gemm", "nomatch_xyz", "matches no kernel"), ("mlp", "cpu.((", "regular expression")):
        rc, out, err = run_cli(monkeypatch, capsys, "bench", what, "--kernels", pattern)
        assert rc == 2 and out == "" and message in err and "Traceback" not in err


@pytest.mark.skipif(gemmpad.cuda_status().available, reason="checks kernels that cannot run without a GPU")
def test_bench_kernels_that_cannot_run_here_are_an_error(monkeypatch, capsys):
    for what in ("gemm", "mlp"):
        rc, out, err = run_cli(monkeypatch, capsys, "bench", what, "--kernels", "cuda.0[17]")
        assert rc == 2 and out == "" and "none of them can run here" in err


@pytest.mark.parametrize("typed, said", [(["--writers", "abc"], "writer range 'abc'"),
                                         (["--styles", "crayon"], "--styles: unknown ['crayon']")])
def test_bench_learn_checks_what_was_typed_before_the_model(monkeypatch, capsys, tmp_path, typed, said):
    """A wrong --writers or --styles was said only once the model was read: after a missing or broken
    model's error, or seconds of loading. What was typed is checked first."""
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "learn", *typed, "--model", str(tmp_path / "none.npz"))
    assert (rc, out) == (2, "") and err.count("\n") == 1 and said in err


def test_bench_learn_on_writers_the_model_trained_on_says_what_to_do(monkeypatch, capsys):
    """Learn's bench corrects people the model never saw: a model trained on every writer (the
    shipped one, since the cross-validation) is refused in one line that names the way out."""
    from gemmpad.bench import learn
    from gemmpad.runtime.model import Model, load_model

    everyone = Model(load_model().weights, {"training": {"pendigits_writers": list(range(1, 31))}})
    monkeypatch.setattr("gemmpad.bench.learn.load_model", lambda path=None: everyone)
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "learn", "--writers", "1-6")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "the model trained on every one of them (30 pendigits writers in all)" in err
    assert "gemmpad train --folds K" in err
    # in a checkout it names the fold model to pass, which never saw those writers (the default `bench learn`
    # could never run, and the line said only how to train one)
    fold = learn.FOLD_MODEL
    if fold.is_file():  # a checkout (an installed package has no assets/)
        assert f"--model {fold} --writers 1-6" in err and not set(load_model(fold).trained_writers) & set(range(1, 7))
    else:
        assert "--model" not in err


def test_bench_learn_without_torch_says_so_before_the_cells(monkeypatch, capsys):
    """Its timing runs the same fine-tune in torch: without torch, the standard line at the start (and
    how to skip the timing), not an internal error after the cells were learned and nothing written."""
    from gemmpad.learn import rehearsal
    from gemmpad.runtime.model import Model, load_model
    from tests.finetune_data import small_references

    others = Model(load_model().weights, {"training": {"pendigits_writers": list(range(7, 31))}})
    monkeypatch.setattr("gemmpad.bench.learn.load_model", lambda path=None: others)
    monkeypatch.setattr(rehearsal, "sets_for", lambda model, *a, **k: small_references())
    monkeypatch.setitem(sys.modules, "torch", None)  # import now raises ImportError, as when not installed
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "learn", "--writers", "1", "--below", "0")
    assert rc == 2 and out == "", err
    assert err.count("\n") == 1 and "needs torch" in err and "pip install torch" in err and "--drawings" in err


def test_bench_learn_that_measures_nothing_says_why_and_writes_nothing(monkeypatch, capsys, tmp_path):
    """No cell below --below and no --drawings to time: empty tables, learn.json and learn.md and
    exit 0 said nothing; now one line that says what to change, exit 2, nothing written."""
    from gemmpad.bench import learn
    from gemmpad.learn import rehearsal
    from gemmpad.runtime.model import Model, load_model
    from tests.finetune_data import small_references

    others = Model(load_model().weights, {"training": {"pendigits_writers": list(range(7, 31))}})
    monkeypatch.setattr("gemmpad.bench.learn.load_model", lambda path=None: others)
    monkeypatch.setattr(rehearsal, "sets_for", lambda model, *a, **k: small_references())
    monkeypatch.setattr(learn, "cells", lambda *a, **k: [])
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "learn", "--writers", "1", "--drawings", "--out",
                           str(tmp_path / "res"))
    assert rc == 2 and err.count("\n") == 1, err
    assert "nothing measured: no cell of writers 1 reads below 80 %" in err and "--drawings" in err
    assert not (tmp_path / "res").exists()
