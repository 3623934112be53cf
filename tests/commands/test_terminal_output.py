"""What reaches the terminal from untrusted names (issue 40 #11, #18): control characters
escaped (gemmpad.terminal.printable) wherever a user-named string is printed, and output
that a non-UTF-8 terminal cannot encode escaped instead of failing mid-batch."""

from __future__ import annotations

import io
import sys

import pytest

from gemmpad.commands import cli
from tests.cli_helpers import run_cli


def test_ascii_stdout_escapes_names_instead_of_failing(monkeypatch, capsys, tmp_path):
    """#18: PYTHONIOENCODING=ascii (or LC_ALL=C) made a Greek file name an internal error."""
    out, err = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="ascii", errors="strict"))
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding="ascii", errors="strict"))
    monkeypatch.setattr(cli, "COMMANDS", {"predict": cli.COMMANDS["predict"]})
    rc = cli.main(["predict", "--backend", "numpy", str(tmp_path / "δίσκος.png"), str(tmp_path / "b.png")])
    sys.stdout.flush()
    sys.stderr.flush()
    text, errors = out.getvalue().decode("ascii"), err.getvalue().decode("ascii")
    assert rc == 1, errors  # both files missing: a failure of the inputs, not "internal error" (3)
    assert "\\u03b4\\u03af\\u03c3\\u03ba\\u03bf\\u03c2.png" in text and "b.png" in text
    assert "internal error" not in errors


ESC = "\x1b[2J"  # clears the screen when it reaches a terminal


def test_drawing_folder_lines_escape_control_characters(tmp_path):
    """#11: `train --drawings` printed "skipped dr/3/ESC[2J..." raw (and the window's status line)."""
    from gemmpad.data import drawings

    root = tmp_path / f"dr{ESC}"
    (root / "3").mkdir(parents=True)
    (root / "3" / f"{ESC}.json").write_text("{broken")
    (root / f"x{ESC}").mkdir()
    (root / f"note{ESC}.txt").write_text("")
    lines: list[str] = []
    assert drawings.read_folder(root, say=lines.append) == []
    assert len(lines) == 4 and all("\x1b" not in line and "\\x1b[2J" in line for line in lines), lines


def test_eval_dir_escapes_control_characters(monkeypatch, capsys, tmp_path):
    """#11: `gemmpad eval DIR`: the set's name heads its table, a bad file is named in a warning."""
    import numpy as np
    from PIL import Image

    root = tmp_path / f"set{ESC}"
    (root / "1").mkdir(parents=True)
    Image.fromarray(np.zeros((20, 20), np.uint8)).save(root / "1" / "a.png")
    (root / "1" / f"b{ESC}.png").write_bytes(b"not a png")
    monkeypatch.setattr(cli, "COMMANDS", {"eval": cli.COMMANDS["eval"]})
    rc = cli.main(["eval", str(root)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "\x1b" not in out + err and "set\\x1b[2J" in out and "b\\x1b[2J.png" in err


def test_info_escapes_control_characters_in_user_folders(monkeypatch, capsys, tmp_path):
    """#11: $GEMMPAD_HOME and $GEMMPAD_DRAWINGS are printed by `gemmpad info`."""
    monkeypatch.setenv("GEMMPAD_HOME", str(tmp_path / f"home{ESC}"))
    monkeypatch.setenv("GEMMPAD_DRAWINGS", str(tmp_path / f"dr\r{ESC}"))
    rc, out, err = run_cli(monkeypatch, capsys, "info")
    assert rc == 0, err
    assert "\x1b" not in out and "\r" not in out and "home\\x1b[2J" in out and "dr\\x0d\\x1b[2J" in out


def test_fine_tune_log_lines_are_printable(monkeypatch, capsys):
    """#11: the fine-tune's and training's log lines name --drawings, --output and cache paths."""
    import argparse

    from gemmpad.learn import personal

    seen = {}

    def fake_fine_tune(base, folder, output, settings, engine, insist, data, cache, log):
        log(f"skipped {folder}/3/{ESC}.png: no ink in it")
        seen["ok"] = True
        raise SystemExit(0)

    monkeypatch.setattr(personal, "fine_tune_folder", fake_fine_tune)
    monkeypatch.setattr(personal, "check_target", lambda *a: None)
    shipped = personal.load_model(None)  # a base fine-tune takes (784-100-100-10), whatever --base names
    monkeypatch.setattr(personal, "load_model", lambda path: shipped)
    args = argparse.Namespace(base="m.npz", output="o.npz", force=False, steps=None, lr=None, batch_size=None, seed=None,
                              quiet=False, drawings="dr", trainer="auto", insist=False, data=None, cache=None)
    with pytest.raises(SystemExit):
        personal.run(args)
    out = capsys.readouterr().out
    assert seen and "\x1b" not in out and "\\x1b[2J" in out


def test_counts_agree_in_number():
    """The bench's lines said "1 kernels": every count goes through gemmpad.terminal.counted."""
    from gemmpad.terminal import counted

    assert [counted(n, "kernel") for n in (0, 1, 2)] == ["0 kernels", "1 kernel", "2 kernels"]
    assert counted(1000, "batch-1 call") == "1,000 batch-1 calls" and counted(1, "batch-1 call") == "1 batch-1 call"
    assert counted(5, "drawing", "4d") == "   5 drawings"


def test_display_width_counts_terminal_cells():
    """Tables pad names by the cells a terminal gives them: wide and fullwidth characters (East Asian
    W and F) take two, combining marks none, everything else one."""
    from gemmpad.terminal import display_width

    assert display_width("abc") == 3 and display_width("") == 0
    assert display_width("七.png") == 6 and display_width("Ｆ") == 2 and display_width("한글") == 4
    assert display_width("e\u0301") == 1 and display_width("ｱ") == 1  # a combining acute; halfwidth katakana
