"""Loads the compiled modules and says whether CUDA can be used.

`_cpu` is always built. `_cuda` exists only when nvcc or a driver was found at build
time, and even then the machine may lack a driver or a GPU; `cuda_status()`
says which, so callers can grey out GPU controls with the reason.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from gemmpad import _cpu  # noqa: F401  (re-exported for the rest of the package)

try:
    _cuda_module: ModuleType | None = importlib.import_module("gemmpad._cuda")
except ModuleNotFoundError as exc:
    _cuda_module = None
    # Not built (no nvcc at build time) unless the module exists but one of its own imports is missing.
    _CUDA_IMPORT_ERROR: str = "" if exc.name == "gemmpad._cuda" else str(exc)
except ImportError as exc:  # built, but unloadable (e.g. a broken shared library)
    _cuda_module = None
    _CUDA_IMPORT_ERROR = str(exc)
else:
    _CUDA_IMPORT_ERROR = ""

cpu: ModuleType = _cpu


@dataclass(frozen=True)
class CudaStatus:
    """Whether the CUDA backend is usable, and if not, why (shown to users)."""

    available: bool
    reason: str
    built: bool
    device: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.available:
            return f"CUDA: {self.device}"
        return f"CUDA unavailable: {self.reason}"


@functools.cache
def cuda_status() -> CudaStatus:
    """Probe once per process; a GPU does not appear or vanish while we run."""
    if _cuda_module is None:
        reason = "gemmpad was built without its CUDA module (neither nvcc nor an NVIDIA driver at build time, or GEMMPAD_CUDA=0; reinstall with GEMMPAD_CUDA=1)"
        if _CUDA_IMPORT_ERROR:
            reason = f"the CUDA module failed to load: {_CUDA_IMPORT_ERROR}"
        return CudaStatus(available=False, reason=reason, built=False)
    info = dict(_cuda_module.status())
    return CudaStatus(
        available=bool(info["available"]),
        reason=str(info["reason"]),
        built=True,
        device=str(info.get("name", "")),
        details=info,
    )


def cuda() -> ModuleType:
    """The CUDA module, or CudaUnavailable saying why it cannot be used."""
    from gemmpad.errors import CudaUnavailable

    status = cuda_status()
    if not status.available or _cuda_module is None:
        raise CudaUnavailable(status.reason)
    return _cuda_module


def cuda_module_if_built() -> ModuleType | None:
    """The CUDA module when it was built, even without a device (for listing kernels)."""
    return _cuda_module
