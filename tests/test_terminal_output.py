"""What reaches the terminal from untrusted names (issue 40 #11, #18): control characters
escaped (gemmpad.terminal.printable) wherever a user-named string is printed, and output
that a non-UTF-8 terminal cannot encode escaped instead of failing mid-batch."""

from __future__ import annotations

import io
import sys

import pytest

from gemmpad import cli
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
