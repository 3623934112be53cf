"""Reading the files a user names (images, model files, model cards, stroke files):
one way in, so that each check is made once for every kind of file.

- Only regular files are opened by name: a FIFO would block `open()` forever and a
  device (/dev/zero) never ends. A pipe handed over as /dev/fd/N (the shell's
  process substitution, `<(cat x.png)`) is read once, up to the same size cap, and
  given up on when nothing arrives for IDLE_S seconds.
- Every read has a size cap: the whole file is in memory afterwards, so a cap is
  what keeps memory bounded, and the message says which limit was hit.
- Text is UTF-8 or refused (read_text: a README the bench rewrites).
- JSON is checked for nesting depth before it is parsed (the parser would recurse
  once per level), and is read through the same capped path.
The errors are `error` (a GemmpadError subclass the caller picks: ImageError,
ModelFileError...) with the path and the reason in one line.
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import stat
import time
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from gemmpad.errors import GemmpadError

IDLE_S = 30.0  # a pipe that sends nothing for this long is given up on
MAX_JSON_DEPTH = 64  # stroke files need 3 levels, model cards about 5
# Names under which a shell hands over an already open pipe: process substitution and stdin.
_PIPE_NAMES = re.compile(r"^/(dev/fd|proc/self/fd|proc/\d+/fd)/\d+$|^/dev/stdin$")


def open_input(path: str | os.PathLike[str], limit: int, error: type[GemmpadError] = GemmpadError,
               what: str = "file") -> BinaryIO:
    """`path` opened for reading (binary), or `error` naming the path and why not.

    A regular file of at most `limit` bytes is opened as it is (a decoder may read
    only part of it); a pipe is read whole, up to `limit`, and handed back in memory.
    """
    p = Path(path)
    try:
        _check(p, os.stat(p), limit, what)  # before opening: opening a device can itself do things
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO nobody writes to: returns, not waits
    except FileNotFoundError:
        raise error(f"{what} not found: {p}") from None
    except OSError as exc:  # a symlink loop, no permission, a name too long
        raise error(f"{p}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise error(f"{p}: {exc}") from None
    info = os.fstat(fd)
    try:
        pipe = _check(p, info, limit, what)  # what was opened, if the name changed meanwhile
    except ValueError as exc:
        os.close(fd)
        raise error(f"{p}: {exc}") from None
    if not pipe and info.st_size:
        return os.fdopen(fd, "rb")
    # A pipe, or a /proc or /sys file saying 0 bytes (/proc/kmsg would wait forever): read whole now.
    try:
        data = _read_pipe(fd, limit + 1) if pipe else _read_now(fd, limit + 1)
    except TimeoutError:
        raise error(f"{p}: nothing arrived through the pipe for {IDLE_S:g} s") from None
    except BlockingIOError:
        raise error(f"{p}: a special file with nothing to read yet (refused: reading it would wait)") from None
    except OSError as exc:
        raise error(f"{p}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        how = " came through the pipe" if pipe else ""
        raise error(f"{p}: more than {limit:,} bytes{how}, more than {_a(what)} may hold here")
    return io.BytesIO(data)


def _check(p: Path, info: os.stat_result, limit: int, what: str) -> bool:
    """Whether `info` is a shell's pipe (True) or a regular file within `limit` (False);
    ValueError saying why it is neither."""
    pipe = stat.S_ISFIFO(info.st_mode) and bool(_PIPE_NAMES.match(os.path.abspath(p)))
    if stat.S_ISDIR(info.st_mode):
        raise ValueError(f"is a directory, not {_a(what)}")
    if not (stat.S_ISREG(info.st_mode) or pipe):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
        raise ValueError(f"is {kind}, not a regular file (refused: reading it could block or never end)")
    if not pipe and info.st_size > limit:
        raise ValueError(f"{info.st_size:,} bytes, more than {_a(what)} may hold here ({limit:,})")
    return pipe


def _a(what: str) -> str:
    """`what` with its indefinite article ("an image file", "a model file")."""
    return f"{'an' if what[:1] in 'aeiou' else 'a'} {what}"


def read_input(path: str | os.PathLike[str], limit: int, error: type[GemmpadError] = GemmpadError,
               what: str = "file") -> bytes:
    """The bytes of `path` (open_input's checks), at most `limit` of them."""
    with open_input(path, limit, error, what) as f:
        try:
            data = read_at_most(f, limit + 1)
        except OSError as exc:
            raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:  # a file that grew while it was read
        raise error(f"{path}: more than {limit:,} bytes, more than {_a(what)} may hold here")
    return data


def read_at_most(f: BinaryIO, n: int) -> bytes:
    """Up to `n` bytes of `f`, read in chunks: f.read(n) sets aside all `n` bytes at once,
    a gigabyte for a header that merely claims one."""
    parts: list[bytes] = []
    size = 0
    while size < n and (chunk := f.read(min(1 << 20, n - size))):
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def _read_now(fd: int, limit: int) -> bytes:
    """Read a non-blocking file to its end (or `limit`); BlockingIOError if it has nothing yet."""
    parts: list[bytes] = []
    size = 0
    while size < limit and (chunk := os.read(fd, min(1 << 20, limit - size))):
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def _read_pipe(fd: int, limit: int) -> bytes:
    """Read a non-blocking pipe to its end (or `limit`), waiting at most IDLE_S for each chunk."""
    parts: list[bytes] = []
    size = 0
    while size < limit:
        ready, _, _ = select.select([fd], [], [], IDLE_S)
        if not ready:
            raise TimeoutError
        try:
            chunk = os.read(fd, min(1 << 20, limit - size))
        except BlockingIOError:
            time.sleep(0.01)
            continue
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def read_text(path: str | os.PathLike[str], limit: int, error: type[GemmpadError] = GemmpadError,
              what: str = "text file") -> str:
    """The UTF-8 text of `path` (open_input's checks: a FIFO or /dev/zero is refused, not read)."""
    data = read_input(path, limit, error, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a valid {what} (not UTF-8: {exc.reason} at byte {exc.start})") from None


def load_json(path: str | os.PathLike[str], limit: int, error: type[GemmpadError] = GemmpadError,
              what: str = "JSON file", max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse a UTF-8 JSON file of at most `limit` bytes and `max_depth` levels of nesting
    (a caller whose files are shallow says so: whatever nests deeper is not one of them)."""
    text = read_text(path, limit, error, what)
    depth = json_depth(text)
    if depth > max_depth:
        raise error(f"{path}: not a valid {what} (nested {depth} levels deep, at most {max_depth})")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError includes int() past 4300 digits
        raise error(f"{path}: not a valid {what} ({exc})") from None


_OPEN, _CLOSE = np.frombuffer(b"[{", np.uint8), np.frombuffer(b"]}", np.uint8)
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def json_depth(text: str) -> int:
    """The deepest bracket nesting of JSON text, strings skipped (a linear scan, no recursion)."""
    b = np.frombuffer(_STRINGS.sub("", text).encode("utf-8"), dtype=np.uint8)
    steps = np.isin(b, _OPEN).astype(np.int64) - np.isin(b, _CLOSE)
    return int(np.cumsum(steps).max(initial=0))
