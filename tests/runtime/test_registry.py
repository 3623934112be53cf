"""The kernel registry and the CUDA status behind it: what a machine without a CUDA build, with a
module that fails to load, or with a GPU that lacks a kernel's architecture reports, and why."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gemmpad.runtime import native, registry
from gemmpad.errors import CudaUnavailable, GemmpadError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kernel_manifest", ROOT / "native" / "tools" / "kernel_manifest.py")
kernel_manifest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernel_manifest)


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
    assert not status.built and not status.available and "built without its CUDA module" in status.detail
    assert status.reason == ("gemmpad was built without GPU support: reinstall with GEMMPAD_CUDA=1 where an NVIDIA GPU and the CUDA toolkit "
                             "are")
    spec = registry.get("cuda.07_warptile")  # listed to be read, not to be run
    assert not spec.available and spec.unavailable_reason.startswith("this install has no CUDA module: gemmpad was")
    with pytest.raises(CudaUnavailable, match="needs CUDA: gemmpad was built without"):
        registry.get("cuda.99_none")
    with pytest.raises(CudaUnavailable, match="built without"):
        native.cuda()
    with pytest.raises(CudaUnavailable):
        registry.default_gemm("cuda")
    with pytest.raises(GemmpadError, match="unknown kernel 'cpu.99_none'; known kernels: cpu.01_naive"):
        registry.get("cpu.99_none")


def test_the_ladder_is_listed_without_the_cuda_module(monkeypatch, fresh_status):
    """A laptop's install still shows every CUDA rung: unavailable, with the reason and a
    source file a student can open."""
    monkeypatch.setattr(native, "_cuda_module", None)
    monkeypatch.setattr(native, "_CUDA_IMPORT_ERROR", "")
    monkeypatch.setattr(native, "cuda_module_if_built", lambda: None)
    cuda = registry.kernels(device="cuda")
    wanted = [d["name"] for d in kernel_manifest.registrations()]
    assert [s.name for s in cuda] == wanted and len(wanted) > 20
    assert {s.kind for s in cuda} == {"gemm", "mlp"}
    for s in cuda:
        assert not s.available
        assert s.unavailable_reason.startswith("this install has no CUDA module: ")
        assert (ROOT / s.source).is_file(), s.source
    assert [s.device for s in registry.kernels()][:2] == ["cpu", "cpu"]  # CPU rungs first, as ever


def test_the_manifest_matches_the_sources():
    """kernel_manifest.json is what the sources register and the committed benchmarks measured:
    a new rung, a changed summary or a new bench run needs `python native/tools/kernel_manifest.py`."""
    assert registry.MANIFEST.read_text(encoding="utf-8") == kernel_manifest.render(), (
        "app/gemmpad/kernel_manifest.json is out of date: run python native/tools/kernel_manifest.py")


def test_the_manifest_agrees_with_the_built_module():
    """The parser reads the macros as the compiler does: same names, order and fields."""
    cuda_mod = native.cuda_module_if_built()
    if cuda_mod is None:
        pytest.skip("this checkout has no CUDA module to compare with")
    built = [{"name": d["name"], "device": "cuda", "kind": kind, "precision": d["precision"],
              "in_type": d.get("in_type", "f32"), "summary": d["summary"], "source": d["source"],
              **({"routes": d["routes"]} if d.get("routes") else {})}
             for getter, kind in (("kernels", "gemm"), ("mlp_kernels", "mlp")) for d in getattr(cuda_mod, getter)()]
    assert built == kernel_manifest.registrations()


def test_committed_figures():
    """Every CUDA rung measured on the H200 or H100 runs has its figure; a kernel never benchmarked has none."""
    figs = registry.figures("cuda.10_wgmma_fp16")
    assert {f.machine for f in figs} == {"NVIDIA H200", "NVIDIA H100 80GB HBM3"}
    assert all(f.shape == (4096, 4096, 4096) and f.gflops > 0 for f in figs)
    assert "TFLOP/s at 4096x4096x4096" in str(figs[0]) and "of cuBLAS fp16" in str(figs[0])
    assert registry.figures("cuda.99_none") == []
    # two runs' CPU figures say whose host ran them (both once read "CPU ...; CPU ..." in `gemmpad info`)
    cpu = registry.figures("cpu.02_blocked_simd")
    assert sorted(f.where for f in cpu) == ["CPU of the H100 host", "CPU of the H200 host"]
    assert all(f.short().startswith(f"{f.where} ") for f in cpu)


def test_manifest_parser_reads_concatenated_summaries_and_skips_comments(tmp_path):
    src = tmp_path / "native" / "cuda" / "gemm"
    src.mkdir(parents=True)
    (src / "01_x.cu").write_text(
        '// GEMMPAD_REGISTER_CUDA_RUNG("cuda.00_commented", "fp32", gemmpad::InType::F32, "no", f, 0, 0, 0);\n'
        'GEMMPAD_REGISTER_CUDA_RUNG("cuda.01_x", "bf16", gemmpad::InType::BF16,\n'
        '    "two " /* between */ "parts, a \\"quote\\" and a // slash", launch(1, 2), hopper_only, nullptr,\n'
        '    anatomy);\n'
        'GEMMPAD_REGISTER_CUDA_AUTO("cuda.auto_bf16", "bf16", gemmpad::InType::BF16, "routes", route,\n'
        '    "cuda.01_x", "cuda.02_y");\n')
    (tmp_path / "native" / "cuda" / "notes.txt").write_text('GEMMPAD_REGISTER_CUDA_RUNG("cuda.02_no", ...)')
    assert kernel_manifest.registrations(tmp_path) == [
        {"name": "cuda.01_x", "device": "cuda", "kind": "gemm", "precision": "bf16", "in_type": "bf16",
         "summary": 'two parts, a "quote" and a // slash', "source": "native/cuda/gemm/01_x.cu"},
        {"name": "cuda.auto_bf16", "device": "cuda", "kind": "gemm", "precision": "bf16", "in_type": "bf16",
         "summary": "routes", "source": "native/cuda/gemm/01_x.cu", "routes": ["cuda.01_x", "cuda.02_y"]}]


def test_a_module_that_fails_to_load(monkeypatch, fresh_status):
    monkeypatch.setattr(native, "_cuda_module", None)
    monkeypatch.setattr(native, "_CUDA_IMPORT_ERROR", "libcudart.so.13: cannot open shared object file")
    status = native.cuda_status()
    assert status.detail == "the CUDA module failed to load: libcudart.so.13: cannot open shared object file"
    assert status.reason == "gemmpad's GPU module could not load (a CUDA library is missing)"
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


def test_the_manifest_lists_the_dispatchers_with_their_rungs(monkeypatch, fresh_status):
    """Without a CUDA module the dispatchers are still listed (from the manifest), each with the rungs
    it routes to, all of them registered rungs of its precision."""
    monkeypatch.setattr(native, "_cuda_module", None)
    monkeypatch.setattr(native, "_CUDA_IMPORT_ERROR", "")
    auto = {s.name: s for s in registry.kernels(device="cuda") if s.routes}
    assert set(auto) == {"cuda.auto_fp32", "cuda.auto_tf32", "cuda.auto_fp16", "cuda.auto_bf16", "cuda.auto_fp8"}
    for spec in auto.values():
        for rung in spec.routes:
            assert not registry.get(rung).routes and registry.get(rung).precision == spec.precision
    assert registry.dispatched() == ""


def test_the_default_gpu_kernel_is_the_fp32_dispatcher(monkeypatch):
    """gemm() and the layer-by-layer Classifier take default_gemm: on the GPU the dispatcher, which
    routes by shape, not the last fp32 rung (19, whose small tiles lose to 07 at 4096^3)."""
    specs = [registry.KernelSpec(name=n, device="cuda", precision="fp32", summary="", source="", routes=r)
             for n, r in (("cuda.auto_fp32", ("cuda.19_simt_ring", "cuda.07_warptile")),
                          ("cuda.07_warptile", ()), ("cuda.19_simt_ring", ()))]
    monkeypatch.setattr(registry, "kernels", lambda device=None, kind=None: specs)
    monkeypatch.setattr(native, "cuda_module_if_built", lambda: object())
    assert registry.default_gemm("cuda").name == "cuda.auto_fp32"


def test_each_rung_says_what_changed_from_the_one_before():
    """The lab view's one line per rung, from the header's "Change from" sentence."""
    assert registry.change("cuda.15_tma_store_fp16").startswith("Change from 14: step TmaStore")
    assert registry.change("cuda.19_simt_ring").startswith("Change from 07:")
    for name in ("cuda.14_persistent_bf16", "cuda.17_small_tiles_tf32", "cpu.02_blocked_simd"):
        assert registry.change(name).startswith("Change from ")


def test_anatomy_without_a_gpu_is_a_clear_error_or_the_committed_record(monkeypatch, fresh_status):
    monkeypatch.setattr(native, "_cuda_module", None)
    monkeypatch.setattr(native, "_CUDA_IMPORT_ERROR", "")
    record = {"shape": [4096, 100, 784], "kernel": "ring_kernel<Config<64, 64, 16, 1, 2, 4, 2>>", "occupancy": 0.25}
    monkeypatch.setattr(registry, "_manifest", lambda: {"kernels": kernel_manifest.registrations(),
                                                        "anatomy": {"cuda.19_simt_ring": [record]}})
    a = registry.anatomy("cuda.19_simt_ring", 4096, 100, 784)
    assert a["source"] == "committed" and a["occupancy"] == 0.25
    with pytest.raises(CudaUnavailable, match="no committed anatomy at 1x100x784"):
        registry.anatomy("cuda.19_simt_ring", 1, 100, 784)
    with pytest.raises(GemmpadError, match="not a CUDA kernel"):
        registry.anatomy("cpu.01_naive", 1, 1, 1)


def test_the_manifest_keeps_the_committed_anatomy_and_records_a_new_one(monkeypatch, tmp_path):
    """--anatomy (on a GPU) writes each rung's records at ANATOMY_SHAPES, a refusal as its reason;
    a plain rewrite carries the committed records over, since it cannot measure them."""
    from gemmpad.errors import KernelUnavailable

    specs = [registry.KernelSpec(name="cuda.19_simt_ring", device="cuda", precision="fp32", summary="", source=""),
             registry.KernelSpec(name="cuda.auto_fp32", device="cuda", precision="fp32", summary="", source="",
                                 routes=("cuda.19_simt_ring",))]

    def fake_anatomy(name: str, m: int, n: int, k: int) -> dict:
        if k == 784 and m == 1:
            raise KernelUnavailable(f"{name} unavailable: not at batch 1")
        return {"kernel": "ring_kernel<...>", "occupancy": 0.5, "source": "this GPU"}

    monkeypatch.setattr(registry, "kernels", lambda device=None, kind=None: specs)
    monkeypatch.setattr(registry, "anatomy", fake_anatomy)
    measured = kernel_manifest.measure_anatomy()
    assert list(measured) == ["cuda.19_simt_ring"]  # dispatchers have none of their own
    rows = {tuple(r["shape"]): r for r in measured["cuda.19_simt_ring"]}
    assert set(rows) == set(kernel_manifest.ANATOMY_SHAPES) and "source" not in rows[(4096, 4096, 4096)]
    assert rows[(1, 100, 784)] == {"shape": [1, 100, 784], "unavailable": "cuda.19_simt_ring unavailable: not at batch 1"}
    committed = tmp_path / "app" / "gemmpad" / "kernel_manifest.json"
    committed.parent.mkdir(parents=True)
    committed.write_text(kernel_manifest.render(ROOT, anatomy=measured), encoding="utf-8")
    assert kernel_manifest.manifest(tmp_path)["anatomy"] == measured  # a rewrite without --anatomy keeps them
