"""Learn works from the package alone: the sets a fine-tune needs ship beside the model
(gemmpad.learn.rehearsal), verified against the card; caches are hashed and checked (gemmpad.data.arraycache)."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gemmpad.data import arraycache, datafind, trainset
from gemmpad.commands import cli
from gemmpad.learn import finetune, rehearsal, rehearsal_sets
from gemmpad.runtime import model
from gemmpad.inputs import strokes
from gemmpad.errors import DataError
from gemmpad.learn.rehearsal_sets import Arrays

SHIPPED = Path(__file__).resolve().parents[2] / "models"
FILES = ("mnist-mlp.npz", "mnist-mlp.json", "mnist-mlp" + rehearsal.SUFFIX)


def _save_ones(folder: Path, n: int) -> None:
    """n strokes drawings of a 1, as the window saves them."""
    for i in range(n):
        x = 100.0 + 15 * i
        line = np.array([[x, 40.0], [x + 5.0, 140.0], [x + 10.0, 240.0]], np.float32)
        strokes.save(folder / "1" / f"d{i}.json", [line], [18.0], (280, 280))


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh install with nothing else: the package's model files only, every data and user
    folder an empty one, and the MNIST / pendigits finders failing loudly if Learn asks them."""
    pkg = tmp_path / "site" / "gemmpad" / "models"
    pkg.mkdir(parents=True)
    for f in FILES:
        shutil.copy(SHIPPED / f, pkg / f)
    monkeypatch.setattr(model, "MODELS_DIR", pkg)
    for var in ("GEMMPAD_DATA", "GEMMPAD_PENDIGITS", "HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
                "XDG_STATE_HOME", "GEMMPAD_HOME"):
        empty = tmp_path / "empty" / var
        empty.mkdir(parents=True)
        monkeypatch.setenv(var, str(empty))
    monkeypatch.delenv("GEMMPAD_DRAWINGS", raising=False)
    asked: list[str] = []

    def no_data(*_a: object, **_k: object) -> Path:
        asked.append("data")
        raise DataError("no data here")

    monkeypatch.setattr(datafind, "find_mnist", no_data)  # the one finder every data lookup goes through
    monkeypatch.setattr(datafind, "find_pendigits", no_data)
    yield pkg
    assert not asked, "Learn looked for the MNIST or pendigits files"


def test_learn_works_offline_from_the_package_alone(package: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from gemmpad.ui.workers.learner import Learner

    base = model.load_model()
    assert base.path == package / "mnist-mlp.npz"
    folder = tmp_path / "drawings"
    _save_ones(folder, 5)
    learner = Learner(folder, cache_dir=tmp_path / "cache")
    assert learner.start(base, finetune.Settings(steps=40, holdout=0.2))
    assert learner.wait(300)
    result = learner.take()
    assert not isinstance(result, Exception), result
    outcome, examples, skipped = result
    assert len(examples) == 5 and not skipped
    entry = json.loads((package / "mnist-mlp.json").read_text())["rehearsal"]
    # the unseen writers' figure where the shipped sets hold some (none when it trained on every writer)
    assert set(outcome.before) >= {"MNIST test"} | ({"unseen writers"} if entry["writers"] else set())
    assert ("unseen writers" in outcome.before) == bool(entry["writers"])
    assert outcome.before["MNIST test"] > 0.98  # the shipped guard set, read as the card says
    assert outcome.rehearsal == {"model": "mnist-mlp", "sha256": entry["sha256"]}
    assert "site" not in outcome.reason

    # the command line too, run from a folder that must stay empty (issue 40 #9: no ./runs/cache)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    out = tmp_path / "me.npz"
    assert cli.main(["fine-tune", "--drawings", str(folder), "--base", str(base.path), "--output", str(out),
                     "--steps", "30", "--insist", "--quiet"]) == 0
    assert os.listdir(work) == []
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["fine_tuned"]["rehearsal"]["sha256"] == entry["sha256"]


def _sets(package: Path) -> tuple[Path, dict]:
    card = json.loads((package / "mnist-mlp.json").read_text())
    return package / card["rehearsal"]["file"], card


def test_damaged_or_missing_sets_are_one_line_errors(package: Path) -> None:
    path, card = _sets(package)
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(DataError, match=r"do not match the SHA-256 in its card.*reinstall") as exc:
        rehearsal.sets_for(model.load_model())
    assert "\n" not in str(exc.value) and str(package) not in str(exc.value)
    path.unlink()
    with pytest.raises(DataError, match="are missing"):
        rehearsal.sets_for(model.load_model())


def test_sets_whose_card_hash_was_rewritten_are_still_checked(package: Path) -> None:
    """Labels 77 with a matching hash (a hand-edited file and card): refused, never compared."""
    path, card = _sets(package)
    refs = rehearsal.read(path, card["rehearsal"], "mnist-mlp")
    y = refs.mnist.y.copy()
    y[0] = 77
    bad = rehearsal.write(package / "mnist-mlp.npz", replace(refs, mnist=Arrays(refs.mnist.x, y)))
    card["rehearsal"] = bad
    (package / "mnist-mlp.json").write_text(json.dumps(card))
    with pytest.raises(DataError, match="labels up to 77"):
        rehearsal.sets_for(model.load_model())


def test_a_personal_model_outlives_a_changed_base(package: Path, tmp_path: Path) -> None:
    """A personal model records the sets it was tuned with; with its base's sets replaced, a Learn
    from it uses those shipped with the current base and says so."""
    base = model.load_model()
    refs = rehearsal.sets_for(base, replay_rows=512)
    assert len(refs.replay) == 512
    weights = {k: v.copy() for k, v in base.weights.items()}
    outcome = finetune.Outcome(weights, {"MNIST test": 0.99}, {"MNIST test": 0.99}, True, "", "numpy", 5, 0, 50, 10,
                               rehearsal=dict(refs.origin))
    mine = tmp_path / "me.npz"
    finetune.save_personal(outcome, base, [], mine)
    lines: list[str] = []
    again = rehearsal.sets_for(model.load_model(mine), log=lines.append)
    assert again.origin == refs.origin and not lines  # found by hash beside its base

    path, card = _sets(package)
    smaller = rehearsal.read(path, card["rehearsal"], "mnist-mlp")
    smaller = replace(smaller, replay=Arrays(smaller.replay.x[:1000], smaller.replay.y[:1000]))
    card["rehearsal"] = rehearsal.write(package / "mnist-mlp.npz", smaller)  # the base's sets change
    (package / "mnist-mlp.json").write_text(json.dumps(card))
    later = rehearsal.sets_for(model.load_model(mine), log=lines.append)
    assert len(later.replay) == 1000 and later.origin["sha256"] == card["rehearsal"]["sha256"]
    assert lines == ["the Learn sets me was tuned with are gone or changed; using the shipped model's"]


def test_the_shipped_sets_are_small_and_say_what_they_hold() -> None:
    card = json.loads((SHIPPED / "mnist-mlp.json").read_text())["rehearsal"]
    path = SHIPPED / card["file"]
    assert path.stat().st_size == card["bytes"] <= 6 << 20
    refs = rehearsal.read(path, card, "mnist-mlp")
    assert len(refs.replay) == card["replay"] >= rehearsal_sets.REPLAY_ROWS and len(refs.mnist) == card["mnist_test"] == 10_000
    assert len(refs.writers) == card["writers"] and refs.writer_ids == card["writer_ids"]
    # every pendigits writer the model never trained on, and none it did (all 30 trained on: none)
    trained = set(json.loads((SHIPPED / "mnist-mlp.json").read_text())["training"]["pendigits_writers"])
    assert not trained & set(refs.writer_ids) and (len(refs.writers) > 0) == (len(trained) < 30)
    assert 0.0 <= refs.mnist.x.min() and refs.mnist.x.max() <= 1.0


# ---------------------------------------------------------------- caches (issue 40 #14)


def _training_arrays(n: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    rng = np.random.default_rng(5)
    return (rng.random((n, 784), dtype=np.float32), rng.integers(0, 10, n), np.zeros(n, np.int64),
            {"original": n})


@pytest.mark.parametrize("damage", ["truncated", "label 77", "labels overwritten", "nan rows", "counts"])
def test_a_damaged_training_cache_is_built_again(tmp_path: Path, damage: str) -> None:
    built: list[int] = []

    def build() -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
        built.append(1)
        return _training_arrays()

    first = trainset.cached(str(tmp_path), ["k"], build, lambda s: None)
    (path,) = tmp_path.glob("train-*.npz")
    with np.load(path) as z:
        arrays = {n: z[n] for n in ("x", "y", "writer", "counts")}
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        if damage == "label 77":
            arrays["y"][3] = 77
        elif damage == "labels overwritten":
            arrays["y"][:] = 0
        elif damage == "nan rows":
            arrays["x"][2] = np.nan
        else:
            arrays["counts"] = np.array(json.dumps({"original": 3}))
        # a file whose digest matches what it holds: only the checks can refuse it, except
        # "labels overwritten", which keeps the old digest (a hand edit) and is refused by it
        extra = {} if damage == "labels overwritten" else {arraycache.DIGEST: np.array(arraycache.digest(arrays))}
        with np.load(path) as z:
            old = str(z[arraycache.DIGEST])
        np.savez(path, **arrays, **({arraycache.DIGEST: np.array(old)} | extra))
    lines: list[str] = []
    again = trainset.cached(str(tmp_path), ["k"], build, lines.append)
    assert len(built) == 2 and lines and "building it again" in lines[0]
    np.testing.assert_array_equal(again[1], first[1])
    assert trainset.cached(str(tmp_path), ["k"], build, lambda s: None)[3] == {"original": 20} and len(built) == 2


def test_a_damaged_references_cache_is_built_again(tmp_path: Path) -> None:
    """MNIST labels overwritten in the references cache (issue 40 #14): the forgetting guard
    compared garbage and said "MNIST 10.19 % -> 10.15 %"; now the cache is refused."""
    good = {"rx": np.zeros((4, 784), np.float32), "ry": np.arange(4), "mx": np.ones((3, 784), np.float32),
            "my": np.array([1, 2, 3]), "wx": np.zeros((0, 784), np.float32), "wy": np.zeros(0, np.int64),
            "wid": np.zeros(0, np.int64)}
    names = tuple(good)
    arraycache.save(tmp_path / "r.npz", good)
    assert arraycache.load(tmp_path / "r.npz", names, rehearsal_sets._problem) is not None
    for key, value in (("my", np.array([1, 2, 77])), ("mx", np.full((3, 784), np.nan, np.float32)),
                       ("rx", np.full((4, 784), 2.0, np.float32))):
        arraycache.save(tmp_path / "r.npz", good | {key: value})
        assert arraycache.load(tmp_path / "r.npz", names, rehearsal_sets._problem) is None, key
    arraycache.save(tmp_path / "r.npz", good)
    with np.load(tmp_path / "r.npz") as z:
        edited = {n: z[n] for n in z.files} | {"my": np.array([0, 0, 0])}  # digest left as it was
    np.savez(tmp_path / "r.npz", **edited)
    assert arraycache.load(tmp_path / "r.npz", names, rehearsal_sets._problem) is None


@pytest.mark.parametrize("hostile", ["bomb", "no rows", "object array"])
def test_hostile_sets_with_a_matching_card_are_refused_in_one_line(package: Path, hostile: str) -> None:
    """A file and card both rewritten: refused before inflating gigabytes, running code or indexing
    an empty array."""
    import hashlib
    import io

    path, card = _sets(package)
    refs = rehearsal.read(path, card["rehearsal"], "mnist-mlp")
    arrays = {n: np.zeros((0, 784) if n.endswith("_x") else 0, np.uint8) for n in rehearsal.NAMES}
    arrays["writer_ids"] = np.zeros(0, np.int64)
    if hostile == "bomb":
        arrays["replay_x"] = np.zeros((100_000, 784), np.uint8)  # 78 MB of zeros, ~80 KB compressed
    elif hostile == "object array":
        arrays["mnist_y"] = np.array([{"a": 1}], dtype=object)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    path.write_bytes(buf.getvalue())
    card["rehearsal"] = card["rehearsal"] | {"sha256": hashlib.sha256(buf.getvalue()).hexdigest(),
                                             "replay": len(refs.replay)}
    (package / "mnist-mlp.json").write_text(json.dumps(card))
    with pytest.raises(DataError) as exc:
        rehearsal.sets_for(model.load_model())
    assert "\n" not in str(exc.value) and "reinstall" in str(exc.value)


def test_learn_cache_with_nan_rows_is_made_again(tmp_path: Path) -> None:
    from gemmpad.data import drawings

    _save_ones(tmp_path / "d", 2)
    cache = finetune.LearnCache()
    examples = drawings.read_folder(tmp_path / "d", say=lambda s: None, known=cache.drawings)
    finetune.user_rows(examples, finetune.Settings(), cache)
    cache.save(tmp_path / "c", examples)
    assert finetune.LearnCache.load(tmp_path / "c").drawings  # read back as written
    (file,) = (tmp_path / "c").glob("learn-*.npz")
    with np.load(file) as z:
        arrays = {n: z[n] for n in z.files if n != arraycache.DIGEST}
    arrays["rows"][0, 0] = np.nan
    arraycache.save(file, arrays)  # a digest that matches: only the checks can refuse it
    back = finetune.LearnCache.load(tmp_path / "c")
    assert back.drawings == {} and back._rows == {}
