"""`gemmpad data fetch|status` and the one data finder (gemmpad.data.datafind), against a local
HTTP server started here: there is no network in CI. Small synthetic files stand in for
the published ones (the catalog and the mirrors are swapped), so every case is fast."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import struct
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gemmpad.commands import cli
from gemmpad.data import mnist, datafind, fetch, pendigits
from gemmpad.data.datafind import Remote
from gemmpad.errors import DataError

GOOD = bytes(range(256)) * 40  # 10 kB
OTHER = b"x" + GOOD[1:]  # the same size, another file
STALL_S = 5.0  # the slow file's pause; the server's stop ends it sooner


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files: dict[str, tuple[str, bytes]] = {}  # path -> (how to serve it, its bytes)
        self.requests: list[str] = []
        self.stop = threading.Event()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.requests.append(self.path)
        if self.path not in self.server.files:
            self.send_error(404)
            return
        how, body = self.server.files[self.path]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if how == "good":
            self.wfile.write(body)
        elif how == "truncated":  # half of it, then the connection closes
            self.wfile.write(body[: len(body) // 2])
        elif how == "slow":  # a little, then nothing for longer than the client waits
            self.wfile.write(body[:100])
            self.wfile.flush()
            self.server.stop.wait(STALL_S)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    thread = threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield s
    s.stop.set()
    s.shutdown()
    s.server_close()
    thread.join(timeout=STALL_S)


@pytest.fixture
def no_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A user with no data anywhere: an empty $GEMMPAD_HOME, no data variables, no checkout's data."""
    for var in ("GEMMPAD_DATA", "GEMMPAD_PENDIGITS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GEMMPAD_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(datafind, "_checkout_data", lambda: None)
    return tmp_path / "home"


def sha256(b: bytes) -> str:
    return "sha256:" + hashlib.sha256(b).hexdigest()


def catalog(monkeypatch: pytest.MonkeyPatch, *files: tuple[str, bytes]) -> None:
    """The pendigits set made of these (name, bytes) files."""
    monkeypatch.setitem(datafind.CATALOG, datafind.PENDIGITS, tuple(Remote(n, len(b), sha256(b)) for n, b in files))


def get(server: _Server, dest: Path, *bases: str, timeout: float = 2.0) -> list[Path]:
    return fetch.fetch(datafind.PENDIGITS, str(dest), mirrors={datafind.PENDIGITS: bases or (server.base + "/",)},
                       timeout=timeout, retries=0, progress=False, say=lambda s: None)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_good_file_arrives_checked(server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog(monkeypatch, ("a.bin", GOOD))
    server.files["/a.bin"] = ("good", GOOD)
    (path,) = get(server, tmp_path)
    assert path == tmp_path / "pendigits" / "a.bin" and path.read_bytes() == GOOD
    assert leftovers(path.parent) == ["a.bin"]  # no temporary file left beside it


def test_mirrors_are_tried_in_order(server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog(monkeypatch, ("a.bin", GOOD))
    server.files["/second/a.bin"] = ("good", GOOD)
    (path,) = get(server, tmp_path, server.base + "/first/", server.base + "/second/")
    assert path.read_bytes() == GOOD
    assert server.requests == ["/first/a.bin", "/second/a.bin"]


@pytest.mark.parametrize(("how", "body", "said"), [
    ("truncated", GOOD, "the connection broke before the whole file came"),
    ("good", OTHER, "checksum mismatch (the file is not the published one)"),
    ("good", GOOD[:-10], "truncated: 10,230 bytes of 10,240"),  # a short file, sent whole
    ("good", GOOD + b"more", "too long: 10,244 bytes of 10,240"),
    ("slow", GOOD, "no answer within 0.3 s"),
], ids=["cut-off", "wrong-checksum", "short", "long", "slow"])
def test_each_failure_is_one_line_and_leaves_nothing(server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     how: str, body: bytes, said: str) -> None:
    catalog(monkeypatch, ("a.bin", GOOD))
    server.files["/a.bin"] = (how, body)
    with pytest.raises(DataError) as info:
        get(server, tmp_path, timeout=0.3)
    host = server.base.removeprefix("http://")
    assert str(info.value) == f"could not fetch a.bin: {host}: {said}"
    assert leftovers(tmp_path / "pendigits") == []  # no partial file under the real name, nor a temporary one


def test_a_failed_fetch_leaves_no_folder_it_made(server: _Server, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`gemmpad data fetch pendigits --dir D` with no network left D/pendigits/ behind, empty."""
    catalog(monkeypatch, ("a.bin", GOOD), ("b.bin", OTHER))
    server.files["/a.bin"] = ("good", GOOD)  # b.bin is not served
    (tmp_path / "mine").mkdir()
    for folder in (tmp_path / "new" / "df", tmp_path / "mine"):
        with pytest.raises(DataError, match="could not fetch a.bin"):
            get(server, folder, server.base + "/missing/")
    assert sorted(tmp_path.iterdir()) == [tmp_path / "mine"] and leftovers(tmp_path / "mine") == []
    with pytest.raises(DataError, match="could not fetch b.bin"):  # a.bin came: kept, and its folders with it
        get(server, tmp_path / "new")
    assert leftovers(tmp_path / "new" / "pendigits") == ["a.bin"]


def test_every_mirror_is_named_with_its_status(server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog(monkeypatch, ("a.bin", GOOD))
    server.files["/b/a.bin"] = ("good", OTHER)
    with pytest.raises(DataError) as info:
        get(server, tmp_path, server.base + "/a/", server.base + "/b/")
    host = server.base.removeprefix("http://")
    assert str(info.value) == (f"could not fetch a.bin: {host}: HTTP 404 Not Found; "
                               f"{host}: checksum mismatch (the file is not the published one)")


def test_a_second_run_resumes_and_a_bad_copy_restarts(server: _Server, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Files already there and right are kept (not asked for again); a wrong one is replaced whole."""
    second = GOOD[::-1]
    catalog(monkeypatch, ("a.bin", GOOD), ("b.bin", second))
    server.files["/a.bin"] = ("good", GOOD)
    with pytest.raises(DataError, match="could not fetch b.bin: .*HTTP 404"):
        get(server, tmp_path)  # the first file arrives, the second is not served yet
    assert leftovers(tmp_path / "pendigits") == ["a.bin"]
    server.files["/b.bin"] = ("good", second)
    server.requests.clear()
    get(server, tmp_path)
    assert server.requests == ["/b.bin"]
    (tmp_path / "pendigits" / "a.bin").write_bytes(OTHER)  # damaged since
    server.requests.clear()
    a, b = get(server, tmp_path)
    assert server.requests == ["/a.bin"] and a.read_bytes() == GOOD and b.read_bytes() == second


PEN = b'.SEGMENT DIGIT    0 ? "7"\n.COMMENT 7 12  224\n.PEN_DOWN\n 100  400\n 300  400\n 200  100\n.PEN_UP\n'
# PEN as Unix `compress` writes it (made with the ncompress package, which gemmpad does not need)
PEN_Z = bytes.fromhex("1f9d902ea61439d2a488132a2088243992042188873040fc0021e28608052e863c6952f020881b2062c878"
                      "2843060d8c500c7e21f2e48a130521614404414326cc19321fd684015346ce983c5da474f2a50a1405")


def zipped(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, body in members.items():
            z.writestr(name, body)
    return out.getvalue()


@pytest.mark.parametrize("archive", ["pen.tra.Z", "set.zip"])
def test_the_file_comes_out_of_an_archive(server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          archive: str) -> None:
    """UCI publishes pendigits-orig.tra as a .Z, and inside a zip: after a mirror without it, either serves."""
    catalog(monkeypatch, ("pen.tra", PEN))
    server.files["/pen.tra.Z"] = ("good", PEN_Z)
    server.files["/set.zip"] = ("good", zipped({"README": b"", "data/pen.tra.Z": PEN_Z}))
    (path,) = get(server, tmp_path, server.base + "/nothing-here/", f"{server.base}/{archive}")
    assert path.read_bytes() == PEN
    assert leftovers(path.parent) == ["pen.tra"]  # the archive and its scratch folder are gone


@pytest.mark.parametrize(("body", "said"), [
    (zipped({"other.txt": b""}), "the archive holds no pen.tra"),
    (b"PK not a zip", "not a readable zip archive (File is not a zip file)"),
    (zipped({"pen.tra.Z": PEN_Z[:40]}), "not a readable .Z (compress) file (Invalid Data: "),
    (zipped({"pen.tra": PEN.replace(b"7", b"1")}), "checksum mismatch (the archive's pen.tra is not the published one)"),
    (zipped({"pen.tra": PEN[:-1]}), f"the archive's pen.tra has {len(PEN) - 1:,} bytes, not {len(PEN):,}"),
], ids=["no-member", "not-zip", "bad-Z", "wrong-checksum", "short"])
def test_a_bad_archive_is_one_line_and_leaves_nothing(server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      body: bytes, said: str) -> None:
    catalog(monkeypatch, ("pen.tra", PEN))
    server.files["/set.zip"] = ("good", body)
    with pytest.raises(DataError) as info:
        get(server, tmp_path, server.base + "/set.zip")
    assert str(info.value).startswith(f"could not fetch pen.tra: {server.base.removeprefix('http://')}: {said}")
    assert "\n" not in str(info.value)
    assert leftovers(tmp_path / "pendigits") == []


def test_fetch_writes_where_the_finder_looks(server: _Server, no_data: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`gemmpad data fetch pendigits`, then `gemmpad data status` and the finder see it."""
    body = PEN
    catalog(monkeypatch, (datafind.PENDIGITS_FILE, body))
    monkeypatch.setitem(datafind.MIRRORS, datafind.PENDIGITS, (server.base + "/",))
    server.files["/" + datafind.PENDIGITS_FILE] = ("good", body)
    monkeypatch.setattr(cli, "COMMANDS", {"data": cli.COMMANDS["data"]})
    assert cli.main(["data", "fetch", "pendigits"]) == 0
    assert datafind.pendigits_file() == no_data / "data" / "pendigits" / datafind.PENDIGITS_FILE
    assert pendigits.read_pendigits()[0].digit == 7
    capsys.readouterr()
    assert cli.main(["data", "status"]) == 1  # MNIST is still missing
    out = capsys.readouterr().out.splitlines()
    assert out == ["mnist: no MNIST data: run `gemmpad data fetch mnist` (or set $GEMMPAD_DATA to a folder of "
                   "the IDX files)",
                   f"pendigits: {no_data / 'data' / 'pendigits' / datafind.PENDIGITS_FILE} (fetched): checksums OK"]


def idx_gz(stem: str) -> bytes:
    """A small valid IDX file (3 images or labels), gzipped as published."""
    n = 3
    body = (struct.pack(">IIII", 0x803, n, 28, 28) + bytes(n * 784)
            if "images" in stem else struct.pack(">II", 0x801, n) + bytes([7, 1, 4]))
    return gzip.compress(body, mtime=0)


def test_fetch_all_then_every_command_finds_it(server: _Server, no_data: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`gemmpad data fetch all` into the user's folder; then the loaders find both sets with no
    argument or variable, and status checks the published .gz files by their own hash."""
    files = {stem + ".gz": idx_gz(stem) for stem in datafind.MNIST_STEMS}
    monkeypatch.setitem(datafind.CATALOG, datafind.MNIST,
                        tuple(Remote(n, len(b), "md5:" + hashlib.md5(b).hexdigest()) for n, b in files.items()))
    catalog(monkeypatch, (datafind.PENDIGITS_FILE, PEN))
    monkeypatch.setitem(datafind.MIRRORS, datafind.MNIST, (server.base + "/mnist/",))
    monkeypatch.setitem(datafind.MIRRORS, datafind.PENDIGITS, (server.base + "/",))
    server.files.update({f"/mnist/{n}": ("good", b) for n, b in files.items()})
    server.files["/" + datafind.PENDIGITS_FILE] = ("good", PEN)
    monkeypatch.setattr(cli, "COMMANDS", {"data": cli.COMMANDS["data"]})
    assert cli.main(["data", "fetch", "all"]) == 0
    assert mnist.load_split("test").labels.tolist() == [7, 1, 4]
    assert pendigits.read_pendigits()[0].digit == 7
    capsys.readouterr()
    assert cli.main(["data", "status"]) == 0
    assert capsys.readouterr().out == (f"mnist: {no_data / 'data' / 'mnist'} (fetched): checksums OK\n"
                                       f"pendigits: {no_data / 'data' / 'pendigits' / datafind.PENDIGITS_FILE} "
                                       "(fetched): checksums OK\n")


def test_an_unwritable_destination_fails_before_any_download(server: _Server, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setattr(cli, "COMMANDS", {"data": cli.COMMANDS["data"]})
    monkeypatch.setitem(datafind.MIRRORS, datafind.PENDIGITS, (server.base + "/",))
    assert cli.main(["data", "fetch", "pendigits", "--dir", str(tmp_path / "file")]) == 2
    where = tmp_path / "file" / "pendigits"
    assert capsys.readouterr().err == f"gemmpad: error: --dir: cannot write to {where}: Not a directory\n"
    assert server.requests == []


def test_status_tells_a_copy_that_is_not_the_published_data(no_data: Path, monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    mnist = tmp_path / "mnist"
    mnist.mkdir()
    for stem in datafind.MNIST_STEMS:
        (mnist / stem).write_bytes(b"not mnist")
    monkeypatch.setenv("GEMMPAD_DATA", str(mnist))
    s = datafind.status()[datafind.MNIST]
    assert s["found"] and not s["ok"] and s["origin"] == "$GEMMPAD_DATA"
    line = datafind.status_lines({datafind.MNIST: s})[0]
    assert line.startswith(f"mnist: {mnist} ($GEMMPAD_DATA): checksum mismatch: train-images-idx3-ubyte, ")
    assert line.endswith("; `gemmpad data fetch mnist` gets the published files")


def test_the_checkout_data_is_published_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared folder the tests use holds exactly what fetch would download (its hashes are the catalog's).

    The folder is named through $GEMMPAD_DATA: an installed package does not look beside the
    clone, which is where CI's tests find it (stop 46 failed on that)."""
    from tests.mnist_data import mnist_dir

    monkeypatch.setenv("GEMMPAD_DATA", str(mnist_dir()))  # skips without the data
    found = {name: s for name, s in datafind.status().items() if s["found"]}  # pendigits may be absent
    assert datafind.MNIST in found, found
    assert all(s["ok"] for s in found.values()), found


def test_a_wrong_variable_is_an_error_not_a_fallback(no_data: Path, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """issue 40 #19: a typo in $GEMMPAD_PENDIGITS used another file without a word."""
    fetched = no_data / "data" / "pendigits"
    fetched.mkdir(parents=True)
    (fetched / datafind.PENDIGITS_FILE).write_text("")
    assert datafind.pendigits_file() == fetched / datafind.PENDIGITS_FILE
    monkeypatch.setenv("GEMMPAD_PENDIGITS", str(tmp_path / "typo"))
    with pytest.raises(DataError, match=r"^\$GEMMPAD_PENDIGITS=.*typo: no pendigits-orig.tra there"):
        datafind.pendigits_file()
    monkeypatch.setenv("GEMMPAD_DATA", str(tmp_path / "typo"))
    with pytest.raises(DataError, match=r"^\$GEMMPAD_DATA=.*typo: not a directory"):
        datafind.mnist_dir()


def _messages(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """What each way in says when there is no data at all."""
    out = {}
    for what, call in {"mnist": datafind.mnist_dir, "pendigits": datafind.pendigits_file,
                       "load_split": lambda: mnist.load_split("test"), "read_pendigits": pendigits.read_pendigits}.items():
        with pytest.raises(DataError) as info:
            call()
        out[what] = str(info.value)
    for argv in (["eval", "--pendigits"], ["unsure"]):
        capsys.readouterr()
        assert cli.main(argv) == 2
        out[" ".join(argv)] = capsys.readouterr().err
    return out


def test_missing_data_names_the_fetch_command(no_data: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    said = _messages(monkeypatch, capsys)
    assert said["eval --pendigits"] == ("gemmpad: error: no pendigits data: run `gemmpad data fetch pendigits` "
                                        "(or set $GEMMPAD_PENDIGITS to the pendigits-orig.tra file)\n")
    assert said["unsure"].startswith("gemmpad: error: no MNIST data: run `gemmpad data fetch mnist`")  # no download try
    for what, message in said.items():
        fix = "`gemmpad data fetch pendigits`" if "pendigits" in what else "`gemmpad data fetch mnist`"
        assert fix in message, (what, message)


def test_no_message_names_the_install_or_the_shared_folder(no_data: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    said = _messages(monkeypatch, capsys)
    monkeypatch.setenv("GEMMPAD_DATA", str(tmp_path / "nowhere"))
    monkeypatch.setenv("GEMMPAD_PENDIGITS", str(tmp_path / "nowhere"))
    said.update({f"wrong {k}": v for k, v in _messages(monkeypatch, capsys).items()})
    for what, message in said.items():
        for word in ("site-packages", "../shared", "shared/data", str(Path(datafind.__file__).parents[2])):
            assert word not in message, (what, message)
