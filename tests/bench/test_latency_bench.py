"""gemmpad.bench.latency_bench finds its drawing where it is run, not by counting folders up from
the installed module (which, in a wheel, pointed outside site-packages; issue 41)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmpad.bench import latency_bench


def test_the_default_drawing_is_relative_to_the_checkout_it_runs_in() -> None:
    assert not latency_bench.REPLAY.is_absolute()


def test_a_missing_drawing_is_one_line_before_any_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # no assets/ here
    monkeypatch.setattr(latency_bench, "measure", lambda *a, **k: pytest.fail("measured without a drawing"))
    with pytest.raises(SystemExit) as exc:
        latency_bench.main(["--batches", "1"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert exc.value.code == 2 and "--replay assets/screenshot-strokes.json: no such strokes file" in err


def test_the_named_drawing_is_the_one_replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawing = tmp_path / "seven.json"
    drawing.write_text("[]")
    seen = []
    summary = {"kernel": "k", "cpu_threads": 1, "kernel_median_us": 1.0, "kernel_p99_us": 1.0,
               "e2e_median_us": 1.0, "e2e_p99_us": 2.0}
    monkeypatch.setattr(latency_bench, "measure", lambda backend, batch, frames, threads, replay: seen.append(replay)
                        or dict(summary))
    assert latency_bench.main(["--batches", "1", "--replay", str(drawing), "--json"]) == 0
    assert seen == [drawing]
