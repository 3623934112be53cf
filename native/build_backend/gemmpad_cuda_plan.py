"""How gemmpad's build backend decides to build the CUDA module: pure logic, testable.

The decision (installed toolkit, NVIDIA's compiler wheels, or CPU only) and the CUDA
targets depend on the build machine; everything it looks at comes through `Probes`, so
the tests can fake a driver, a toolkit or their absence. gemmpad_backend.py, beside this
file, holds the PEP 517 hooks and says why the backend exists and what it reads.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# CUDA 13.0 exactly: code built by it runs on every CUDA 13 driver (>= 580), where a newer
# 13.x compiler's PTX would not load on a 13.0 driver. nvidia-cuda-nvcc leaves its own
# requirements unpinned, so each part is pinned here or pip would mix releases.
CUDA_WHEELS: tuple[str, ...] = (
    "nvidia-cuda-nvcc==13.0.*",
    "nvidia-nvvm==13.0.*",
    "nvidia-cuda-crt==13.0.*",
    "nvidia-cuda-runtime==13.0.*",
    "nvidia-cuda-cccl==13.0.*",
)
MIN_DRIVER_CUDA = 13000  # cuDriverGetVersion() for CUDA 13.0
WHEEL_TOOLKIT = Path("nvidia", "cu13")  # where those wheels put bin/nvcc, include/, lib/

# Compute capability -> the one target that runs on it, for GPUs the ladder has machine code
# for. Hopper gets sm_90a (wgmma and TMA need the arch-specific target). Other GPUs fall
# back to the default set, whose sm_90 PTX a newer driver compiles for them.
ARCH_FOR_CC: dict[str, str] = {"8.0": "80-real", "8.6": "86-real", "8.7": "87-real", "8.9": "89-real", "9.0": "90a-real"}


class BuildConfigError(RuntimeError):
    """A build setting the backend cannot act on; pip prints the message."""


@dataclass(frozen=True)
class Probes:
    """What the backend looks at on the build machine; tests inject fakes."""

    env: Mapping[str, str]
    which: Callable[[str], str | None]
    is_file: Callable[[str], bool]
    driver: Callable[[], tuple[int | None, list[str]] | None]
    """None when no NVIDIA driver is found, else (its CUDA version or None, the GPUs' compute capabilities)."""


@dataclass(frozen=True)
class Plan:
    """How the CUDA module gets built (or not), and why: the reason goes into the build log."""

    mode: str  # "toolkit", "wheels" or "cpu"
    reason: str
    nvcc: str | None = None  # the toolkit's nvcc, when CMake would not find it on PATH
    archs: str | None = None  # CMAKE_CUDA_ARCHITECTURES to pass, None: CMake's default
    requires: list[str] = field(default_factory=list)


def find_nvcc(probes: Probes) -> tuple[str | None, bool]:
    """The installed toolkit's nvcc and whether it is on PATH (where CMake looks by itself)."""
    on_path = probes.which("nvcc")
    if on_path:
        return on_path, True
    cudacxx = probes.env.get("CUDACXX")
    if cudacxx and probes.is_file(cudacxx):
        return cudacxx, True  # CMake reads $CUDACXX itself
    for root in (probes.env.get("CUDA_HOME"), probes.env.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and probes.is_file(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc"), False
    return None, False


def _archs(probes: Probes, ccs: list[str], settings: Mapping[str, Any]) -> str | None:
    """The CUDA targets to build: as told, else the GPUs seen, else None (CMake's five)."""
    if "cmake.define.CMAKE_CUDA_ARCHITECTURES" in settings or probes.env.get("CUDAARCHS"):
        return None  # told already; CMake reads both
    asked = probes.env.get("GEMMPAD_CUDA_ARCHS", "native").strip()
    if asked == "all":
        return None
    if asked != "native":
        return asked.replace(",", ";")
    targets = [ARCH_FOR_CC.get(cc) for cc in ccs]
    if not targets or None in targets:
        return None
    return ";".join(sorted(set(t for t in targets if t)))


def plan(probes: Probes, settings: Mapping[str, Any] | None = None) -> Plan:
    """Decide how to build: with the installed toolkit, with the compiler wheels, or CPU only."""
    settings = settings or {}
    want = probes.env.get("GEMMPAD_CUDA", "").strip().lower()
    if want not in ("", "0", "1", "wheels"):
        raise BuildConfigError(f"GEMMPAD_CUDA must be 0, 1 or wheels, not {want!r}")
    if want == "0":
        return Plan("cpu", "GEMMPAD_CUDA=0 asks for the CPU module only")
    driver = probes.driver()
    ccs = driver[1] if driver else []
    archs = _archs(probes, ccs, settings)
    nvcc, on_path = find_nvcc(probes) if want != "wheels" else (None, False)
    if nvcc:
        return Plan("toolkit", f"CUDA toolkit found ({nvcc})", None if on_path else nvcc, archs)
    if want == "wheels":
        return Plan("wheels", "GEMMPAD_CUDA=wheels asks for NVIDIA's compiler wheels", None, archs, list(CUDA_WHEELS))
    if want == "1":
        return Plan("wheels", "GEMMPAD_CUDA=1 and no nvcc: using NVIDIA's compiler wheels", None, archs, list(CUDA_WHEELS))
    if driver is None:
        return Plan("cpu", "no nvcc and no NVIDIA driver found; GEMMPAD_CUDA=1 builds the CUDA module anyway")
    version = driver[0]
    if version is not None and version < MIN_DRIVER_CUDA:
        return Plan(
            "cpu",
            f"the NVIDIA driver supports CUDA {version // 1000}.{version % 1000 // 10}, the compiler "
            "wheels need 13.0: update the driver or install a CUDA toolkit",
        )
    return Plan("wheels", "NVIDIA driver found, no nvcc: using NVIDIA's compiler wheels", None, archs, list(CUDA_WHEELS))


def _driver() -> tuple[int | None, list[str]] | None:
    """Ask the driver (libcuda) for its CUDA version and the GPUs' compute capabilities.

    Falls back to nvidia-smi, then to /proc/driver/nvidia, which say a driver is there
    but not which CUDA it supports.
    """
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        cuda = None
    if cuda is not None:
        version, count = ctypes.c_int(0), ctypes.c_int(0)
        cuda.cuDriverGetVersion(ctypes.byref(version))
        ccs: list[str] = []
        if cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0:
            for i in range(count.value):
                major, minor = ctypes.c_int(0), ctypes.c_int(0)
                cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, i)  # COMPUTE_CAPABILITY_MAJOR
                cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, i)  # COMPUTE_CAPABILITY_MINOR
                ccs.append(f"{major.value}.{minor.value}")
        return (version.value or None), ccs
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30, check=True).stdout
            return None, [line.strip() for line in out.splitlines() if line.strip()]
        except (OSError, subprocess.SubprocessError):
            return None, []
    if os.path.isdir("/proc/driver/nvidia"):
        return None, []
    return None


def system_probes() -> Probes:
    """The real machine."""
    return Probes(os.environ, shutil.which, os.path.isfile, _driver)


def wheel_toolkit(paths: list[str] | None = None) -> Path | None:
    """The toolkit tree the compiler wheels installed into the build environment, if any."""
    for entry in paths if paths is not None else sys.path:
        root = Path(entry or ".") / WHEEL_TOOLKIT
        if (root / "bin" / "nvcc").is_file():
            return root
    return None


def cmake_settings(p: Plan, settings: Mapping[str, Any] | None, toolkit: Path | None) -> dict[str, Any]:
    """scikit-build-core's config settings with the plan's CMake definitions added.

    What the user passed with -C wins; the plan only fills in what is missing.
    """
    out: dict[str, Any] = dict(settings or {})
    defines: dict[str, str] = {}
    if p.mode == "cpu":  # the probes look wider than CMake does: what they miss, CMake would too
        defines["GEMMPAD_WITH_CUDA"] = "OFF"
    if p.mode == "toolkit" and p.nvcc:
        defines["CMAKE_CUDA_COMPILER"] = p.nvcc
    if p.mode == "wheels":
        if toolkit is None:
            raise BuildConfigError(
                "gemmpad: NVIDIA's compiler wheels are not in the build environment; build with "
                "pip's build isolation, or install " + " ".join(CUDA_WHEELS) + " first"
            )
        for exe in [*(toolkit / "bin").iterdir(), *(toolkit / "nvvm" / "bin").glob("*")]:
            if exe.is_file() and exe.suffix not in (".profile", ".stub"):  # an installer may drop the x bit
                exe.chmod(exe.stat().st_mode | 0o111)
        # Two links make the wheels' tree read as a toolkit: nvcc.profile links from lib64
        # (the wheels ship lib), and FindCUDAToolkit insists on finding libcudart.so (the
        # wheel ships only libcudart.so.13; the module links libcudart_static.a).
        for link, target in (("lib64", "lib"), ("lib/libcudart.so", "libcudart.so.13")):
            if not (toolkit / link).exists() and (toolkit / link).parent.joinpath(target).exists():
                (toolkit / link).symlink_to(target)
        defines["CMAKE_CUDA_COMPILER"] = str(toolkit / "bin" / "nvcc")
        defines["CUDAToolkit_ROOT"] = str(toolkit)
        defines["GEMMPAD_WITH_CUDA"] = "ON"
    if p.mode != "cpu" and p.archs:
        defines["CMAKE_CUDA_ARCHITECTURES"] = p.archs
    for key, value in defines.items():
        out.setdefault(f"cmake.define.{key}", value)
    return out


