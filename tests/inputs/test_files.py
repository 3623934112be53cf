"""Atomic writes: the old file survives a failed write, and nothing is left behind."""

from __future__ import annotations

import os
import stat

import pytest

from gemmpad.errors import GemmpadError, OutputFileError
from gemmpad.inputs.files import (atomic_path, check_empty_dir, check_output_file, check_writable_dir, refuse_existing,
                                  write_text)


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


@pytest.mark.parametrize("hard_links", [True, False])
def test_refuse_as_keeps_a_file_made_during_the_work_and_the_work(tmp_path, monkeypatch, hard_links):
    """refuse_existing is asked before a long run; a file made at the name meanwhile was replaced at
    the end. With refuse_as it stays, and the written temporary is kept and named in the line (also
    where the file system has no hard links: FAT, some network file systems)."""
    if not hard_links:
        def no_link(src, dst):
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(os, "link", no_link)
    target = tmp_path / "bench-gemm.json"
    write_text(target, "new", refuse_as="--out")  # nothing there: written
    assert target.read_text() == "new" and os.listdir(tmp_path) == ["bench-gemm.json"]
    target.unlink()
    with pytest.raises(OutputFileError) as info:
        with atomic_path(target, "--out") as tmp:
            tmp.write_text("this run's results")
            target.write_text("another run's")  # appears while this one works
    assert target.read_text() == "another run's"
    kept = [p for p in tmp_path.iterdir() if p != target]
    assert len(kept) == 1 and kept[0].read_text() == "this run's results"
    assert str(info.value) == (f"--out: {target} already exists; pass --force to replace it (it appeared during the "
                               f"run: this run's bench-gemm.json is kept as {kept[0]})")


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


def test_check_empty_dir_takes_a_new_or_empty_folder_and_creates_nothing(tmp_path):
    assert check_empty_dir(tmp_path / "a" / "b", "--save-paper a/b") == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()
    assert check_empty_dir(tmp_path, "--save-paper t") == tmp_path
    (tmp_path / "3").mkdir()
    with pytest.raises(GemmpadError, match=r"^--save-paper t: .* is not empty"):
        check_empty_dir(tmp_path, "--save-paper t")
    (tmp_path / "plain").write_text("a file")
    with pytest.raises(GemmpadError, match=r"^--save-paper p: .*plain is a file, not a directory"):
        check_empty_dir(tmp_path / "plain", "--save-paper p")


def test_check_writable_dir_can_make_nothing(tmp_path):
    """A file's folder is made when the file is written: a run that fails before left it empty."""
    assert check_writable_dir(tmp_path / "a" / "b", "--out a/b", make=False) == tmp_path / "a" / "b"
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "plain").write_text("a file, not a directory")
    with pytest.raises(GemmpadError, match=r"^--out x: .*plain is a file, not a directory"):
        check_writable_dir(tmp_path / "plain" / "sub" / "deeper", "--out x", make=False)
    (tmp_path / "shut").mkdir(mode=0o500)
    if not os.access(tmp_path / "shut", os.W_OK):  # (root writes anywhere)
        with pytest.raises(GemmpadError, match=r"^--out y: cannot write to .*shut/new"):
            check_writable_dir(tmp_path / "shut" / "new", "--out y", make=False)


def test_check_output_file(tmp_path):
    assert check_output_file(tmp_path / "new" / "a.PNG", "--x", {".png"}) == tmp_path / "new" / "a.PNG"
    assert list(tmp_path.iterdir()) == []  # its folder is made when it is written
    with pytest.raises(GemmpadError, match=r"^--x: .* is a directory"):
        check_output_file(tmp_path, "--x", {".png"})
    for name, shown in (("a", "no suffix"), ("a.tmp", ".tmp")):
        with pytest.raises(GemmpadError, match=rf"^--x: the file type comes from the suffix, and {shown} .*e\.g\. \.png"):
            check_output_file(tmp_path / name, "--x", {".png", ".bmp"})
    assert check_output_file(tmp_path / "strokes", "--record") == tmp_path / "strokes"  # any suffix when none is asked


def test_refuse_existing_has_one_wording_for_one_file_or_several(tmp_path):
    """Six commands each wrote their own "already exists" line (two said "name another --output",
    one named the model but not the card that was in the way): now one, in the command's error type."""
    model, card = tmp_path / "a.npz", tmp_path / "a.json"
    refuse_existing([model, card], "--output", force=False)  # neither there: nothing to refuse
    card.write_text("{}")
    with pytest.raises(GemmpadError) as info:
        refuse_existing([model, card, card], "--output", force=False)
    assert str(info.value) == f"--output: {card} already exists; pass --force to replace it"
    model.write_text("x")
    with pytest.raises(OutputFileError) as info:
        refuse_existing([model, card], "--output", force=False, error=OutputFileError)
    assert str(info.value) == f"--output: {model}, {card} already exist; pass --force to replace them"
    refuse_existing([model, card], "--output", force=True)


def test_symlinks_are_written_through_to_their_target(tmp_path):
    """Issue 20, finding 7: --record replaced a symlink with a regular file."""
    real = tmp_path / "real" / "strokes.json"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # a replaced file keeps its permissions
    assert sorted(p.name for p in real.parent.iterdir()) == ["strokes.json"]
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "real" / "later.json")
    write_text(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "real" / "later.json").read_text() == "made"


def test_special_files_are_refused_not_replaced(tmp_path):
    """Issue 20, finding 7: as root, --record /dev/full replaced the device node. (A FIFO
    stands in for the device here: replacing it is as wrong and harmless to try.)"""
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    (tmp_path / "via.json").symlink_to(fifo)
    for target in (fifo, tmp_path / "via.json"):
        with pytest.raises(OSError, match="not a regular file .*refusing to replace it") as info:
            write_text(target, "x")  # an OSError too: a writer's `except OSError` reports it like a full disk
        assert isinstance(info.value, GemmpadError)
        with pytest.raises(GemmpadError, match="^--record x: .*not a regular file"):
            check_output_file(target, "--record x")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    with pytest.raises(GemmpadError, match="symbolic links"):
        write_text(loop, "x")
