"""Atomic file writes: a crash or a full disk never leaves a half-written file
where a good one was (the shipped model, a benchmark result, a saved drawing).

Every writer goes through atomic_path, which also decides *what* may be replaced:
a symlink is written through to its target (the link stays a link), and a device,
FIFO or socket is refused rather than swapped for a regular file.

Outputs are claimed and written in one policy:
- before the work, check_output_file / check_writable_dir prove every output can be
  written (a card path that is a directory fails in the first second, not after training),
  and check_empty_dir refuses a folder whose old files would be read back as new ones;
  check_output_file makes no folder: a file the user names must be in a folder that exists
  (gemmpad.commands.args.output_path refuses it as the arguments are read), and atomic_path
  makes only gemmpad's own default places' folders, when it writes, so a run that fails or is
  stopped before that leaves no empty folder behind;
- an existing output is replaced only when the user says so: refuse_existing is every
  command's "already exists; pass --force" line, said before the work; where the work is
  long and the folder shared (bench's --out), atomic_path's refuse_as says it again for a
  file that appeared meanwhile, keeping what was written;
- where two writers can meet (two fine-tunes to one --output; the window's Learn and
  `gemmpad train` on the personal model), `claim` holds a filelock on the name for the
  whole run, so the second is refused at once instead of both saying "wrote" and one
  silently replacing the other;
- files that belong together (a model's weights and its card, a drawing's PNG and its
  strokes) are written by atomic_paths as one unit: every temporary is written before
  any rename, so a full disk leaves all the old files and no half pair. The renames are
  still one per file; a kill between them is caught where it matters by the model card's
  weights_sha256 (gemmpad.runtime.model): a card naming other weights is refused on load.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

import filelock

from gemmpad.errors import GemmpadError, OutputFileError


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], refuse_as: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` on success.

    The temporary file keeps the target's suffix so that writers which pick a
    format by extension (Pillow, matplotlib, numpy.savez) still do.

    With `refuse_as` (the option that named the file, e.g. "--out"), a file at `path` by then is
    not replaced: refuse_existing checked before the work, and a file made since (a second run into
    the same folder during a long one) was silently replaced at the end. The temporary is put in
    place by a hard link, which fails where a file exists (see _put_new), and is then kept, named
    in refuse_existing's line (OutputFileError), so that the work written to it is not lost.
    """
    target = write_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_path: Path | None = None
    try:  # from the temporary's creation on: a Ctrl-C at any point below leaves no hidden file behind
        fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}", dir=target.parent)
        tmp_path = Path(tmp)
        os.close(fd)
        try:  # mkstemp makes 0600: keep a replaced file's permissions, else those a plain open() would give
            mode = stat.S_IMODE(target.stat().st_mode)
        except OSError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp_path, mode)
        yield tmp_path
        if refuse_as is None:
            os.replace(tmp_path, target)
        elif not _put_new(tmp_path, target):
            kept, tmp_path = tmp_path, None
            raise OutputFileError(f"{refuse_as}: {path} already exists; pass --force to replace it (it appeared "
                                  f"during the run: this run's {target.name} is kept as {kept})")
    finally:
        if tmp_path is not None:
            with contextlib.suppress(FileNotFoundError):
                tmp_path.unlink()


def _put_new(tmp: Path, target: Path) -> bool:
    """Put the file `tmp` at `target` unless a file is there (False then, `tmp` left as it is): a hard
    link, which the file system refuses atomically where the name exists, then `tmp` unlinked. Where
    the file system has no hard links (FAT, some network file systems), the name is claimed by an
    exclusive create and the file renamed onto the claim."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        return False
    except OSError:  # no hard links here
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            return False
        os.replace(tmp, target)
        return True
    os.unlink(tmp)
    return True


@contextlib.contextmanager
def atomic_paths(*paths: str | os.PathLike[str]) -> Iterator[list[Path]]:
    """Temporaries for several files written as one unit: nothing is renamed until the block
    has written them all, then they are renamed in the order given (name last the file whose
    arrival means "done"); an exception anywhere leaves every old file as it was."""
    with contextlib.ExitStack() as stack:  # exits run last-entered first: enter in reverse to rename in order
        temps = [stack.enter_context(atomic_path(p)) for p in reversed(paths)]
        yield temps[::-1]


@contextlib.contextmanager
def claim(path: str | os.PathLike[str], what: str) -> Iterator[Path]:
    """Hold the output name `path` for this process until the block ends, or raise
    GemmpadError naming `what` when another process holds it now: a second writer is
    refused before its work, not silently overwritten by (or overwriting) the first.

    The lock (filelock: released by the OS if the process dies) is an empty file named by the
    output's absolute path in the user data folder's locks/ (the temp folder where that cannot be
    written): nothing appears beside the output, and it stays after release, since removing it
    could let two processes lock two different files of one name.
    """
    try:
        target = write_target(path)
        lock = filelock.FileLock(_lock_dir() / f"{hashlib.sha256(bytes(target.resolve())).hexdigest()[:32]}.lock")
        lock.acquire(timeout=0)
    except filelock.Timeout:
        raise GemmpadError(f"{what}: another gemmpad is writing {path} now; wait for it, "
                           "or name another file") from None
    except GemmpadError as exc:  # a directory, device or loop where the file should be
        raise GemmpadError(f"{what}: {exc}") from None
    except OSError as exc:
        raise GemmpadError(f"{what}: cannot write here ({exc.strerror or exc})") from None
    try:
        yield target
    finally:
        lock.release()


def _lock_dir() -> Path:
    """Where claim keeps its lock files: locks/ in the user data folder, else in the temp folder."""
    from gemmpad.data import userdata

    for d in (userdata.data_dir() / "locks", Path(tempfile.gettempdir()) / f"gemmpad-locks-{getattr(os, 'getuid', lambda: 0)()}"):
        with contextlib.suppress(OSError):
            d.mkdir(parents=True, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
    raise OSError(f"no folder for a lock file ({userdata.data_dir() / 'locks'} cannot be written)")


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


def check_writable_dir(directory: str | os.PathLike[str], what: str, make: bool = True) -> Path:
    """Prove a file can be made in `directory`, or raise GemmpadError naming `what` (the
    option, e.g. "--out results"). Called before minutes of training or benchmarking, so a
    bad path fails first, not last. With `make` the folder is created now; without, nothing
    is: a folder not there yet is proved possible in its nearest existing parent, and the
    writer makes it when it writes, so a run that fails first leaves no empty folder."""
    d = Path(directory)
    probe = d
    while not make and not os.path.exists(probe) and probe.parent != probe:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise GemmpadError(f"{what}: {probe} is a file, not a directory")
    try:
        if make:
            d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise GemmpadError(f"{what}: cannot write to {d}: {exc.strerror or exc}") from None
    return d


def check_empty_dir(directory: str | os.PathLike[str], what: str) -> Path:
    """Raise GemmpadError naming `what` unless `directory` is missing or an empty folder; creates
    nothing. For an output folder a command then reads back whole (`gemmpad eval --save-paper`
    tests every image in it): files already there would be counted as this run's. The caller
    makes it with check_writable_dir once its other inputs are checked, so a failed run leaves
    no folder behind."""
    d = Path(directory)
    if d.exists() and not d.is_dir():
        raise GemmpadError(f"{what}: {d} is a file, not a directory")
    try:
        if d.is_dir() and any(d.iterdir()):
            raise GemmpadError(f"{what}: {d} is not empty (its files would be counted as this run's); "
                               "name a new or empty folder")
    except OSError as exc:
        raise GemmpadError(f"{what}: cannot read {d}: {exc.strerror or exc}") from None
    return d


def check_output_file(path: str | os.PathLike[str], what: str, suffixes: Collection[str] | None = None) -> Path:
    """Prove `path` can be written as a file of one of `suffixes` (".png", ...: the
    writers pick the format by suffix), or raise GemmpadError naming `what`; like
    check_writable_dir, before the work rather than after it, and making no folder."""
    p = Path(path)
    try:
        write_target(p)
    except GemmpadError as exc:
        raise GemmpadError(f"{what}: {exc}") from None
    if suffixes is not None and p.suffix.lower() not in suffixes:
        examples = [s for s in (".png", ".jpg", ".pdf", ".svg") if s in suffixes] or sorted(suffixes)[:3]
        raise GemmpadError(f"{what}: the file type comes from the suffix, and {p.suffix or 'no suffix'} is not one "
                           f"that can be written here (e.g. {', '.join(examples)})")
    check_writable_dir(write_target(p).parent, what, make=False)
    return p


def refuse_existing(paths: Iterable[str | os.PathLike[str]], option: str, *, force: bool,
                    error: type[GemmpadError] = GemmpadError) -> None:
    """Raise `error` naming `option` and every one of `paths` that exists, unless `force`: no
    command replaces a file it was not told to (the shipped model may be among them). One wording
    for every command, for one file ("--onnx: m.onnx already exists; pass --force to replace it")
    or several (a model and its card). `error` keeps each command's exception type."""
    if force:
        return
    existing = [str(p) for p in dict.fromkeys(map(Path, paths)) if p.exists()]
    if len(existing) == 1:
        raise error(f"{option}: {existing[0]} already exists; pass --force to replace it")
    if existing:
        raise error(f"{option}: {', '.join(existing)} already exist; pass --force to replace them")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes(path: str | os.PathLike[str], data: bytes, refuse_as: str | None = None) -> None:
    """Write `data` to `path` atomically (replacing a file there unless `refuse_as`: see atomic_path)."""
    with atomic_path(path, refuse_as) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | os.PathLike[str], text: str, refuse_as: str | None = None) -> None:
    """Write `text` (UTF-8) to `path` atomically (replacing a file there unless `refuse_as`: see atomic_path)."""
    write_bytes(path, text.encode("utf-8"), refuse_as)
