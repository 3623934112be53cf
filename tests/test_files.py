"""Atomic writes: the old file survives a failed write, and nothing is left behind."""

from __future__ import annotations

import os
import stat

import pytest

from gemmpad.errors import GemmpadError
from gemmpad.files import atomic_path, check_output_file, check_writable_dir, write_text


def test_write_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "sub" / "out.json"
    write_text(target, "first")
    write_text(target, "second")
    assert target.read_text() == "second"
    assert [p.name for p in target.parent.iterdir()] == ["out.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "model.npz"
    target.write_text("good")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("disk full")
    assert target.read_text() == "good"
    assert [p.name for p in tmp_path.iterdir()] == ["model.npz"]


def test_temp_keeps_suffix_and_permissions_are_ordinary(tmp_path):
    target = tmp_path / "drawing.png"
    with atomic_path(target) as tmp:
        assert tmp.suffix == ".png" and tmp.parent == tmp_path
        tmp.write_bytes(b"x")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask


def test_check_writable_dir_creates_and_leaves_nothing(tmp_path):
    d = check_writable_dir(tmp_path / "a" / "b", "--out a/b")
    assert d.is_dir() and list(d.iterdir()) == []


def test_check_writable_dir_names_the_option(tmp_path):
    (tmp_path / "plain").write_text("a file, not a directory")
    with pytest.raises(GemmpadError, match=r"^--out x: cannot write to .*plain/sub"):
        check_writable_dir(tmp_path / "plain" / "sub", "--out x")
    assert (tmp_path / "plain").read_text() == "a file, not a directory"
    with pytest.raises(GemmpadError, match=r"^--cache plain: .*plain is a file, not a directory"):
        check_writable_dir(tmp_path / "plain", "--cache plain")


def test_check_output_file(tmp_path):
    assert check_output_file(tmp_path / "new" / "a.PNG", "--x", {".png"}) == tmp_path / "new" / "a.PNG"
    with pytest.raises(GemmpadError, match=r"^--x: .* is a directory"):
        check_output_file(tmp_path, "--x", {".png"})
    for name, shown in (("a", "no suffix"), ("a.tmp", ".tmp")):
        with pytest.raises(GemmpadError, match=rf"^--x: the file type comes from the suffix, and {shown} .*e\.g\. \.png"):
            check_output_file(tmp_path / name, "--x", {".png", ".bmp"})
    assert check_output_file(tmp_path / "strokes", "--record") == tmp_path / "strokes"  # any suffix when none is asked