"""The exceptions gemmpad raises on purpose.

Everything a user can cause (bad input, missing files, no GPU) derives from
GemmpadError, so the CLI and the app can show the message instead of a
traceback. Input mistakes also derive from the built-in type a NumPy user
would expect (TypeError / ValueError / MemoryError).
"""

from __future__ import annotations

import importlib


class GemmpadError(Exception):
    """Base class: a problem the user can read and act on."""


class MissingDependency(GemmpadError, ImportError):
    """A package a command needs cannot be imported; the message says what to install."""


def require(module: str, needed_by: str, install: str, otherwise: str = "") -> None:
    """Raise MissingDependency unless `module` imports. A window library without a
    wheel for this platform, or an install made with --no-deps, should end in a line
    that names the package to install, not in ModuleNotFoundError."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(f"{needed_by} needs {module}, which cannot be imported here ({exc}): "
                                f"pip install {install}" + (f"; {otherwise}" if otherwise else "")) from None


class InputTypeError(GemmpadError, TypeError):
    """An array of the wrong dtype or kind."""


class InputShapeError(GemmpadError, ValueError):
    """An array of the wrong rank or shape, or an empty one."""


class DataError(GemmpadError, ValueError):
    """A dataset file that is missing, truncated or not what it claims to be."""


class ModelFileError(GemmpadError, ValueError):
    """A model file that is missing, corrupt or has wrong arrays."""


class ImageError(GemmpadError, ValueError):
    """An image file that cannot be read, or holds no ink."""


class OutputFileError(GemmpadError, OSError):
    """A path that must not be written: a directory, a device, FIFO or socket, or a
    symlink loop. An OSError too, so a writer's `except OSError` (a full disk) covers it."""


class CudaUnavailable(GemmpadError, RuntimeError):
    """CUDA was asked for but cannot be used here; the message says why."""


class KernelUnavailable(GemmpadError, ValueError):
    """A rung asked for a problem its step was not written for (a shape, an alignment); the message
    says why. Rungs raise it rather than hand the problem to another rung, so that what runs under
    a rung's name is its own kernel; the dispatchers (cuda.auto_*) pick a rung that takes it."""


class CudaError(GemmpadError, RuntimeError):
    """A CUDA call failed; the message names the call and CUDA's error string."""


class CudaOutOfMemory(CudaError, MemoryError):
    """A device allocation failed."""
