"""`gemmpad data`: which data sets are here (`status`), and getting them (`fetch`).

`fetch` downloads each published file with pooch, trying the sources in order
(datafind.MIRRORS: folders holding the file, or .Z/.zip archives holding it):
pooch streams into a temporary file beside the destination, checks the hash, and
only then renames it into place, so a failed or interrupted download never leaves
a partial file under the real name, nor an empty folder it made. A file already
there with the right hash is kept, so a second run resumes a set file by file where
the first stopped; a file cut off half-way is not resumed byte by byte but
downloaded again from the start, as is one with the wrong hash. Each failure is said in one line: the host, and the
HTTP status, the timeout, the short body or the checksum mismatch.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gemmpad.data import datafind
from gemmpad.data.datafind import CATALOG, MIRRORS, Remote
from gemmpad.errors import DataError
from gemmpad.inputs.files import check_writable_dir

SETS = (datafind.MNIST, datafind.PENDIGITS)
TIMEOUT_S = 30.0  # connect and read, per attempt: a mirror that stops answering is left for the next one
RETRIES = 2  # more attempts per mirror after a timeout, a dropped connection or a server error (5xx)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    st = sub.add_parser("status", help="which data sets are found where, and whether they are the published files")
    st.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    f = sub.add_parser("fetch", help="download MNIST and/or pendigits from their published sources")
    f.add_argument("which", choices=(*SETS, "all"), metavar="SET", help=f"the data set to get: {', '.join((*SETS, 'all'))} ('all': both)")
    f.add_argument("--dir", metavar="DIR",
                   help=f"folder to write DIR/{datafind.MNIST} and DIR/{datafind.PENDIGITS} in (default: the one "
                        "gemmpad looks in, inside your user data folder)")


class _Failure(Exception):
    """One attempt at one URL went wrong; `transient` says whether trying it again may help."""

    def __init__(self, message: str, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


def _host(url: str) -> str:
    return urlsplit(url).netloc or url


def _describe(url: str, exc: BaseException, timeout: float) -> _Failure:
    """The failure of one attempt as "<host>: <what>", the way a user can act on it."""
    import requests

    host = _host(url)
    if isinstance(exc, _Failure):
        return exc
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        code = exc.response.status_code
        return _Failure(f"{host}: HTTP {code} {exc.response.reason or ''}".rstrip(), transient=code >= 500)
    if isinstance(exc, requests.Timeout) or "timed out" in str(exc).lower():
        return _Failure(f"{host}: no answer within {timeout:g} s", transient=True)
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return _Failure(f"{host}: the connection broke before the whole file came", transient=True)
    if isinstance(exc, requests.ConnectionError):
        return _Failure(f"{host}: cannot connect ({type(exc).__name__})", transient=True)
    if isinstance(exc, ValueError) and "hash" in str(exc):
        return _Failure(f"{host}: checksum mismatch (the file is not the published one)", transient=False)
    if isinstance(exc, OSError):
        return _Failure(f"{host}: download stopped here: {exc.strerror or exc}", transient=False)
    return _Failure(f"{host}: {type(exc).__name__}: {exc}", transient=False)


def _sized(size: int | None, timeout: float, progress: bool) -> Callable[..., None]:
    """pooch's HTTP downloader, then a size check (when the size is known): a server that
    sends fewer bytes than the file has, without a Content-Length to notice it by, is
    named as such and not only as a checksum mismatch."""
    import pooch

    http = pooch.HTTPDownloader(progressbar=progress, timeout=timeout)

    def download(url: str, output_file: str, pooch_obj: Any, check_only: bool = False) -> None:
        http(url, output_file, pooch_obj)
        got = Path(output_file).stat().st_size
        if size is not None and got != size:
            raise _Failure(f"{_host(url)}: {'truncated' if got < size else 'too long'}: "
                           f"{got:,} bytes of {size:,}", transient=got < size)

    return download


def _unpack(archive: Path, remote: Remote, url: str) -> bytes:
    """The catalog file's bytes from a downloaded archive: a Unix `compress` (.Z) file, or a
    zip holding the file or its .Z (how UCI publishes pendigits today)."""
    import unlzw3

    packed = archive.read_bytes()
    if url.endswith(".zip"):
        try:
            with zipfile.ZipFile(archive) as z:
                names = {Path(n).name: n for n in z.namelist()}
                member = names.get(remote.name) or names.get(remote.name + ".Z")
                if member is None:
                    raise _Failure(f"{_host(url)}: the archive holds no {remote.name}", transient=False)
                packed = z.read(member)
                if not member.endswith(".Z"):
                    return packed
        except (zipfile.BadZipFile, OSError) as exc:
            raise _Failure(f"{_host(url)}: not a readable zip archive ({exc})", transient=False) from None
    try:
        return bytes(unlzw3.unlzw(packed))
    except (ValueError, TypeError, IndexError) as exc:
        raise _Failure(f"{_host(url)}: not a readable .Z (compress) file ({exc})", transient=False) from None


def _from_archive(remote: Remote, dest: Path, url: str, timeout: float, progress: bool) -> Path:
    """Download the archive at `url` into a scratch folder beside `dest`, take the file out,
    check its size and hash, and only then rename it into place; the scratch folder goes
    in every case."""
    import pooch

    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=dest) as scratch:
        name = urlsplit(url).path.rsplit("/", 1)[-1] or "archive"
        archive = Path(pooch.retrieve(url, None, fname=name, path=scratch, downloader=_sized(None, timeout, progress)))
        body = _unpack(archive, remote, url)
        if len(body) != remote.size:
            raise _Failure(f"{_host(url)}: the archive's {remote.name} has {len(body):,} bytes, not {remote.size:,}",
                           transient=False)
        out = Path(scratch) / remote.name
        out.write_bytes(body)
        if datafind.file_hash(out, remote.known_hash) != remote.known_hash:
            raise _Failure(f"{_host(url)}: checksum mismatch (the archive's {remote.name} is not the published one)",
                           transient=False)
        os.replace(out, dest / remote.name)
    return dest / remote.name


def fetch_file(remote: Remote, dest: Path, sources: Sequence[str], timeout: float = TIMEOUT_S,
               retries: int = RETRIES, progress: bool = True) -> Path:
    """`dest`/`remote.name`, downloaded from the first source that serves the right file.
    A source ending in "/" is a folder that holds the file under its name; one ending in
    .Z or .zip is an archive that holds it. Raises DataError naming every source's failure."""
    import pooch

    pooch.get_logger().setLevel(logging.WARNING)  # our own lines say what happens
    failures = []
    for source in sources:
        url = source + remote.name if source.endswith("/") else source
        for attempt in range(retries + 1):
            try:
                if url.endswith((".Z", ".zip")):
                    return _from_archive(remote, dest, url, timeout, progress)
                return Path(pooch.retrieve(url, remote.known_hash, fname=remote.name, path=dest,
                                           downloader=_sized(remote.size, timeout, progress)))
            except Exception as exc:  # requests and pooch raise many types; each is described below
                failure = _describe(url, exc, timeout)
                if not failure.transient or attempt == retries:
                    failures.append(str(failure))
                    break
                time.sleep(min(2**attempt, 8))
    raise DataError(f"could not fetch {remote.name}: {'; '.join(failures)}")


def fetch(which: str, directory: str | None = None, mirrors: dict[str, Sequence[str]] | None = None,
          timeout: float = TIMEOUT_S, retries: int = RETRIES, progress: bool = True,
          say: Callable[[str], None] = print) -> list[Path]:
    """Every file of the set(s) `which` into <directory or datafind.fetch_root()>/<set>/; returns their paths.
    `mirrors` replaces the published sources (the tests' local server)."""
    root = Path(directory) if directory else datafind.fetch_root()
    got = []
    for name in SETS if which == "all" else (which,):
        new = _missing(root / name)
        dest = check_writable_dir(root / name, "--dir" if directory else "the data folder")  # before any download
        try:
            for remote in CATALOG[name]:
                target = dest / remote.name
                if target.is_file() and datafind.file_hash(target, remote.known_hash) == remote.known_hash:
                    say(f"{name}: {remote.name} already there and checked")
                    got.append(target)
                    continue
                say(f"{name}: downloading {remote.name} ({remote.size / 1e6:.1f} MB)")
                got.append(fetch_file(remote, dest, (mirrors or MIRRORS)[name], timeout, retries, progress))
        except BaseException:  # a failure or a Ctrl-C: the folders made for this set go again if nothing came
            for folder in new:
                with contextlib.suppress(OSError):  # (not empty: a file of the set came, kept for the next run)
                    folder.rmdir()
            raise
        say(f"{name}: done, in {dest}")
    return got


def _missing(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist yet, deepest first."""
    missing = []
    while not os.path.lexists(folder) and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return missing


def run(args: argparse.Namespace) -> int:
    if args.action == "status":
        info = datafind.status()
        if args.json:
            import json

            print(json.dumps(info, indent=2))
        else:
            for line in datafind.status_lines(info):
                print(line)
        return 0 if all(s["found"] and s["ok"] for s in info.values()) else 1
    fetch(args.which, args.dir, say=lambda s: print(s, file=sys.stderr))
    if args.dir:  # a folder of the user's choosing is not searched: say how to point gemmpad at it
        root = Path(args.dir).resolve()
        print(f"to use it: export GEMMPAD_PENDIGITS={root / datafind.PENDIGITS}" if args.which == datafind.PENDIGITS
              else f"to use it: export GEMMPAD_DATA={root / datafind.MNIST}")
    return 0
