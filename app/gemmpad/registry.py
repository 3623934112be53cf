"""The one list of kernels: what the API, CLI, benchmarks and app offer.

Each native kernel registers itself in C++ (see native/include/gemmpad/kernel.h);
this module merges the CPU and CUDA lists into KernelSpec records. CUDA
kernels are always listed, so the whole ladder can be read on any machine:
from the CUDA module when it was built, marked unavailable (with the reason)
when there is no usable GPU or a kernel needs more than this GPU offers; from
kernel_manifest.json (written from the same sources by
native/tools/kernel_manifest.py) when this install has no CUDA module at all.
The manifest also carries the committed benchmark figures of every kernel.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemmpad import native
from gemmpad.errors import CudaUnavailable, GemmpadError

MANIFEST = Path(__file__).with_name("kernel_manifest.json")


@dataclass(frozen=True)
class KernelSpec:
    """One rung of the ladder (kind "gemm") or a whole-network kernel (kind "mlp")."""

    name: str  # "cpu.01_naive", "cuda.08_wmma_fp16", ...
    device: str  # "cpu" | "cuda"
    precision: str  # "fp32" | "tf32" | "fp16" | "bf16" | "fp8"
    summary: str
    source: str  # path in the repository
    kind: str = "gemm"
    in_type: str = "f32"
    available: bool = True
    unavailable_reason: str = ""

    @property
    def step(self) -> str:
        """The ladder label without the device prefix, e.g. "03_smem_tiled"."""
        return self.name.split(".", 1)[1]


def _specs(module: object, device: str, available: bool, reason: str) -> list[KernelSpec]:
    out = []
    for getter, kind in (("kernels", "gemm"), ("mlp_kernels", "mlp")):
        fn = getattr(module, getter, None)
        if fn is None:
            continue
        for d in fn():
            # A kernel may need more than a usable device (cuda.10: Hopper and an sm_90a build).
            own_reason = "" if not available else d.get("unavailable_reason", "")
            out.append(
                KernelSpec(
                    name=d["name"],
                    device=device,
                    precision=d["precision"],
                    summary=d["summary"],
                    source=d["source"],
                    kind=kind,
                    in_type=d.get("in_type", "f32"),
                    available=available and not own_reason,
                    unavailable_reason=reason or own_reason,
                )
            )
    return out


@dataclass(frozen=True)
class Figure:
    """One committed measurement of a kernel (assets/benchmarks/<machine>/bench-gemm.json)."""

    machine: str  # the GPU (or CPU) it ran on, e.g. "NVIDIA H200"
    date: str
    shape: tuple[int, int, int]  # M, N, K
    gflops: float
    reference: str  # what it was compared with, e.g. "cuBLAS fp16"
    percent_of_reference: float | None

    @property
    def where(self) -> str:
        """The machine in a word: "H200", "H100", or "CPU" for the host's processor."""
        return self.machine.removeprefix("NVIDIA ").split(" ")[0] if self.machine.startswith("NVIDIA") else "CPU"

    def rate(self) -> tuple[float, str]:
        """(value, unit): TFLOP/s from 1000 GFLOP/s up, so the ladder's figures stay readable."""
        return (self.gflops / 1000, "TFLOP/s") if self.gflops >= 1000 else (self.gflops, "GFLOP/s")

    def short(self) -> str:
        """"H200 694.9 TFLOP/s at 4096x4096x4096": short enough to sit beside a source path."""
        return f"{self.where} {self._rate()}"

    def _rate(self) -> str:
        value, unit = self.rate()
        return f"{value:.1f} {unit} at {'x'.join(map(str, self.shape))}"

    def __str__(self) -> str:
        ref = f" ({self.percent_of_reference:g} % of {self.reference})" if self.percent_of_reference else ""
        return f"{self.machine}: {self._rate()}{ref}, {self.date}"


@functools.cache
def _manifest() -> dict[str, Any]:
    """kernel_manifest.json, installed with the package (native/CMakeLists.txt has no part in it:
    wheel.packages ships app/gemmpad whole)."""
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def _manifest_specs(reason: str) -> list[KernelSpec]:
    """The CUDA kernels the sources register, all unavailable for `reason`."""
    return [
        KernelSpec(name=d["name"], device=d["device"], precision=d["precision"], summary=d["summary"],
                   source=d["source"], kind=d["kind"], in_type=d["in_type"], available=False,
                   unavailable_reason=reason)
        for d in _manifest()["kernels"]
    ]


def figures(name: str) -> list[Figure]:
    """The committed benchmark figures of kernel `name`, one per machine measured (may be none)."""
    return [
        Figure(machine=f["machine"] or "?", date=f["date"], shape=tuple(f["shape"]), gflops=f["gflops"],
               reference=f["reference"], percent_of_reference=f["percent_of_reference"])
        for f in _manifest()["figures"].get(name, [])
    ]


def agreement(name: str) -> tuple[float, str] | None:
    """(share of the 10,000 MNIST test digits kernel `name` reads as the fp32 network does, date of
    that run) from the committed MLP benchmark, or None where it was not measured."""
    a = _manifest().get("agreement", {}).get(name)
    return (float(a["share"]), str(a["date"])) if isinstance(a, dict) else None


def kernels(device: str | None = None, kind: str | None = None) -> list[KernelSpec]:
    """All kernels in ladder order (CPU first), optionally filtered."""
    specs = _specs(native.cpu, "cpu", True, "")
    cuda_mod = native.cuda_module_if_built()
    status = native.cuda_status()
    if cuda_mod is not None:
        specs += _specs(cuda_mod, "cuda", status.available, status.reason)
    else:
        specs += _manifest_specs(f"this install has no CUDA module: {status.reason}")
    return [s for s in specs if (device is None or s.device == device) and (kind is None or s.kind == kind)]


def get(name: str) -> KernelSpec:
    """The kernel called `name`; a GemmpadError listing the known names otherwise."""
    for spec in kernels():
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in kernels())
    if name.startswith("cuda.") and native.cuda_module_if_built() is None:
        raise CudaUnavailable(f"kernel {name!r} needs CUDA: {native.cuda_status().reason}")
    raise GemmpadError(f"unknown kernel {name!r}; known kernels: {known}")


def default_gemm(device: str) -> KernelSpec:
    """The top of the fp32 ladder on `device`: the fastest kernel that keeps fp32 accuracy."""
    fp32 = [s for s in kernels(device=device, kind="gemm") if s.precision == "fp32"]
    if device == "cuda" and native.cuda_module_if_built() is None:
        fp32 = []  # the manifest's rungs are there to be read, not run
    if not fp32:
        raise CudaUnavailable(native.cuda_status().reason) if device == "cuda" else GemmpadError(
            f"no kernels for device {device!r}"
        )
    return fp32[-1]
