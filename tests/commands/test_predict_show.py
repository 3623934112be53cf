"""`gemmpad predict --show DIR`: the 28x28 input the network saw, beside each result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from gemmpad.inputs.preprocess import preprocess
from gemmpad.commands.predict import SHOW_SCALE, load_image
from tests.cli_helpers import run_cli
from tests.commands.test_predict import draw_one, images, model_file  # noqa: F401 (fixtures)


def test_show_writes_what_the_network_saw(monkeypatch, capsys, images, model_file, tmp_path):  # noqa: F811
    shows = tmp_path / "seen"
    (shows).mkdir()
    (shows / "dark.seen.png").write_bytes(b"someone else's file")  # taken: not overwritten
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--backend", "numpy", "--model", str(model_file), "--json",
                           "--show", str(shows), str(images["dark.png"]), str(images["wide.jpg"]), "/no/such.png")
    assert rc == 1  # the missing file fails alone
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    ok = [r for r in rows if "error" not in r]
    assert len(ok) == 2
    assert (shows / "dark.seen.png").read_bytes() == b"someone else's file"
    for r in ok:
        seen = Path(r["seen"])
        assert seen.parent == shows and seen.name.endswith(".seen.png")
        pixels = np.asarray(Image.open(seen))
        assert pixels.shape == (28 * SHOW_SCALE, 28 * SHOW_SCALE) and pixels.dtype == np.uint8
        expected = preprocess(load_image(images[Path(r["file"]).name])[0])  # (pixels, notes)
        np.testing.assert_allclose(pixels[::SHOW_SCALE, ::SHOW_SCALE] / 255.0, expected, atol=1 / 255)
    assert {Path(r["seen"]).name for r in ok} == {"dark-2.seen.png", "wide.seen.png"}
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--backend", "numpy", "--model", str(model_file),
                           "--show", str(shows), str(images["dark.png"]))
    assert rc == 0 and "dark-3.seen.png" in out  # the table shows where it went


def test_show_into_a_file_is_a_clear_error(monkeypatch, capsys, images, model_file, tmp_path):  # noqa: F811
    f = tmp_path / "plain"
    f.write_text("x")
    rc, out, err = run_cli(monkeypatch, capsys, "predict", "--backend", "numpy", "--model", str(model_file),
                           "--show", str(f), str(images["dark.png"]))
    assert rc == 2 and "--show" in err and "not a folder" in err and "Traceback" not in err
    assert f.read_text() == "x"


def test_many_images_of_one_name_are_named_in_linear_time(monkeypatch, tmp_path):
    """Issue 40 #17: 4,000 x.png in separate folders took 60.8 s, each image testing every
    name the ones before it took. Counted, not timed: the names tried grow linearly."""
    from gemmpad.commands import predict

    shows = tmp_path / "seen"
    shows.mkdir()
    (shows / "x-3.seen.png").write_bytes(b"someone else's")  # a gap in the numbers is still skipped
    probes = []
    real_exists = Path.exists

    def counting_exists(self: Path, *args, **kwargs) -> bool:
        probes.append(self.name)
        return real_exists(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", counting_exists)
    tried: dict[str, int] = {}
    image = np.zeros((28, 28), np.float32)
    names = [predict.write_seen(shows, f"d{i}/x.png", image, tried).name for i in range(60)]
    assert names[:4] == ["x.seen.png", "x-2.seen.png", "x-4.seen.png", "x-5.seen.png"]
    assert len(set(names)) == 60 and (shows / "x-3.seen.png").read_bytes() == b"someone else's"
    assert len(probes) <= 60 + 1  # one look per image, plus the one taken name (quadratic: 1,830)
