"""Where the data sets are: the one place every command asks for MNIST or pendigits.

Each set is looked for in one order, and the first place that holds it wins:

1. the command's own argument (`--data DIR`, `--pendigits FILE`);
2. the environment: $GEMMPAD_DATA (the MNIST folder), $GEMMPAD_PENDIGITS (the file or its
   folder). Set but wrong is an error that says so: falling back to another copy would
   measure a model on data the user did not choose (issue 40 #19);
3. the folder `gemmpad data fetch` writes (`fetch_root()`, in the user's data folder);
4. for developers and the tests: `shared/data` beside a source checkout.

A set found nowhere raises DataError naming the one command that fixes it
(`gemmpad data fetch mnist`). Messages never name the checkout's or the install's own
folders: on a user's machine those mean nothing and are not where data belongs.

Nothing here downloads (the window must never wait on a network) and nothing heavy is
imported: `gemmpad info` calls `status()`.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from gemmpad.data import userdata
from gemmpad.errors import DataError

MNIST = "mnist"
PENDIGITS = "pendigits"
PENDIGITS_FILE = "pendigits-orig.tra"
MNIST_STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")

# The files as they are published (the .gz names for MNIST), with their size and hash:
# what `gemmpad data fetch` checks a download against. MNIST's are the canonical
# files torchvision and the mirrors serve; pendigits' is the UCI file of the project's
# shared data folder (MD5 28e269fb7eaf8cb51af3f561743a0de5).
# Sources are tried in order: a folder ("/" at the end) holding the file under its name,
# or an archive (.Z, .zip) holding it. UCI publishes pendigits-orig.tra compressed
# (.tra.Z) in its old folder and inside the data set's zip in its new one.
MNIST_MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "https://storage.googleapis.com/cvdf-datasets/mnist/")
UCI_PENDIGITS = "https://archive.ics.uci.edu/ml/machine-learning-databases/pendigits/"
PENDIGITS_MIRRORS = (UCI_PENDIGITS, UCI_PENDIGITS + PENDIGITS_FILE + ".Z",
                     "https://archive.ics.uci.edu/static/public/81/pen+based+recognition+of+handwritten+digits.zip")


@dataclass(frozen=True)
class Remote:
    """One published file: its name (at the source and on disk), size in bytes and pooch-style hash."""

    name: str
    size: int
    known_hash: str


CATALOG: dict[str, tuple[Remote, ...]] = {
    MNIST: (
        Remote("train-images-idx3-ubyte.gz", 9_912_422, "md5:f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        Remote("train-labels-idx1-ubyte.gz", 28_881, "md5:d53e105ee54ea40749a09fcbcd1e9432"),
        Remote("t10k-images-idx3-ubyte.gz", 1_648_877, "md5:9fb629c4189551a2d022fa330f9573f3"),
        Remote("t10k-labels-idx1-ubyte.gz", 4_542, "md5:ec29112dd5afa0611ce80d1b7f02629c"),
    ),
    PENDIGITS: (
        Remote(PENDIGITS_FILE, 3_641_673, "sha256:a66225d68d7d68591e62944df1ad33b3f5aa608e2df2505844b41f5568a80da4"),
    ),
}
MIRRORS: dict[str, tuple[str, ...]] = {MNIST: MNIST_MIRRORS, PENDIGITS: PENDIGITS_MIRRORS}

# MD5 of MNIST's uncompressed files: what tells the real data apart, however it was
# compressed (a re-gzipped copy has another .gz hash and the same content).
MNIST_CONTENT_MD5: dict[str, str] = {
    "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
}

class DataMissing(DataError):
    """A set found nowhere (as opposed to one pointed at wrongly): a caller that can do
    without it may go on, and the message names the `gemmpad data fetch` command."""


FIX = {MNIST: "gemmpad data fetch mnist", PENDIGITS: "gemmpad data fetch pendigits"}


def fetch_root() -> Path:
    """Where `gemmpad data fetch` puts the sets by default: <user data folder>/data/<set>."""
    return userdata.data_dir() / "data"


def _checkout_data() -> Path | None:
    """`shared/data` beside a source checkout (the workshop's layout), or None when this
    code does not run from a checkout (an installed package has no pyproject.toml above it)."""
    repo = Path(__file__).resolve().parents[3]
    if not (repo / "pyproject.toml").is_file():
        return None
    for d in (repo.parent / "shared" / "data", repo.parents[1] / "shared" / "data"):
        if d.is_dir():
            return d
    return None


def _has_mnist(d: Path) -> bool:
    return all((d / stem).is_file() or (d / f"{stem}.gz").is_file() for stem in MNIST_STEMS)


@dataclass(frozen=True)
class Found:
    """Where a set was found and how: `origin` is "--data", "$GEMMPAD_DATA", "fetched" or "checkout"."""

    path: Path
    origin: str


def find_mnist(explicit: str | os.PathLike[str] | None = None) -> Found:
    """The MNIST folder in the search order of the module docstring. An argument or
    $GEMMPAD_DATA is taken as given once it is a folder (a missing file in it is named
    when it is read); the fetched and checkout folders only count when they hold all four files."""
    if explicit:
        d = Path(explicit)
        if not d.is_dir():
            raise DataError(f"--data {d}: not a directory")
        return Found(d, "--data")
    env = os.environ.get("GEMMPAD_DATA")
    if env:
        d = Path(env)
        if not d.is_dir():
            raise DataError(f"$GEMMPAD_DATA={d}: not a directory (unset it to use the data `{FIX[MNIST]}` gets)")
        return Found(d, "$GEMMPAD_DATA")
    fetched = fetch_root() / MNIST
    if _has_mnist(fetched):
        return Found(fetched, "fetched")
    shared = _checkout_data()
    if shared is not None and _has_mnist(shared / MNIST):
        return Found(shared / MNIST, "checkout")
    raise DataMissing(f"no MNIST data: run `{FIX[MNIST]}` (or set $GEMMPAD_DATA to a folder of the IDX files)")


def mnist_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The MNIST folder (see find_mnist)."""
    return find_mnist(explicit).path


def _pendigits_in(p: Path) -> Path:
    """The file itself, or the pendigits file inside the folder `p`."""
    return p / PENDIGITS_FILE if p.is_dir() else p


def find_pendigits(explicit: str | os.PathLike[str] | None = None) -> Found:
    """The pendigits file in the search order of the module docstring; between the
    environment and the fetched folder, a `pendigits` folder beside $GEMMPAD_DATA's
    (the layout `gemmpad data fetch all --dir DIR` writes)."""
    if explicit:
        f = _pendigits_in(Path(explicit))
        if not f.is_file():
            raise DataError(f"--pendigits {explicit}: no {PENDIGITS_FILE} there")
        return Found(f, "--pendigits")
    env = os.environ.get("GEMMPAD_PENDIGITS")
    if env:
        f = _pendigits_in(Path(env))
        if not f.is_file():
            raise DataError(f"$GEMMPAD_PENDIGITS={env}: no {PENDIGITS_FILE} there (set it to the file or its folder, "
                            f"or unset it to use the data `{FIX[PENDIGITS]}` gets)")
        return Found(f, "$GEMMPAD_PENDIGITS")
    mnist = os.environ.get("GEMMPAD_DATA")
    if mnist and (f := Path(mnist).parent / PENDIGITS / PENDIGITS_FILE).is_file():
        return Found(f, "beside $GEMMPAD_DATA")
    if (f := fetch_root() / PENDIGITS / PENDIGITS_FILE).is_file():
        return Found(f, "fetched")
    shared = _checkout_data()
    if shared is not None and (f := shared / PENDIGITS / PENDIGITS_FILE).is_file():
        return Found(f, "checkout")
    raise DataMissing(f"no pendigits data: run `{FIX[PENDIGITS]}` (or set $GEMMPAD_PENDIGITS to the "
                    f"{PENDIGITS_FILE} file)")


def pendigits_file(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The pendigits file (see find_pendigits)."""
    return find_pendigits(explicit).path


def content_md5(path: Path) -> str:
    """MD5 of a file's content, inflated first when it is gzip (told by its magic, not its name)."""
    digest = hashlib.md5()
    with open(path, "rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        stream = gzip.GzipFile(fileobj=raw) if gz else raw
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def file_hash(path: Path, known_hash: str) -> str:
    """The file's hash in the algorithm of `known_hash` ("md5:..." or "sha256:...")."""
    algorithm = known_hash.partition(":")[0]
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return f"{algorithm}:{digest.hexdigest()}"


def _verdict(bad: list[str]) -> str:
    return "checksums OK" if not bad else f"checksum mismatch: {', '.join(bad)} (not the published file)"


def status() -> dict[str, dict[str, object]]:
    """For each set: found or not, where, how it was found, and whether its content is the
    published data. A set that is missing or wrong carries the command that fixes it."""
    out: dict[str, dict[str, object]] = {}
    try:
        found = find_mnist()
        bad = []
        published = {r.name: r.known_hash for r in CATALOG[MNIST]}
        for stem in MNIST_STEMS:
            f = found.path / stem if (found.path / stem).is_file() else found.path / f"{stem}.gz"
            try:  # the published .gz is checked as it is (fast); anything else by its inflated content
                if f.name in published and file_hash(f, published[f.name]) == published[f.name]:
                    continue
                if content_md5(f) != MNIST_CONTENT_MD5[stem]:
                    bad.append(f.name)
            except (OSError, EOFError, zlib.error):  # a damaged .gz: BadGzipFile is an OSError
                bad.append(f"{f.name} (unreadable)")
        out[MNIST] = {"found": True, "path": str(found.path), "origin": found.origin, "ok": not bad,
                      "detail": _verdict(bad), **({"fix": FIX[MNIST]} if bad else {})}
    except DataError as exc:
        out[MNIST] = {"found": False, "detail": str(exc), "fix": FIX[MNIST]}
    try:
        found = find_pendigits()
        remote = CATALOG[PENDIGITS][0]
        try:
            bad = [] if file_hash(found.path, remote.known_hash) == remote.known_hash else [found.path.name]
        except OSError:
            bad = [f"{found.path.name} (unreadable)"]
        out[PENDIGITS] = {"found": True, "path": str(found.path), "origin": found.origin, "ok": not bad,
                          "detail": _verdict(bad), **({"fix": FIX[PENDIGITS]} if bad else {})}
    except DataError as exc:
        out[PENDIGITS] = {"found": False, "detail": str(exc), "fix": FIX[PENDIGITS]}
    return out


ORIGINS = {"fetched": "fetched", "checkout": "the source checkout's data", "--data": "--data",
           "$GEMMPAD_DATA": "$GEMMPAD_DATA", "$GEMMPAD_PENDIGITS": "$GEMMPAD_PENDIGITS",
           "beside $GEMMPAD_DATA": "beside $GEMMPAD_DATA"}


def status_lines(info: dict[str, dict[str, object]]) -> list[str]:
    """status() as one line per set, for `gemmpad data status` and `gemmpad info`."""
    lines = []
    for name, s in info.items():
        if s["found"]:
            line = f"{name}: {s['path']} ({ORIGINS.get(str(s['origin']), s['origin'])}): {s['detail']}"
            if not s["ok"]:
                line += f"; `{s['fix']}` gets the published files"
        else:
            line = f"{name}: {s['detail']}"
        lines.append(line)
    return lines
