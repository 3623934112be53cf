"""The CLI wiring: errors become one readable line and an exit status, never a traceback."""

from __future__ import annotations

import pytest

from gemmpad import cli
from gemmpad.errors import GemmpadError


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in cli.COMMANDS:
        assert name in out


def test_user_error_is_one_line_exit_2(monkeypatch, capsys):
    def boom(args):
        raise GemmpadError("the model file is corrupt")

    monkeypatch.setattr("gemmpad.info.run", boom)
    assert cli.main(["info"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "gemmpad: error: the model file is corrupt"


def test_bug_is_one_line_unless_debugging(monkeypatch, capsys):
    def bug(args):
        raise KeyError("oops")

    monkeypatch.setattr("gemmpad.info.run", bug)
    monkeypatch.delenv("GEMMPAD_DEBUG", raising=False)
    assert cli.main(["info"]) == 3
    err = capsys.readouterr().err
    assert "internal error" in err and "Traceback" not in err
    monkeypatch.setenv("GEMMPAD_DEBUG", "1")
    with pytest.raises(KeyError):
        cli.main(["info"])


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2
