"""Running `gemmpad` subcommands in-process, as the installed script would."""

from __future__ import annotations

import pytest

from gemmpad.commands import cli


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of cli.main(argv), with only the engine's
    commands registered so these tests do not depend on the window or training
    modules being importable. Output printed before the call is discarded."""
    monkeypatch.setattr(cli, "COMMANDS", {k: cli.COMMANDS[k] for k in ("predict", "info", "bench")})
    capsys.readouterr()
    rc = cli.main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err
