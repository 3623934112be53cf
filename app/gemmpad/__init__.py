"""gemmpad: draw a digit, watch a 784-100-100-10 MLP read it on GEMM kernels
written from scratch, on the CPU and on CUDA GPUs."""

from __future__ import annotations

from gemmpad.gemm import gemm
from gemmpad.native import CudaStatus, cuda_status
from gemmpad.registry import KernelSpec, kernels

__version__ = "0.1.0"

__all__ = ["CudaStatus", "KernelSpec", "cuda_status", "gemm", "kernels", "__version__"]
