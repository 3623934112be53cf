"""`gemmpad predict` end to end on image files written here: both polarities,
several sizes and formats, a directory, and files that must fail alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from gemmpad.engine import available_backends
from gemmpad.model import default_model_path
from tests.cli_helpers import run_cli
from tests.test_engine import random_model

FIELDS = {"file", "digit", "confidence", "probabilities", "backend", "kernel", "latency_us"}


def draw_one(size: tuple[int, int], dark_ink: bool) -> Image.Image:
    """A handwritten-looking "1": a thick slanted bar."""
    w, h = size
    paper, ink = (255, 0) if dark_ink else (0, 255)
    im = Image.new("L", (w, h), paper)
    ImageDraw.Draw(im).line([(w * 0.55, h * 0.15), (w * 0.45, h * 0.85)], fill=ink, width=max(2, w // 10))
    return im


@pytest.fixture
def model_file(tmp_path: Path, rng: np.random.Generator) -> Path:
    path = tmp_path / "model" / "m.npz"
    path.parent.mkdir()
    random_model(rng).save(path)
    return path


@pytest.fixture
def images(tmp_path: Path) -> dict[str, Path]:
    d = tmp_path / "imgs"
    d.mkdir()
    files = {
        "dark.png": draw_one((280, 280), True),
        "light.png": draw_one((28, 28), False),
        "wide.jpg": draw_one((300, 120), True).convert("RGB"),
        "small.bmp": draw_one((40, 64), False),
    }
    out = {}
    for name, im in files.items():
        im.save(d / name)
        out[name] = d / name
    rgba = Image.new("RGBA", (100, 100), (0, 0, 0, 0))  # dark ink on a transparent canvas
    ImageDraw.Draw(rgba).line([(50, 10), (50, 90)], fill=(0, 0, 0, 255), width=10)
    rgba.save(d / "alpha.png")
    out["alpha.png"] = d / "alpha.png"
    return out


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_json_for_every_image_in_a_directory(monkeypatch, capsys, images, model_file):
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--backend", "numpy", "--model", str(model_file), "--json",
                 str(images["dark.png"].parent))
    out = json_lines(out)
    assert rc == 0
    assert sorted(Path(r["file"]).name for r in out) == sorted(images)
    for r in out:
        assert set(r) == FIELDS, r
        assert r["backend"] == "numpy" and r["kernel"] == "numpy"
        assert len(r["probabilities"]) == 10 and abs(sum(r["probabilities"]) - 1) < 1e-4
        assert r["digit"] == int(np.argmax(r["probabilities"]))
        assert r["confidence"] == pytest.approx(max(r["probabilities"]), abs=1e-6)
        assert r["latency_us"] > 0


def test_polarity_does_not_matter(monkeypatch, capsys, tmp_path, model_file):
    draw_one((200, 200), True).save(tmp_path / "a.png")
    draw_one((200, 200), False).save(tmp_path / "b.png")
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--backend", "numpy", "--model", str(model_file), "--json",
                 str(tmp_path / "a.png"), str(tmp_path / "b.png"))
    a, b = json_lines(out)
    assert rc == 0
    np.testing.assert_allclose(a["probabilities"], b["probabilities"], atol=1e-5)


def test_bad_files_fail_alone(monkeypatch, capsys, tmp_path, images, model_file):
    bad = tmp_path / "corrupt.png"
    bad.write_bytes(b"not an image at all")
    blank = tmp_path / "blank.png"
    Image.new("L", (64, 64), 255).save(blank)
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    args = [str(images["dark.png"]), str(bad), str(blank), str(tmp_path / "missing.png"), str(empty_dir),
            str(images["light.png"])]
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--backend", "numpy", "--model", str(model_file), "--json", *args)
    rows = json_lines(out)
    assert rc == 1
    assert [r["file"] for r in rows] == args  # every path answered, in order
    errors = {Path(r["file"]).name: r["error"] for r in rows if "error" in r}
    assert set(errors) == {"corrupt.png", "blank.png", "missing.png", "empty"}
    assert "cannot read image" in errors["corrupt.png"]
    assert "no ink" in errors["blank.png"]
    assert "no such file" in errors["missing.png"]
    assert "Traceback" not in err and "4 file(s) failed" in err
    assert "digit" in rows[0] and "digit" in rows[-1]


def test_table_output(monkeypatch, capsys, images, model_file):
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--backend", "numpy", "--model", str(model_file), str(images["wide.jpg"]),
                 str(images["dark.png"].parent / "nope.bmp"))
    assert rc == 1
    assert "backend numpy, kernel numpy" in out
    assert "wide.jpg" in out and "nope.bmp" in out and "error: no such file" in out


def test_unknown_kernel_and_model(monkeypatch, capsys, images, model_file, tmp_path):
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--model", str(model_file), "--kernel", "no_such", str(images["dark.png"]))
    assert rc == 2
    assert "no_such" in err
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--model", str(tmp_path / "none.npz"), str(images["dark.png"]))
    assert rc == 2
    assert "model file not found" in err


@pytest.mark.skipif(not available_backends()["cuda"], reason="a usable GPU is present")
def test_cuda_without_gpu_is_a_clear_error(monkeypatch, capsys, images, model_file):
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--backend", "cuda", "--model", str(model_file), str(images["dark.png"]))
    assert rc != 0
    assert "cuda" in err.lower() and "unavailable" in err and "Traceback" not in err


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["cuda.mlp_fused", "cuda.01_naive"])
def test_cuda_backend(monkeypatch, capsys, images, model_file, kernel):
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--backend", "cuda", "--kernel", kernel, "--model", str(model_file), "--json",
                 str(images["dark.png"]))
    (row,) = json_lines(out)
    assert rc == 0 and row["backend"] == "cuda" and row["kernel"] == kernel and row["latency_us"] > 0


@pytest.mark.skipif(not default_model_path().exists(), reason="the shipped model models/mnist-mlp.npz is absent")
def test_shipped_model_reads_a_one(monkeypatch, capsys, images):
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--backend", "numpy", "--json", str(images["dark.png"]),
                 str(images["light.png"]))
    rows = json_lines(out)
    assert rc == 0 and [r["digit"] for r in rows] == [1, 1]
