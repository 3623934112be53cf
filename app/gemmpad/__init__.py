"""gemmpad: draw a digit, watch a 784-100-100-10 MLP read it on GEMM kernels
written from scratch, on the CPU and on CUDA GPUs."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import PurePath


def launched_as_command() -> bool:
    """Whether this process is the `gemmpad` command (the installed script or `python -m gemmpad`),
    not a program or test that imports the package and keeps its own Ctrl-C."""
    argv0 = PurePath(sys.argv[0]) if sys.argv and sys.argv[0] else PurePath()
    return argv0.stem == "gemmpad" or (argv0.name == "__main__.py" and argv0.parent.name == "gemmpad")  # (gemmpad.exe)


def interrupted_while_loading(signum: int, frame: object) -> None:
    """Ctrl-C while the command is still importing NumPy and the native modules (the first ~0.1 s):
    one line and exit 130, where Python would print a traceback through a dozen imports.
    gemmpad.commands.cli puts its own handler in place once it is loaded."""
    os.write(2, b"gemmpad: interrupted\n")
    os._exit(130)


if launched_as_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, interrupted_while_loading)  # before the heavy imports below, on purpose

from gemmpad.runtime.gemm import gemm  # noqa: E402
from gemmpad.runtime.native import CudaStatus, cuda_status  # noqa: E402
from gemmpad.runtime.registry import KernelSpec, kernels  # noqa: E402

__version__ = "0.1.0"

__all__ = ["CudaStatus", "KernelSpec", "cuda_status", "gemm", "kernels", "__version__"]
