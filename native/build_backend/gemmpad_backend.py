"""gemmpad's PEP 517 build backend: scikit-build-core, plus a CUDA compiler when only a driver is there.

Why: most people with an NVIDIA card have the driver but no CUDA toolkit. scikit-build-core
alone would then build the CPU module only. This backend asks pip for NVIDIA's compiler
wheels (nvcc, cicc, the CUDA headers, CCCL and the static CUDA runtime) as extra build
requirements when no `nvcc` is found but a driver is, or when `GEMMPAD_CUDA=1` asks for
CUDA, and points CMake at them. The module still links cudart statically, so the wheel
imports anywhere. It also narrows the CUDA targets to the GPUs it sees, since compiling
all five targets doubles the build time of a source install (288 s against 138 s on 2 cores).

Environment (read in both hooks, so pip's two subprocesses decide alike):
  GEMMPAD_CUDA        unset: CUDA when nvcc is found, else when a driver is found (via the
                      wheels); "0": CPU module only; "1": CUDA required (the toolkit when one
                      is found, else the wheels); "wheels": the compiler wheels even when a
                      toolkit is installed (reproducible builds; how the toolkit-free path is
                      proven on a machine that has a toolkit).
  GEMMPAD_CUDA_ARCHS  CMake's CUDA targets, e.g. "90a-real;90-virtual"; "all" for the five
                      default targets, "native" (the default) for the GPUs seen, or all five
                      when none is seen. A `-C cmake.define.CMAKE_CUDA_ARCHITECTURES=...`
                      or $CUDAARCHS wins over both.
"""

from __future__ import annotations

import sys
from typing import Any

from scikit_build_core import build as _skbuild
from scikit_build_core.build import (  # noqa: F401  (PEP 517 hooks we pass through unchanged)
    build_sdist,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

from gemmpad_cuda_plan import Plan, cmake_settings, plan, system_probes, wheel_toolkit


def _log(p: Plan) -> None:
    """One line in pip's build log (shown with -v) saying which path the build took."""
    print(f"gemmpad build: {p.mode}: {p.reason}" + (f"; CUDA targets {p.archs}" if p.archs else ""), file=sys.stderr)


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """scikit-build-core's needs plus the compiler wheels when the plan uses them."""
    p = plan(system_probes(), config_settings)
    _log(p)
    return list(_skbuild.get_requires_for_build_wheel(config_settings)) + p.requires


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    """As for a wheel: an editable install compiles the same modules."""
    p = plan(system_probes(), config_settings)
    return list(_skbuild.get_requires_for_build_editable(config_settings)) + p.requires


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    """scikit-build-core's build with CMake pointed at the chosen compiler and targets."""
    p = plan(system_probes(), config_settings)
    _log(p)
    settings = cmake_settings(p, config_settings, wheel_toolkit() if p.mode == "wheels" else None)
    return _skbuild.build_wheel(wheel_directory, settings, metadata_directory)


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    """As build_wheel, for `pip install -e`."""
    p = plan(system_probes(), config_settings)
    settings = cmake_settings(p, config_settings, wheel_toolkit() if p.mode == "wheels" else None)
    return _skbuild.build_editable(wheel_directory, settings, metadata_directory)
