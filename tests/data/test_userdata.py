"""gemmpad.data.userdata: the per-user folder of drawings and the personal model, per platform, and
where `gemmpad info` shows it."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from gemmpad.data import userdata


@pytest.mark.parametrize(("platform", "env", "expected"), [
    ("linux", {}, "{home}/.local/share/gemmpad"),
    ("linux", {"XDG_DATA_HOME": "/xdg"}, "/xdg/gemmpad"),
    ("linux", {"XDG_DATA_HOME": "relative"}, "{home}/.local/share/gemmpad"),  # the XDG spec: ignore a relative one
    ("darwin", {}, "{home}/Library/Application Support/gemmpad"),
    ("linux", {"GEMMPAD_HOME": "/portable"}, "/portable"),
])
def test_the_folder_per_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, platform: str,
                                 env: dict[str, str], expected: str) -> None:
    """The folders earlier versions computed by hand (so existing users keep their data),
    now answered by platformdirs; Windows' (%APPDATA%, roaming) is platformdirs' own to test."""
    for var in ("GEMMPAD_HOME", "XDG_DATA_HOME", "APPDATA", "GEMMPAD_DRAWINGS"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("HOME", str(tmp_path))
    if platform == "darwin":
        from platformdirs.macos import MacOS

        monkeypatch.setattr(platformdirs, "PlatformDirs", MacOS)
    folder = userdata.data_dir()
    assert folder == Path(expected.format(home=tmp_path))
    assert userdata.drawings_dir() == folder / "drawings"
    assert userdata.personal_model_path() == folder / "personal-model.npz"
    assert not folder.exists()  # nothing is created until there is something to keep
    monkeypatch.setenv("GEMMPAD_DRAWINGS", str(tmp_path / "mine"))
    assert userdata.drawings_dir() == tmp_path / "mine"


def test_info_names_the_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli_helpers import run_cli

    monkeypatch.setenv("GEMMPAD_HOME", str(tmp_path))
    monkeypatch.delenv("GEMMPAD_DRAWINGS", raising=False)
    rc, out, _ = run_cli(monkeypatch, capsys, "info")
    assert rc == 0 and f"your data: {tmp_path} (drawings in {tmp_path / 'drawings'}; personal model: none yet)" in out
    (tmp_path / "personal-model.npz").write_bytes(b"")
    rc, out, _ = run_cli(monkeypatch, capsys, "info", "--json")
    assert '"personal_model": "' + str(tmp_path / "personal-model.npz") in out


def test_a_gemmpad_home_that_is_a_file_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Not "no drawings yet in FILE/drawings" from fine-tune, or a save failing later in the window."""
    from gemmpad.commands import cli
    from gemmpad.errors import GemmpadError

    home = tmp_path / "seven.png"
    home.write_bytes(b"an image")
    monkeypatch.setenv("GEMMPAD_HOME", str(home))
    monkeypatch.delenv("GEMMPAD_DRAWINGS", raising=False)
    with pytest.raises(GemmpadError, match=f"^GEMMPAD_HOME={home}: not a folder"):
        userdata.data_dir()
    assert cli.main(["fine-tune", "--quiet"]) == 2
    assert home.read_bytes() == b"an image"
