"""The kernel registry and the CUDA status behind it: what a machine without a CUDA build, with a
module that fails to load, or with a GPU that lacks a kernel's architecture reports, and why."""

from __future__ import annotations

import pytest

from gemmpad import native, registry
from gemmpad.errors import CudaUnavailable, GemmpadError


@pytest.fixture
def fresh_status():
    """cuda_status() probes once per process: clear its cache around a test that fakes the module."""
    native.cuda_status.cache_clear()
    yield
    native.cuda_status.cache_clear()


def test_without_a_cuda_build(monkeypatch, fresh_status):
    monkeypatch.setattr(native, "_cuda_module", None)
    monkeypatch.setattr(native, "_CUDA_IMPORT_ERROR", "")
    status = native.cuda_status()
    assert not status.built and not status.available and "built without its CUDA module" in status.reason
    assert [s.device for s in registry.kernels()] == ["cpu"] * len(registry.kernels())
    with pytest.raises(CudaUnavailable, match="needs CUDA: gemmpad was built without"):
        registry.get("cuda.07_warptile")
    with pytest.raises(CudaUnavailable, match="built without"):
        native.cuda()
    with pytest.raises(CudaUnavailable):
        registry.default_gemm("cuda")
    with pytest.raises(GemmpadError, match="unknown kernel 'cpu.99_none'; known kernels: cpu.01_naive"):
        registry.get("cpu.99_none")


def test_a_module_that_fails_to_load(monkeypatch, fresh_status):
    monkeypatch.setattr(native, "_cuda_module", None)
    monkeypatch.setattr(native, "_CUDA_IMPORT_ERROR", "libcudart.so.13: cannot open shared object file")
    status = native.cuda_status()
    assert status.reason == "the CUDA module failed to load: libcudart.so.13: cannot open shared object file"
    assert str(status) == f"CUDA unavailable: {status.reason}"


class FakeCuda:
    """A CUDA module on a usable GPU whose build lacks one kernel's architecture."""

    @staticmethod
    def status() -> dict:
        return {"available": True, "reason": "", "name": "Fake GPU", "compute_capability": "8.9"}

    @staticmethod
    def kernels() -> list[dict]:
        base = {"precision": "fp32", "summary": "s", "source": "native/cuda/gemm/x.cu"}
        return [{**base, "name": "cuda.07_warptile"},
                {**base, "name": "cuda.10_wgmma_fp16", "precision": "fp16",
                 "unavailable_reason": "needs compute capability 9.0 (H100/H200)"}]


def test_a_kernel_this_gpu_cannot_run(monkeypatch, fresh_status):
    monkeypatch.setattr(native, "_cuda_module", FakeCuda)
    assert native.cuda_status().available and str(native.cuda_status()) == "CUDA: Fake GPU"
    specs = {s.name: s for s in registry.kernels(device="cuda")}
    assert specs["cuda.07_warptile"].available and specs["cuda.07_warptile"].unavailable_reason == ""
    wgmma = specs["cuda.10_wgmma_fp16"]
    assert not wgmma.available and wgmma.unavailable_reason == "needs compute capability 9.0 (H100/H200)"
    assert registry.default_gemm("cuda").name == "cuda.07_warptile"  # the top fp32 kernel that runs
    assert wgmma.step == "10_wgmma_fp16"
