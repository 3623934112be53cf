"""`gemmpad data`: which data sets are here (`status`), and getting them (`fetch`).

`fetch` downloads each published file with pooch, trying the mirrors in order:
pooch streams into a temporary file beside the destination, checks the hash, and
only then renames it into place, so a failed or interrupted download never leaves
a partial file under the real name. A file already there with the right hash is
kept (a second run resumes a set where the first stopped); one with the wrong hash
is downloaded again from the start. Each failure is said in one line: the host,
and the HTTP status, the timeout, the short body or the checksum mismatch.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gemmpad import datafind
from gemmpad.datafind import CATALOG, MIRRORS, Remote
from gemmpad.errors import DataError

SETS = (datafind.MNIST, datafind.PENDIGITS)
TIMEOUT_S = 30.0  # connect and read, per attempt: a mirror that stops answering is left for the next one
RETRIES = 2  # more attempts per mirror after a timeout, a dropped connection or a server error (5xx)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    st = sub.add_parser("status", help="which data sets are found where, and whether they are the published files")
    st.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    f = sub.add_parser("fetch", help="download MNIST and/or pendigits from their published sources")
    f.add_argument("which", choices=(*SETS, "all"), help="the data set to get ('all': both)")
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
        return _Failure(f"{host}: {exc.strerror or exc}", transient=False)
    return _Failure(f"{host}: {type(exc).__name__}: {exc}", transient=False)


def _sized(remote: Remote, timeout: float, progress: bool) -> Callable[..., None]:
    """pooch's HTTP downloader, then a size check: a server that sends fewer bytes than
    the file has, without a Content-Length to notice it by, is named as such and not
    only as a checksum mismatch."""
    import pooch

    http = pooch.HTTPDownloader(progressbar=progress, timeout=timeout)

    def download(url: str, output_file: str, pooch_obj: Any, check_only: bool = False) -> None:
        http(url, output_file, pooch_obj)
        got = Path(output_file).stat().st_size
        if got != remote.size:
            raise _Failure(f"{_host(url)}: {'truncated' if got < remote.size else 'too long'}: "
                           f"{got:,} bytes of {remote.size:,}", transient=got < remote.size)

    return download


def fetch_file(remote: Remote, dest: Path, mirrors: Sequence[str], timeout: float = TIMEOUT_S,
               retries: int = RETRIES, progress: bool = True) -> Path:
    """`dest`/`remote.name`, downloaded from the first mirror that serves the right file
    (or kept when already there and right). Raises DataError with every mirror's failure."""
    import pooch

    pooch.get_logger().setLevel(logging.WARNING)  # our own lines say what happens
    failures = []
    for base in mirrors:
        url = base.rstrip("/") + "/" + remote.name
        for attempt in range(retries + 1):
            try:
                return Path(pooch.retrieve(url, remote.known_hash, fname=remote.name, path=dest,
                                           downloader=_sized(remote, timeout, progress)))
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
    `mirrors` replaces the published URL bases (the tests' local server)."""
    root = Path(directory) if directory else datafind.fetch_root()
    if root.exists() and not root.is_dir():
        raise DataError(f"--dir {root}: not a directory")
    got = []
    for name in SETS if which == "all" else (which,):
        dest = root / name
        for remote in CATALOG[name]:
            target = dest / remote.name
            if target.is_file() and datafind.file_hash(target, remote.known_hash) == remote.known_hash:
                say(f"{name}: {remote.name} already there and checked")
                got.append(target)
                continue
            say(f"{name}: downloading {remote.name} ({remote.size / 1e6:.1f} MB)")
            got.append(fetch_file(remote, dest, (mirrors or MIRRORS)[name], timeout, retries, progress))
        say(f"{name}: done, in {dest}")
    return got


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
