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
    assert err == ("gemmpad: error: --replay assets/screenshot-strokes.json: no such strokes file (the default is a "
                   "gemmpad checkout's: run from one, or name a drawing that `gemmpad app --record FILE` saved)\n")
    # a named one that is not there is only that: "or name one" told the user to do what they did
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "latency", "--replay", "nofile.json")
    assert (rc, err) == (2, "gemmpad: error: --replay nofile.json: no such strokes file\n")


def test_the_named_drawing_is_the_one_replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    drawing = tmp_path / "seven.json"
    drawing.write_text("[]")
    monkeypatch.setattr("gemmpad.ui.app.display_problem", lambda: "")  # (measure, which would open windows, is faked)
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


def test_no_display_is_one_line_before_any_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """With no display each batch's window said the window's own long line, about `gemmpad app` and
    `gemmpad predict`: said once now, before any window, with this command's way out."""
    drawing = tmp_path / "seven.json"
    drawing.write_text("[]")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setattr(latency, "measure", lambda *a, **k: pytest.fail("a window without a display"))
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "latency", "--replay", str(drawing))
    assert (rc, out) == (2, "")
    assert err == ("gemmpad: error: no display (DISPLAY is not set): the latency is the window's, which needs a "
                   "display; run it under a virtual one with `xvfb-run -a gemmpad bench latency ...`\n")


def test_a_window_that_cannot_open_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The window's own error (here: no display, which the command's own check was told it had) is said,
    with the batch, in one line: it was a RuntimeError."""
    drawing = tmp_path / "seven.json"
    drawing.write_text("[]")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr("gemmpad.ui.app.display_problem", lambda: "")
    rc, out, err = run_cli(monkeypatch, capsys, "bench", "latency", "--batches", "2", "--frames", "1",
                           "--replay", str(drawing))
    assert (rc, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("gemmpad: error: batch 2: gemmpad app failed: ") and "display" in err.lower()
