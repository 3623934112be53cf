"""The one list of kernels: what the API, CLI, benchmarks and app offer.

Each native kernel registers itself in C++ (see native/include/gemmpad/kernel.h);
this module merges the CPU and CUDA lists into KernelSpec records. CUDA
kernels are listed whenever the CUDA module was built, marked unavailable
(with the reason) when there is no usable GPU, or when a kernel needs more than
this GPU offers, so the app can show them greyed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmpad import native
from gemmpad.errors import CudaUnavailable, GemmpadError


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


def kernels(device: str | None = None, kind: str | None = None) -> list[KernelSpec]:
    """All kernels in ladder order (CPU first), optionally filtered."""
    specs = _specs(native.cpu, "cpu", True, "")
    cuda_mod = native.cuda_module_if_built()
    if cuda_mod is not None:
        status = native.cuda_status()
        specs += _specs(cuda_mod, "cuda", status.available, status.reason)
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
    if not fp32:
        raise CudaUnavailable(native.cuda_status().reason) if device == "cuda" else GemmpadError(
            f"no kernels for device {device!r}"
        )
    return fp32[-1]
