"""Atomic file writes: a crash or a full disk never leaves a half-written file
where a good one was (the shipped model, a benchmark result, a saved drawing).

Every writer goes through atomic_path, which also decides *what* may be replaced:
a symlink is written through to its target (the link stays a link), and a device,
FIFO or socket is refused rather than swapped for a regular file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path

from gemmpad.errors import GemmpadError, OutputFileError


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` on success.

    The temporary file keeps the target's suffix so that writers which pick a
    format by extension (Pillow, matplotlib, numpy.savez) still do.
    """
    target = write_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    os.close(fd)
    try:  # mkstemp makes 0600: keep a replaced file's permissions, else those a plain open() would give
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    os.chmod(tmp, mode)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()


def write_target(path: str | os.PathLike[str]) -> Path:
    """The file a write to `path` should replace: a symlink's final target (so the
    rename lands there and the link survives), or `path` itself. Raises OutputFileError
    for a directory, device, FIFO or socket, or a symlink loop."""
    given = Path(path)
    target = Path(os.path.realpath(given)) if given.is_symlink() else given
    try:
        mode = target.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # a new file (check_writable_dir judges its folder)
        return target
    except OSError as exc:  # a symlink loop, a component that is a file, no permission
        raise OutputFileError(f"{given}: cannot write here ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise OutputFileError(f"{given} is a directory; name a file")
    if not stat.S_ISREG(mode):
        raise OutputFileError(f"{given} is not a regular file (a device, FIFO or socket): refusing to replace it")
    return target


def check_writable_dir(directory: str | os.PathLike[str], what: str) -> Path:
    """Create `directory` if needed and prove a file can be made there, or raise
    GemmpadError naming `what` (the option, e.g. "--out results"). Called before
    minutes of training or benchmarking, so a bad path fails first, not last."""
    d = Path(directory)
    if d.exists() and not d.is_dir():
        raise GemmpadError(f"{what}: {d} is a file, not a directory")
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=d):
            pass
    except OSError as exc:
        raise GemmpadError(f"{what}: cannot write to {d}: {exc.strerror or exc}") from None
    return d


def check_output_file(path: str | os.PathLike[str], what: str, suffixes: Collection[str] | None = None) -> Path:
    """Prove `path` can be written as a file of one of `suffixes` (".png", ...: the
    writers pick the format by suffix), or raise GemmpadError naming `what`; like
    check_writable_dir, before the work rather than after it."""
    p = Path(path)
    try:
        write_target(p)
    except GemmpadError as exc:
        raise GemmpadError(f"{what}: {exc}") from None
    if suffixes is not None and p.suffix.lower() not in suffixes:
        examples = [s for s in (".png", ".jpg", ".pdf", ".svg") if s in suffixes] or sorted(suffixes)[:3]
        raise GemmpadError(f"{what}: the file type comes from the suffix, and {p.suffix or 'no suffix'} is not one "
                           f"that can be written here (e.g. {', '.join(examples)})")
    check_writable_dir(write_target(p).parent, what)
    return p


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    write_bytes(path, text.encode("utf-8"))
