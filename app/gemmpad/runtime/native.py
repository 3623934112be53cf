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
    """Whether the CUDA backend is usable, and if not, why: `reason` in plain words (what the
    window, the menus and every refusal say), `detail` CUDA's own text (`gemmpad info`)."""

    available: bool
    reason: str
    built: bool
    device: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    detail: str = ""

    def __str__(self) -> str:
        if self.available:
            return f"CUDA: {self.device}"
        return f"CUDA unavailable: {self.reason}"


# What CUDA says when it cannot be used (bind_module.cpp's status() and this module's), matched by
# a fragment of CUDA's error name or string, and what a user is told instead: one line, what is
# wrong and where it can be fixed, no versions nobody asked about.
PLAIN_REASONS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("no NVIDIA driver found",), "no NVIDIA GPU driver on this machine"),
    (("cudaErrorInsufficientDriver", "driver version is insufficient"),
     "the NVIDIA driver is older than this gemmpad's CUDA needs: update the driver"),
    (("cudaErrorNoDevice", "no CUDA-capable device", "no CUDA device found"), "no NVIDIA GPU on this machine"),
    (("cudaErrorDevicesUnavailable", "busy or unavailable"),
     "the GPU is reserved by another program (exclusive mode) or switched off"),
    (("cudaErrorSystemDriverMismatch", "unsupported display driver"),
     "the NVIDIA driver is half updated (its kernel module and library differ): reboot"),
    (("cudaErrorSystemNotReady", "system not yet initialized"),
     "the GPUs are not ready yet (on NVSwitch machines: start nvidia-fabricmanager)"),
    (("cudaErrorCompatNotSupportedOnDevice", "forward compatibility"),
     "this GPU cannot use the CUDA compatibility package installed here"),
    (("cudaErrorNotPermitted", "not permitted"), "this user may not use the GPU (see the permissions of /dev/nvidia*)"),
    (("cudaErrorInitializationError", "initialization error"), "the NVIDIA driver could not start the GPU"),
    (("cudaErrorUnknown", "unknown error"),
     "the NVIDIA driver failed (often after a suspend): reload it or reboot"),
    (("cudaGetDeviceProperties failed",), "the GPU did not answer when asked what it is"),
    (("built without its CUDA module",), "gemmpad was built without GPU support: reinstall with GEMMPAD_CUDA=1 where an NVIDIA GPU and the CUDA toolkit are"),
    (("the CUDA module failed to load",), "gemmpad's GPU module could not load (a CUDA library is missing)"),
)


def plain_reason(raw: str) -> str:
    """CUDA's reason in one line of plain words ("no NVIDIA driver found (CUDA driver version is
    insufficient for CUDA runtime version)" is "no NVIDIA GPU driver on this machine"); a reason
    not known here stays as it is."""
    for fragments, plain in PLAIN_REASONS:
        if any(f.lower() in raw.lower() for f in fragments):
            return plain
    return raw


@functools.cache
def cuda_status() -> CudaStatus:
    """Probe once per process; a GPU does not appear or vanish while we run."""
    if _cuda_module is None:
        reason = "gemmpad was built without its CUDA module (neither nvcc nor an NVIDIA driver at build time, or GEMMPAD_CUDA=0; reinstall with GEMMPAD_CUDA=1)"
        if _CUDA_IMPORT_ERROR:
            reason = f"the CUDA module failed to load: {_CUDA_IMPORT_ERROR}"
        return CudaStatus(available=False, reason=plain_reason(reason), built=False, detail=reason)
    info = dict(_cuda_module.status())
    raw = str(info["reason"])
    return CudaStatus(
        available=bool(info["available"]),
        reason=plain_reason(raw),
        built=True,
        device=str(info.get("name", "")),
        details=info,
        detail=raw,
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
