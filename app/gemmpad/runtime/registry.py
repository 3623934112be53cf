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

from gemmpad.runtime import native
from gemmpad.errors import CudaUnavailable, GemmpadError

MANIFEST = Path(__file__).resolve().parents[1] / "kernel_manifest.json"


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
    # A dispatcher (cuda.auto_fp32, ...): every rung it may route a problem to; () for a rung.
    routes: tuple[str, ...] = ()

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
                    routes=tuple(d.get("routes", ())),
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
    run: str = ""  # the committed run's folder under assets/benchmarks/, e.g. "h200"

    @property
    def where(self) -> str:
        """The machine in a word: "H200", "H100", or for the host's processor the run it came from
        ("CPU of the H200 host"): two runs' CPU figures side by side must not both read "CPU"."""
        if self.machine.startswith("NVIDIA"):
            return self.machine.removeprefix("NVIDIA ").split(" ")[0]
        return f"CPU of the {self.run.upper()} host" if self.run else "CPU"

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
                   unavailable_reason=reason, routes=tuple(d.get("routes", ())))
        for d in _manifest()["kernels"]
    ]


def figures(name: str) -> list[Figure]:
    """The committed benchmark figures of kernel `name`, one per machine measured (may be none)."""
    return [
        Figure(machine=f["machine"] or "?", date=f["date"], shape=tuple(f["shape"]), gflops=f["gflops"],
               reference=f["reference"], percent_of_reference=f["percent_of_reference"],
               run=Path(f.get("file", "")).parent.name)
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
    """The fastest fp32 kernel on `device` for any shape: on the GPU the dispatcher cuda.auto_fp32,
    which picks the rung for each problem (dispatched() says which ran); on the CPU the top of
    the fp32 ladder."""
    fp32 = [s for s in kernels(device=device, kind="gemm") if s.precision == "fp32"]
    if device == "cuda" and native.cuda_module_if_built() is None:
        fp32 = []  # the manifest's rungs are there to be read, not run
    if not fp32:
        raise CudaUnavailable(native.cuda_status().reason) if device == "cuda" else GemmpadError(
            f"no kernels for device {device!r}"
        )
    dispatchers = [s for s in fp32 if s.routes]
    return dispatchers[0] if dispatchers else fp32[-1]


def dispatched() -> str:
    """The rung the last dispatcher call (cuda.auto_*: gemm()'s default on the GPU, the layer-by-layer
    MLP) ran, e.g. "cuda.19_simt_ring"; "" before any, or without a CUDA module."""
    module = native.cuda_module_if_built()
    return module.dispatched() if module is not None and hasattr(module, "dispatched") else ""


def anatomy(name: str, m: int, n: int, k: int) -> dict[str, Any]:
    """What CUDA rung `name` launches for an m x n x k problem (its operands freshly allocated), read
    from the compiled kernel on this GPU: kernel (the template instance), block_tile "BMxBNxBK",
    warp_tile, thread_tile ("" where not meaningful), threads_per_block, registers_per_thread,
    static/dynamic/total shared memory per block, max_active_blocks_per_sm, occupancy (resident
    warps over the SM's maximum), grid, blocks, cluster and a note on the launch. Why a function
    and not a table: the instance, the grid and the split depend on the shape and the device.
    Without a usable GPU: the committed H200 anatomy from kernel_manifest.json at the shapes it
    has (marked "source": "committed"), else CudaUnavailable; KernelUnavailable where the rung
    does not take the problem or cannot say."""
    spec = get(name)
    if spec.device != "cuda":
        raise GemmpadError(f"kernel {name!r} is not a CUDA kernel: anatomy reads compiled CUDA kernels")
    module = native.cuda_module_if_built()
    if spec.available and module is not None and hasattr(module, "kernel_anatomy"):
        return dict(module.kernel_anatomy(name, m, n, k), source="this GPU")
    for entry in _manifest().get("anatomy", {}).get(name, []):
        if tuple(entry.get("shape", ())) == (m, n, k):
            return dict(entry, source="committed")
    raise CudaUnavailable(f"kernel {name!r} cannot be read here ({spec.unavailable_reason or 'no CUDA module'}) "
                          f"and kernel_manifest.json has no committed anatomy at {m}x{n}x{k}")


def change(name: str) -> str:
    """The one line saying what changed from the rung before (the "Change from N:" line of the
    rung's source header; the summary where the header has none), for the lab view."""
    return _manifest().get("changes", {}).get(name, "") or get(name).summary
