"""`gemmpad bench latency` finds its drawing where it is run, not by counting folders up from the
installed module (which, in a wheel, pointed outside site-packages; issue 41), and says in one line
what stops it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemmpad.bench import latency
from tests.cli_helpers import run_cli

SUMMARY = {"kernel": "k", "cpu_threads": 1, "kernel_median_us": 1.0, "kernel_p99_us": 1.0,
           "e2e_median_us": 1.0, "e2e_p99_us": 2.0}


def test_the_default_drawing_is_relative_to_the_checkout_it_runs_in() -> None:
    assert not latency.REPLAY.is_absolute()


def test_a_missing_drawing_is_one_line_before_any_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # no assets/ here
    monkeypatch.setattr(latency, "measure", lambda *a, **k: pytest.fail("measured without a drawing"))
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "latency", "--batches", "1")
    assert (rc, out) == (2, "")
    assert err == ("gemmpad: error: --replay assets/screenshot-strokes.json: no such strokes file (run from a "
                   "gemmpad checkout, or name one)\n")


def test_the_named_drawing_is_the_one_replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    drawing = tmp_path / "seven.json"
    drawing.write_text("[]")
    seen = []
    monkeypatch.setattr(latency, "measure", lambda backend, batch, frames, threads, replay: seen.append((batch, replay))
                        or dict(SUMMARY))
    rc, out, _ = run_cli(monkeypatch, capsys, "bench", "latency", "--batches", "1", "4", "--replay", str(drawing),
                         "--json")
    assert rc == 0 and seen == [(1, drawing), (4, drawing)] and '"rows"' in out


@pytest.mark.parametrize("typed, said", [(["--batches", "abc"], "argument --batches: 'abc' is not a whole number"),
                                         (["--frames", "0"], "argument --frames: must be between 1 and 1,000,000"),
                                         (["--backend", "gpu"], "argument --backend: invalid choice: 'gpu'")])
def test_what_was_typed_is_checked_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                               typed: list[str], said: str) -> None:
    """As `python -m gemmpad.bench.latency_bench` it took any --frames and a --batches of 'abc' ended in a
    traceback; as a bench command the parser says it, one line."""
    with pytest.raises(SystemExit) as exc:
        run_cli(monkeypatch, capsys, "bench", "latency", *typed)
    out, err = capsys.readouterr()
    assert (exc.value.code, out) == (2, "") and err.count("\n") == 1 and said in err


def test_a_window_that_cannot_open_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The window's own error (here: no display) is said, with the batch, in one line: it was a RuntimeError."""
    drawing = tmp_path / "seven.json"
    drawing.write_text("[]")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "latency", "--batches", "2", "--frames", "1",
                           "--replay", str(drawing))
    assert (rc, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("gemmpad: error: batch 2: gemmpad app failed: ") and "display" in err.lower()
