"""Reading user-named files (gemmpad.inputs.reads): regular files only, pipes from the shell
read once with a cap, JSON bounded in size and depth (issue 20, findings 5 and 8)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gemmpad.errors import GemmpadError, ImageError
from gemmpad.inputs.reads import MAX_JSON_DEPTH, json_depth, load_json, read_input
from tests.hostile_files import pipe_with


def test_regular_file_and_its_cap(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"x" * 100)
    assert read_input(tmp_path / "a.bin", 100) == b"x" * 100
    with pytest.raises(ImageError, match=r"a.bin: 100 bytes, more than an? image file may hold here \(99\)"):
        read_input(tmp_path / "a.bin", 99, ImageError, "image file")


def test_a_named_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "f.png"
    os.mkfifo(fifo)
    with pytest.raises(ImageError, match="is a FIFO, not a regular file"):
        read_input(fifo, 1 << 20, ImageError)


def test_devices_and_directories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(GemmpadError, match="is a device or socket"):
        read_input("/dev/zero", 1 << 20)
    with pytest.raises(GemmpadError, match="is a directory"):
        read_input(tmp_path, 1 << 20)


def test_symlink_loop_and_missing_say_so(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(GemmpadError, match="symbolic links"):
        read_input(tmp_path / "a", 10)
    with pytest.raises(GemmpadError, match="file not found"):
        read_input(tmp_path / "none", 10)


def test_process_substitution_is_read_once_with_a_cap() -> None:
    name, t = pipe_with(b"y" * 50_000)
    try:
        assert read_input(name, 60_000) == b"y" * 50_000
    finally:
        os.close(int(name.rsplit("/", 1)[1]))
    t.join(5)
    name, t = pipe_with(b"y" * 200_000)
    try:
        with pytest.raises(GemmpadError, match="more than 100,000 bytes came through the pipe"):
            read_input(name, 100_000)
    finally:
        os.close(int(name.rsplit("/", 1)[1]))


def test_json_depth_is_bounded_without_recursion(tmp_path: Path) -> None:
    assert json_depth('[[1, "[[[[{"], {"a": [2]}]') == 3
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)  # json.loads: RecursionError, an internal error
    with pytest.raises(GemmpadError, match=f"nested 100000 levels deep, at most {MAX_JSON_DEPTH}"):
        load_json(deep, 1 << 20)
    (tmp_path / "ok.json").write_text('{"a": [[1, 2]], "b": "]]]"}')
    assert load_json(tmp_path / "ok.json", 100) == {"a": [[1, 2]], "b": "]]]"}
    (tmp_path / "digits.json").write_text("1" * 5000)  # past int()'s digit limit: ValueError, not a crash
    with pytest.raises(GemmpadError, match="not a valid"):
        load_json(tmp_path / "digits.json", 1 << 20)


def test_unreadable_files_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 11: an unreadable model was "no zip archive". (Root reads everything: simulated.)"""
    from gemmpad.inputs import reads
    from gemmpad.errors import ModelFileError
    from gemmpad.runtime.model import load_model

    (tmp_path / "m.npz").write_bytes(b"PK")

    def denied(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(reads.os, "open", denied)
    with pytest.raises(ModelFileError, match=r"m.npz: cannot read \(Permission denied\)$"):
        load_model(tmp_path / "m.npz")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_files_that_say_zero_bytes_are_read_whole_or_refused_at_once(tmp_path: Path) -> None:
    """/proc files report 0 bytes: read whole up to the cap; an empty file is empty, not an error;
    /proc/kmsg (nothing to read yet) was an AttributeError from deep in Pillow."""
    assert b"Name:" in read_input("/proc/self/status", 1 << 20, ImageError)
    with pytest.raises(ImageError, match="more than 16 bytes"):
        read_input("/proc/self/status", 16, ImageError)
    (tmp_path / "empty.png").write_bytes(b"")
    assert read_input(tmp_path / "empty.png", 1 << 20, ImageError) == b""
    if os.path.exists("/proc/kmsg"):  # root: nothing to read yet; others: no permission; never a hang
        with pytest.raises(ImageError, match="nothing to read yet|cannot read"):
            read_input("/proc/kmsg", 1 << 20, ImageError)
