"""Training: a CPU smoke run that must learn, repeatability, the engines' contract, and the helpers."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest
from gemmpad.runtime import native
from gemmpad.data import forms, pendigits, trainset, userdata
from gemmpad.learn import rehearsal, train, train_native, train_torch, trainer
from gemmpad.errors import CudaUnavailable, DataError, GemmpadError
from gemmpad.runtime.model import Model, fold_normalisation, load_model

from tests.mnist_data import mnist_dir
from tests.pendigits_data import pendigits_file, unipen

pytest.importorskip("torch")


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    train.add_arguments(p)
    return p.parse_args(list(argv))


def smoke_args(tmp_path: Path, name: str, *extra: str) -> argparse.Namespace:
    return parse("--data", str(mnist_dir()), "--limit", "2500", "--val", "500", "--epochs", "1",
                 "--batch-size", "32", "--augment", "none", "--eval-drawn", "0", "--cache", "",
                 "--quiet", "--output", str(tmp_path / f"{name}.npz"), *extra)


def few_writers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_writer: int) -> None:
    """$GEMMPAD_PENDIGITS pointed at writers 1, 2 and 3's first `per_writer` real samples each."""
    real = pendigits.read_pendigits(pendigits_file())
    few = [s for w in (1, 2, 3) for s in [s for s in real if s.writer == w][:per_writer]]
    small = tmp_path / "pen.tra"
    small.write_text(unipen(few))
    monkeypatch.setenv("GEMMPAD_PENDIGITS", str(small))


@pytest.mark.slow
def test_smoke_run_learns_and_writes_everything(tmp_path: Path) -> None:
    assert train.run(smoke_args(tmp_path, "a")) == 0
    m = load_model(tmp_path / "a.npz")
    card = json.loads((tmp_path / "a.json").read_text())
    assert (tmp_path / "a.png").stat().st_size > 10_000
    assert card["training"]["mnist_train_images"] == 2000 and card["training"]["held_out"] == 500
    assert card["history"][0]["val_acc"] > 0.80  # 500 held-out training images, never trained on
    assert card["results"]["mnist_test_accuracy"] > 0.80  # and the 10,000 test images
    assert card["data"]["canonical_mnist"] is True
    assert m.card == card
    # the sets Learn needs, beside the model and hashed in its card: Learn works from them alone
    assert (tmp_path / card["rehearsal"]["file"]).stat().st_size == card["rehearsal"]["bytes"]
    sets = rehearsal.sets_for(m)
    assert len(sets.replay) == 2000 and len(sets.mnist) == 10_000 and len(sets.writers) == 0
    assert sets.origin == {"model": "a", "sha256": card["rehearsal"]["sha256"]}
    # repeatable: the same seed gives the same weights
    assert train.run(smoke_args(tmp_path, "b")) == 0
    m2 = load_model(tmp_path / "b.npz")
    for k in m.weights:
        np.testing.assert_array_equal(m.weights[k], m2.weights[k])
    assert not list(tmp_path.glob(".*tmp*"))


@pytest.mark.slow
def test_held_out_writers_never_reach_training_and_are_measured(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Split by writer: the card's real-writer figures are for writers the model never saw."""
    few_writers(tmp_path, monkeypatch, 12)
    args = smoke_args(tmp_path, "w", "--augment", "original,pendigits", "--val-writers", "2")
    seen: list[np.ndarray] = []
    fit = train_torch.fit
    monkeypatch.setattr(train_torch, "fit", lambda x, y, w, **kw: (seen.append(x), fit(x, y, w, **kw))[1])
    assert train.run(args) == 0
    card = json.loads((tmp_path / "w.json").read_text())
    assert card["training"]["pendigits_writers"] == [1, 3]
    assert card["training"]["sources"]["pendigits"] == 24 * trainset.PEN_COPIES
    assert len(seen[0]) == 2000 + 24 * trainset.PEN_COPIES  # no row of writer 2
    report = card["results"]["real_writers"]
    assert report["writers"] == [2] and report["samples"] == 12
    assert set(report["styles"]) == set(pendigits.STYLES) and 0.0 <= report["worst"] <= report["mean"] <= 1.0
    assert 0.0 <= report["paper"] <= 1.0


def quick_args(tmp_path: Path, *extra: str) -> argparse.Namespace:
    """Arguments for runs that must fail before any data is read (so no MNIST is needed)."""
    return parse("--data", str(tmp_path / "absent"), "--output", str(tmp_path / "m.npz"), "--quiet", *extra)


@pytest.mark.skipif(native.cuda_status().available, reason="a usable GPU: --trainer native would train")
def test_native_engine_says_why_it_cannot_run(tmp_path: Path) -> None:
    with pytest.raises(CudaUnavailable, match="--trainer native trains on the GPU"):
        train.run(quick_args(tmp_path, "--trainer", "native"))


def test_native_engine_is_sgd_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "cuda_status", lambda: native.CudaStatus(available=True, reason="", built=True))
    with pytest.raises(GemmpadError, match="SGD with momentum only"):
        train.run(quick_args(tmp_path, "--trainer", "native", "--optimizer", "adamw"))


def test_the_teacher_is_torch_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "cuda_status", lambda: native.CudaStatus(available=True, reason="", built=True))
    with pytest.raises(GemmpadError, match="--teacher needs --trainer torch"):
        train.run(quick_args(tmp_path, "--trainer", "native", "--optimizer", "sgd", "--teacher", "cnn"))


@pytest.mark.slow
def test_a_teacher_run_learns_from_the_cnn_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--teacher cnn: the MLP gets the teacher's logits for every row; the card names the teacher."""
    from gemmpad.learn import distill

    monkeypatch.setattr(distill, "EPOCHS", 1)
    seen: list = []
    fit = train_torch.fit
    monkeypatch.setattr(train_torch, "fit",
                        lambda x, y, w, **kw: (seen.append((len(x), kw["teacher"])), fit(x, y, w, **kw))[1])
    assert train.run(smoke_args(tmp_path, "t", "--teacher", "cnn")) == 0
    n, logits = seen[0]
    assert logits.shape == (n, 10) and logits.dtype == np.float32
    card = json.loads((tmp_path / "t.json").read_text())
    teacher = card["training"]["teacher"]
    assert teacher["kind"] == "cnn" and teacher["held_out_accuracy"] > 0.6  # one epoch on 2,000 images
    assert card["results"]["mnist_test_accuracy"] > 0.80


@pytest.mark.slow
def test_an_ensemble_teacher_averages_its_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--teachers 2: two CNNs from their own seeds; the MLP learns from the mean of their log-probabilities."""
    from gemmpad.learn import distill

    monkeypatch.setattr(distill, "EPOCHS", 1)
    rng = np.random.default_rng(0)
    x = rng.random((300, 784), dtype=np.float32)
    y = rng.integers(0, 10, 300)
    one, _ = distill.teacher_logits(x, y, x[:50], y[:50], 3, "cpu", lambda s: None)
    other, _ = distill.teacher_logits(x, y, x[:50], y[:50], 4, "cpu", lambda s: None)
    team, val = distill.teacher_logits(x, y, x[:50], y[:50], 3, "cpu", lambda s: None, members=2)
    np.testing.assert_allclose(team, (one + other) / 2, atol=1e-5)  # each member: exp sums to 1
    np.testing.assert_allclose(np.exp(one).sum(axis=1), 1.0, rtol=1e-5)
    assert val == float(((one + other)[:50].argmax(1) == y[:50]).mean())
    with pytest.raises(GemmpadError, match="--teachers N is the size of a --teacher cnn ensemble"):
        train.run(quick_args(tmp_path, "--teachers", "2"))


@pytest.mark.slow
def test_a_matching_run_teaches_by_the_views_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--teacher cnn --match: no fixed logits reach the trainer, the teacher team and its views do; the card
    names the loss and the views."""
    from gemmpad.learn import distill, matching

    monkeypatch.setattr(distill, "EPOCHS", 1)
    seen: list = []
    fit = train_torch.fit
    monkeypatch.setattr(train_torch, "fit",
                        lambda x, y, w, **kw: (seen.append((kw["teacher"], kw["match"])), fit(x, y, w, **kw))[1])
    assert train.run(smoke_args(tmp_path, "run", "--teacher", "cnn", "--match", "--mix", "0.5")) == 0
    teacher, match = seen[0]
    assert teacher is None and isinstance(match, matching.Matching) and match.views.mix == 0.5
    card = json.loads((tmp_path / "run.json").read_text())
    assert card["training"]["loss"] == "KL(teacher || MLP) at temperature 1 (scaled by T^2)"
    assert "50 % blended" in card["training"]["teacher"]["matching"]
    assert card["training"]["teacher"]["held_out_accuracy"] > 0.6
    assert card["results"]["mnist_test_accuracy"] > 0.6  # one epoch of views read by a one-epoch teacher: it learns
    with pytest.raises(GemmpadError, match="--match is how a teacher teaches: add --teacher cnn"):
        train.run(quick_args(tmp_path, "--match"))
    with pytest.raises(GemmpadError, match="--mix SHARE blends the views of --match"):
        train.run(quick_args(tmp_path, "--teacher", "cnn", "--mix", "0.3"))


def test_bad_options(tmp_path: Path) -> None:
    with pytest.raises(GemmpadError, match="augment"):
        train.run(quick_args(tmp_path, "--augment", "warp,blur"))
    with pytest.raises(GemmpadError, match=".npz"):
        train.run(parse("--output", str(tmp_path / "m.bin"), "--data", str(tmp_path)))
    with pytest.raises(DataError):
        train.run(parse("--data", str(tmp_path / "absent"), "--output", str(tmp_path / "m.npz")))
    (tmp_path / "plain").write_text("a file")
    bad_dir = str(tmp_path / "plain")
    good = ["--output", str(tmp_path / "m.npz")]
    for option, argv, message in (("--output", ["--output", f"{bad_dir}/m.npz"], "is a file, not a directory"),
                                  ("--curve", [*good, "--curve", f"{bad_dir}/c.png"], "is a file, not a directory"),
                                  ("--curve", [*good, "--curve", str(tmp_path / "curve")], "comes from the suffix"),
                                  ("--curve", [*good, "--curve", str(tmp_path)], "is a directory"),
                                  ("--cache", [*good, "--cache", bad_dir], "is a file, not a directory")):
        with pytest.raises(GemmpadError, match=f"^{option} .*{message}"):  # before the data is even read
            train.run(parse(*argv, "--data", str(tmp_path / "absent")))


def test_default_output_never_the_shipped_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --output, run() writes runs/mnist-mlp-<time>.npz under the working directory."""
    from gemmpad.data import mnist
    from gemmpad.runtime.model import default_model_path

    class Stop(Exception):
        pass

    checked: list[str] = []
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(train, "check_output_file", lambda path, what, suffixes=None: checked.append(what))
    dirs: list[str] = []
    monkeypatch.setattr(train, "check_writable_dir", lambda d, what: dirs.append(what))
    monkeypatch.setattr(mnist, "load_split", lambda *a, **k: (_ for _ in ()).throw(Stop()))
    with pytest.raises(Stop):
        train.run(parse("--data", str(tmp_path), "--quiet"))
    output = Path(checked[0].split(" ", 1)[1])
    assert checked[0].startswith("--output ") and output.parent == Path("runs") and output.suffix == ".npz"
    assert (tmp_path / output).resolve() != default_model_path().resolve()
    assert checked[1:] == [f"--output {output} (its card)", f"--curve {output.with_suffix('.png')}"]
    assert dirs == [f"--cache {userdata.cache_dir()}"]  # the user's cache folder, never ./runs/cache (issue 40 #9)


def test_a_run_that_fails_before_training_makes_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`gemmpad train` without MNIST said so, and left an empty runs/ in the working directory."""
    monkeypatch.chdir(tmp_path)
    for output in ((), ("--output", "m.npz")):  # (--output new/dir/m.npz: refused as it is parsed)
        with pytest.raises(DataError, match="absent: not a directory"):
            train.run(parse("--data", str(tmp_path / "absent"), "--cache", "", "--quiet", *output))
    assert list(tmp_path.iterdir()) == []


def test_fold_normalisation_is_exact(rng: np.random.Generator) -> None:
    w = trainer.init_weights(int(rng.integers(1 << 30)))
    w = {k: v + rng.normal(0, 0.05, v.shape).astype(np.float32) for k, v in w.items()}
    x = rng.uniform(0, 1, (8, 784)).astype(np.float32)
    mean, std = 0.17, 0.33
    ref = Model(w).forward(((x - mean) / std).astype(np.float32))
    np.testing.assert_allclose(Model(fold_normalisation(w, mean, std)).forward(x), ref, rtol=1e-3, atol=1e-5)


def test_schedules() -> None:
    for kind in ("cosine", "step", "constant"):
        lrs = train.lr_schedule(kind, 0.1, 10)
        assert len(lrs) == 10 and lrs[0] == pytest.approx(0.1) and all(x > 0 for x in lrs)
        assert all(x >= y for x, y in zip(lrs, lrs[1:]))


def test_native_engine_gets_the_contracted_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a stand-in for gemmpad.learn.train_native.fit, check what train.py hands over (the Trainer interface)."""
    seen: dict = {}

    def fit(x, y, weights, **kw):  # the stand-in: record, report one epoch per lr, return the start
        seen.update(x=x, y=y, weights=weights, **kw)
        for e in range(kw["epochs"]):
            kw["callback"](e, 1.0, 0.5, weights)
        return weights

    monkeypatch.setattr(train_native, "fit", fit)
    monkeypatch.setattr(train_native, "cuda_trainer_class", lambda: None)
    monkeypatch.setattr(native, "cuda_status", lambda: native.CudaStatus(available=True, reason="", built=True))
    args = smoke_args(tmp_path, "nat", "--trainer", "native", "--epochs", "3", "--lr", "0.1", "--weight-decay", "0.001")
    assert train.run(args) == 0
    assert seen["x"].dtype == np.float32 and seen["x"].shape == (2000, 784)
    assert seen["y"].shape == (2000,) and seen["y"].max() <= 9
    assert seen["epochs"] == 3 and seen["batch_size"] == 32 and seen["momentum"] == 0.9
    assert seen["weight_decay"] == 0.001 and seen["precision"] == "fp32" and seen["seed"] == 0
    assert seen["decay_biases"] is True  # the torch engine decays its biases too: the same training
    assert seen["lr_schedule"] == train.lr_schedule("cosine", 0.1, 3)
    assert "batch_order" not in seen  # every trainer's default, trainer.batch_orders(n, seed): the shipped model's
    np.testing.assert_array_equal(seen["weights"]["W1"], trainer.init_weights(0)["W1"])
    card = json.loads((tmp_path / "nat.json").read_text())
    assert card["training"]["engine"] == "native" and len(card["history"]) == 3


# ---- issue 20: nothing overwritten, nothing lost


def test_existing_outputs_are_not_replaced_without_force(tmp_path: Path) -> None:
    """Finding 2: --output silently replaced any file, the shipped model included, and the
    .json/.png beside it that the user never named."""
    from gemmpad.runtime.model import default_model_path

    for existing in ("m.npz", "m.json", "m.png"):
        (tmp_path / existing).write_text("keep me")
        with pytest.raises(GemmpadError, match=rf"^--output: {re.escape(str(tmp_path / existing))} already exists; "
                                               "pass --force to replace it$"):
            train.run(quick_args(tmp_path))  # before the data is read (--data is absent)
        assert (tmp_path / existing).read_text() == "keep me"
        (tmp_path / existing).unlink()
    shipped = default_model_path()
    with pytest.raises(GemmpadError, match="already exist.*--force"):
        train.run(parse("--data", str(tmp_path / "absent"), "--output", str(shipped), "--quiet"))
    (tmp_path / "m.npz").write_text("replace me")
    with pytest.raises(DataError):  # --force lets the run go on, to the missing data
        train.run(quick_args(tmp_path, "--force"))


@pytest.mark.slow
def test_a_failed_measurement_keeps_the_trained_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 9: an evaluation failing after training (--eval-drawn 10^9) lost the trained model."""
    from gemmpad.data import synthetic

    def out_of_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError("drawn test digits")

    monkeypatch.setattr(synthetic, "generate", out_of_memory)
    args = parse("--data", str(mnist_dir()), "--limit", "600", "--val", "100", "--epochs", "1", "--augment", "none",
                 "--drawn", "0", "--eval-drawn", "10", "--cache", "", "--quiet", "--output", str(tmp_path / "m.npz"))
    with pytest.raises(MemoryError):
        train.run(args)
    m = load_model(tmp_path / "m.npz")
    assert m.card["training"]["epochs"] == 1 and m.card["results"] == {}


@pytest.mark.slow
def test_a_ctrl_c_while_measuring_leaves_nothing_and_the_rerun_writes_everything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A Ctrl-C after training left the model and a card without results under --output's name
    (no curve, no Learn sets), and the rerun was refused without --force."""
    from gemmpad.learn import rehearsal_sets

    def ctrl_c(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    references = rehearsal_sets.references
    monkeypatch.setattr(rehearsal_sets, "references", ctrl_c)  # the last step before the files are written
    out = tmp_path / "out"
    out.mkdir()  # an output's folder must exist (commands.args.output_path)
    argv = ("--data", str(mnist_dir()), "--limit", "600", "--val", "100", "--epochs", "1", "--augment", "none",
            "--drawn", "0", "--eval-drawn", "0", "--cache", "", "--output", str(out / "m.npz"))
    with pytest.raises(KeyboardInterrupt):
        train.run(parse(*argv))
    assert list(out.iterdir()) == []  # not a file, nor a temporary
    monkeypatch.setattr(rehearsal_sets, "references", references)
    capsys.readouterr()
    assert train.run(parse(*argv)) == 0
    written = [out / name for name in ("m.npz", "m.json", "m.png", "m.rehearsal.npz")]
    assert sorted(out.iterdir()) == sorted(written)
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(f"wrote {written[0]}, {written[1]}, {written[2]} and {written[3]} (")
    assert load_model(written[0]).card["rehearsal"]["file"] == "m.rehearsal.npz"


def test_a_diverging_run_stops_with_a_line_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20: `--lr 1e308` trained every epoch, then failed on NaN weights and saved nothing."""
    with pytest.raises(SystemExit):
        parse("--lr", "1e308")  # far past any learning rate that trains
    with pytest.raises(SystemExit):
        parse("--momentum", "1.5")

    def nan_epoch(x, y, w0, **kw):  # what an exploding run reports
        kw["callback"](0, float("nan"), 0.1, w0)
        raise AssertionError("training went on past a NaN loss")

    monkeypatch.setattr(train_torch, "fit", nan_epoch)
    args = parse("--data", str(mnist_dir()), "--limit", "600", "--val", "100", "--epochs", "3", "--augment", "none",
                 "--eval-drawn", "0", "--cache", "", "--quiet", "--output", str(tmp_path / "m.npz"))
    with pytest.raises(GemmpadError, match="diverged in epoch 1 .*lower --lr"):
        train.run(args)
    assert not list(tmp_path.iterdir())


def test_every_option_says_what_it_does() -> None:
    """Issue 39: --epochs, --batch-size, --momentum, --weight-decay and --device had no help."""
    p = argparse.ArgumentParser()
    train.add_arguments(p)
    silent = [a.option_strings[0] for a in p._actions if a.option_strings and a.option_strings[0] != "-h" and not a.help]
    assert silent == []


def test_the_held_out_share_follows_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39: `--limit 3000` failed on a --val 5000 default the user never passed."""

    class Built(Exception):
        pass

    seen = {}

    def stop(args, images, *rest):
        seen.update(val=args.val, train=len(images))
        raise Built

    monkeypatch.setattr(train, "_training_arrays", stop)
    base = ["--data", str(mnist_dir()), "--augment", "none", "--cache", "", "--quiet", "--output", str(tmp_path / "m.npz")]
    with pytest.raises(Built):
        train.run(parse(*base, "--limit", "3000"))
    assert seen == {"val": 250, "train": 2750}
    with pytest.raises(Built):
        train.run(parse(*base, "--limit", "3000", "--val", "0"))  # what the user passes still counts
    assert seen == {"val": 0, "train": 3000}
    with pytest.raises(GemmpadError, match="--val 3000: must be between 0 and the number of training images"):
        train.run(parse(*base, "--limit", "3000", "--val", "3000"))


def test_european_strokes_are_an_option_not_the_default() -> None:
    """Issue 43: the form copies joined the default after they measured better; European strokes did not."""
    assert "european" not in train._sources(parse().augment)
    assert {"forms", "forms-mnist", "forms-drawn"} <= set(train._sources(parse().augment))
    assert train._sources("warp,european") == ["original", "warp", "european"]


def _three_writer_folds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], argparse.Namespace]:
    """A quick --folds 3 over writers 1-3 (10 samples each) as `cv.npz`, and the list that each
    torch fit appends its row count to."""
    few_writers(tmp_path, monkeypatch, 10)
    seen: list[int] = []
    fit = train_torch.fit
    monkeypatch.setattr(train_torch, "fit", lambda x, y, w, **kw: (seen.append(len(x)), fit(x, y, w, **kw))[1])
    return seen, smoke_args(tmp_path, "cv", "--augment", "original,pendigits", "--pen-copies", "1", "--folds", "3",
                            "--limit", "600", "--val", "100")


@pytest.mark.slow
def test_cross_validation_holds_out_every_writer_once_then_trains_on_all(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 43: --folds K trains K models, each measured on writers it never saw, then --output on all."""
    seen, args = _three_writer_folds(tmp_path, monkeypatch)
    assert train.run(args) == 0
    assert seen == [500 + 20, 500 + 20, 500 + 20, 500 + 30]  # each fold without its writer's 10, then all
    for k, writer in enumerate((1, 2, 3), 1):
        card = load_model(tmp_path / f"cv.fold{k}.npz").card
        assert card["results"]["real_writers"]["writers"] == [writer] and "rehearsal" not in card
        assert set(card["results"]["real_writers"]["forms_variants"]) == set(forms.VARIANTS)
    cv = json.loads((tmp_path / "cv.cv.json").read_text())
    assert cv["writers"] == [1, 2, 3] and [f["writers"] for f in cv["folds"]] == [[1], [2], [3]]
    assert cv["worst_style"] <= cv["mean"] and set(cv["forms_variants"]) == set(forms.VARIANTS)
    assert "| **all** | 3 writers | 30 |" in (tmp_path / "cv.cv.md").read_text()
    final = load_model(tmp_path / "cv.npz").card
    assert final["training"]["pendigits_writers"] == [1, 2, 3] and final["results"]["real_writers"] is None
    assert final["results"]["cross_validation"]["folds"] == cv["folds"] and final["rehearsal"]
    (tmp_path / "cv.npz").unlink()
    with pytest.raises(GemmpadError, match="already exist"):  # the fold files are outputs too
        train.run(args)
    # --resume keeps the finished folds (a run split over calls, the last stopped before --output)
    (tmp_path / "cv.json").unlink()
    (tmp_path / "cv.png").unlink()
    seen.clear()
    assert train.run(argparse.Namespace(**{**vars(args), "resume": True})) == 0
    assert seen == [500 + 30] and json.loads((tmp_path / "cv.cv.json").read_text())["folds"] == cv["folds"]
    with pytest.raises(GemmpadError, match=r"cv.fold1.npz: not fold 1 of 3 of this recipe"):
        train.run(argparse.Namespace(**{**vars(args), "resume": True, "force": True, "epochs": 2}))


@pytest.mark.slow
def test_one_fold_alone_then_resume_trains_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--fold I trains fold I only (folds in parallel processes); --resume then keeps it."""
    seen, args = _three_writer_folds(tmp_path, monkeypatch)
    assert train.run(argparse.Namespace(**{**vars(args), "fold": 2})) == 0
    assert seen == [500 + 20] and sorted(p.name for p in tmp_path.glob("cv*.npz")) == ["cv.fold2.npz"]
    assert load_model(tmp_path / "cv.fold2.npz").card["results"]["real_writers"]["writers"] == [2]
    with pytest.raises(GemmpadError, match="already exist"):  # its own files are its outputs
        train.run(argparse.Namespace(**{**vars(args), "fold": 2}))
    seen.clear()
    assert train.run(argparse.Namespace(**{**vars(args), "resume": True})) == 0
    assert seen == [500 + 20, 500 + 20, 500 + 30]  # folds 1 and 3, then all writers
    assert [f["writers"] for f in json.loads((tmp_path / "cv.cv.json").read_text())["folds"]] == [[1], [2], [3]]


@pytest.mark.slow
def test_the_model_alone_beside_its_folds_then_resume_writes_the_summary(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """--fold 0 trains the model on every writer alone (beside its folds, on another GPU); --resume
    then trains the folds, keeps the model and writes the summary into its card; a model not of the
    round is never replaced."""
    seen, args = _three_writer_folds(tmp_path, monkeypatch)
    assert train.run(argparse.Namespace(**{**vars(args), "fold": 0})) == 0
    assert seen == [500 + 30] and (tmp_path / "cv.npz").exists() and not list(tmp_path.glob("cv.fold*"))
    alone = load_model(tmp_path / "cv.npz")
    assert alone.card["cross_validation_fold"]["fold"] == 0 and "cross_validation" not in alone.card["results"]
    assert train.run(argparse.Namespace(**{**vars(args), "fold": 0, "resume": True})) == 0  # finished: kept
    assert seen == [500 + 30]
    seen.clear()
    assert train.run(argparse.Namespace(**{**vars(args), "resume": True})) == 0
    assert seen == [500 + 20] * 3  # the folds; the model kept
    final = load_model(tmp_path / "cv.npz")
    np.testing.assert_array_equal(final.weights["W1"], alone.weights["W1"])
    cv = json.loads((tmp_path / "cv.cv.json").read_text())
    assert final.card["results"]["cross_validation"] == cv and final.card["rehearsal"] == alone.card["rehearsal"]
    shipped = tmp_path / "shipped.npz"  # a model not of this round: refused, whatever its state
    Model(final.weights).save(shipped, {"name": "shipped"})
    for k in (1, 2, 3):
        (tmp_path / f"cv.fold{k}.npz").rename(tmp_path / f"shipped.fold{k}.npz")
        (tmp_path / f"cv.fold{k}.json").rename(tmp_path / f"shipped.fold{k}.json")
    with pytest.raises(GemmpadError, match=r"shipped.npz: not the model of a 3-fold round of this recipe"):
        train.run(argparse.Namespace(**{**vars(args), "resume": True, "output": str(shipped)}))
    shipped.write_bytes(b"not a model")
    with pytest.raises(GemmpadError, match=r"is not replaced by --resume"):
        train.run(argparse.Namespace(**{**vars(args), "resume": True, "output": str(shipped)}))
    assert shipped.read_bytes() == b"not a model" and seen == [500 + 20] * 3


def test_folds_choose_the_held_out_writers_themselves(tmp_path: Path) -> None:
    with pytest.raises(GemmpadError, match="--folds chooses the held-out writers itself"):
        train.run(quick_args(tmp_path, "--folds", "5", "--val-writers", "1-6"))
    with pytest.raises(GemmpadError, match="--resume continues a cross-validation: add --folds K"):
        train.run(quick_args(tmp_path, "--resume"))
    with pytest.raises(GemmpadError, match=r"--fold 6: one of the folds of --folds 5 \(1 to 5; "):
        train.run(quick_args(tmp_path, "--folds", "5", "--fold", "6"))
    with pytest.raises(GemmpadError, match="--fold 1 runs one fold of a cross-validation: add --folds K"):
        train.run(quick_args(tmp_path, "--fold", "1"))


def test_torch_replays_a_captured_step_where_it_can() -> None:
    """gemmpad train's one choice of the graph (gemmpad.learn.torch_graph): torch on a GPU in fp32, with
    AdamW on any schedule or SGD on one rate (its captured step keeps the rate it was captured with)."""
    import argparse

    def graphed(device: str = "cuda", lrs: tuple[float, ...] = (0.1, 0.05), **kw: str) -> bool:
        args = argparse.Namespace(**{"trainer": "torch", "precision": "fp32", "optimizer": "adamw", **kw})
        return train._graphed(args, device, list(lrs))

    assert graphed() and graphed(optimizer="sgd", lrs=(0.05, 0.05))
    assert not graphed(optimizer="sgd") and not graphed("cpu") and not graphed(precision="mixed")
    assert not graphed(trainer="native")
