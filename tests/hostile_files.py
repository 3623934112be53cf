"""Files a hostile or careless user hands over (issue 20): a FIFO nobody writes to, a pipe
as the shell's process substitution gives it, a PNG with a broken chunk. Shared by the
tests of the loaders and of the commands that use them."""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path


def fifo(path: Path, escape_after_s: float = 20.0) -> threading.Event:
    """mkfifo `path`; if nothing set the returned event within `escape_after_s`, open the FIFO
    for writing once, so that code that (wrongly) blocks on it fails its test instead of hanging."""
    os.mkfifo(path)
    done = threading.Event()

    def escape() -> None:
        if not done.wait(escape_after_s):
            os.close(os.open(path, os.O_RDWR))  # never blocks; a blocked reader then sees end of file

    threading.Thread(target=escape, daemon=True).start()
    return done


def pipe_with(data: bytes) -> tuple[str, threading.Thread]:
    """A pipe as the shell's <(...) gives it: /dev/fd/N with a writer on the other end."""
    r, w = os.pipe()

    def write() -> None:
        try:
            os.write(w, data)
        except BrokenPipeError:  # the reader stopped at its cap
            pass
        finally:
            os.close(w)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return f"/dev/fd/{r}", t


def broken_idat(png: bytes, delta: int = -8) -> bytes:
    """The PNG with its IDAT chunk's length field off by `delta` bytes (Pillow: SyntaxError)."""
    at = png.index(b"IDAT") - 4
    (length,) = struct.unpack(">I", png[at : at + 4])
    return png[:at] + struct.pack(">I", length + delta) + png[at + 4 :]


@contextlib.contextmanager
def allocation_peak() -> Iterator[list[int]]:
    """Trace Python's allocations meanwhile; the yielded list holds the peak (bytes) after:
    a bomb refused or cut short allocates kilobytes, one inflated allocates its size."""
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
