"""The window's fixtures: an X display (a private Xvfb when there is none) and the one App
every in-process test shares, reset before each test."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from gemmpad.ui import harness
from tests.ui.support import BASE, window_model


@pytest.fixture(scope="session")
def display() -> Iterator[str]:
    """A usable X display: the session's own, or a private Xvfb started here."""
    from gemmpad.ui.app import display_problem

    if os.environ.get("DISPLAY") and not display_problem():
        yield os.environ["DISPLAY"]
        return
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("no X display and Xvfb is not installed (apt-get install xvfb xauth)")
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [xvfb, "-displayfd", str(write_fd), "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        number = f.readline().strip()  # Xvfb writes the display number once it accepts clients
    if not number:
        proc.kill()
        pytest.skip("Xvfb did not start")
    old = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = f":{number}"
    try:
        yield os.environ["DISPLAY"]
    finally:
        if old is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = old
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="session")
def session_app(display: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from gemmpad.runtime.classifier import Classifier
    from gemmpad.ui.window import App

    app = App(Classifier(window_model(), backend=BASE), drawings_dir=tmp_path_factory.mktemp("drawings"), vsync=False)
    app.step()
    yield app
    app.close()


@pytest.fixture
def app(session_app: object) -> object:
    """The shared window, reset: empty canvas, BASE backend's default kernel, batch 1, cold timing,
    default brush."""
    from gemmpad.ui.canvas import DEFAULT_BRUSH

    a = session_app
    a.clear()
    a.set_continuous(False)
    a.set_warm(False)
    a.set_backend(BASE)
    a.set_kernel(a.kernel_lists[BASE][-1])  # the whole-network kernel: the backend's default
    a.set_batch(1)
    a.set_brush(DEFAULT_BRUSH)
    harness.settle(a)
    return a
