"""What the window says, without a window (gemmpad.ui.text)."""

from __future__ import annotations

import pytest

from gemmpad.runtime.native import CudaStatus
from gemmpad.ui.text import NBSP, fmt_us, frames_caption, gpu_line, hidden_source, log_ticks


def test_latency_axis_ticks_and_figures() -> None:
    plain = lambda ticks: tuple((label.replace(NBSP, " "), v) for label, v in ticks)  # noqa: E731
    assert plain(log_ticks(0.8, 60.0)) == (("1 µs", 1.0), ("2 µs", 2.0), ("5 µs", 5.0), ("10 µs", 10.0), ("20 µs", 20.0),
                                    ("50 µs", 50.0))
    assert plain(log_ticks(0.31, 2000.0)) == (("1 µs", 1.0), ("10 µs", 10.0), ("100 µs", 100.0), ("1 ms", 1000.0))
    # issue 42: the slowest rung at batch 4096 labelled its axis "1000k", "2000k" µs
    assert plain(log_ticks(3e5, 3e6)) == (("500 ms", 5e5), ("1 s", 1e6), ("2 s", 2e6))
    for lo in (0.3, 1.7, 42.0, 900.0):  # the narrowest range the panel draws (x1.6 either side) has a tick
        assert len(log_ticks(lo, lo * 2.56)) >= 1
    assert [fmt_us(v).replace(NBSP, " ") for v in (None, float("nan"), 0.784, 31.04, 12022.4)] == \
        ["–", "–", "784 ns", "31.0 µs", "12.0 ms"]
    # issue 42: "720,830 µ" (cut), "1,332,838 µs1,521,073 µs" (columns touching): now a unit that fits
    assert [fmt_us(v).replace(NBSP, " ") for v in (14442.0, 720830.0, 1332838.0, 999.96, 0.004, 5.123)] == \
        ["14.4 ms", "721 ms", "1.33 s", "1.00 ms", "4.00 ns", "5.12 µs"]
    assert " " not in fmt_us(1.234)  # "L3 1.23 µs" wrapped as "L3 1.23" / "µs"
    assert all(len(fmt_us(10.0 ** e * m)) <= 7 for e in range(-3, 9) for m in (1.0, 2.5, 9.999))


# What CUDA said (bind_module.cpp's status(), native.cuda_status()) -> what a user reads (issue 42:
# "no NVIDIA driver found (CUDA driver version is insufficient for CUDA runtime version)")
RAW_REASONS = [
    ("no NVIDIA driver found (CUDA driver version is insufficient for CUDA runtime version)",
     "no NVIDIA GPU driver on this machine"),
    ("cudaGetDeviceCount failed: CUDA driver version is insufficient for CUDA runtime version "
     "(cudaErrorInsufficientDriver)", "the NVIDIA driver is older than this gemmpad's CUDA needs: update the driver"),
    ("cudaGetDeviceCount failed: no CUDA-capable device is detected (cudaErrorNoDevice)",
     "no NVIDIA GPU on this machine"),
    ("no CUDA device found", "no NVIDIA GPU on this machine"),
    ("cudaGetDeviceCount failed: all CUDA-capable devices are busy or unavailable (cudaErrorDevicesUnavailable)",
     "the GPU is reserved by another program (exclusive mode) or switched off"),
    ("cudaGetDeviceCount failed: system has unsupported display driver / cuda driver combination "
     "(cudaErrorSystemDriverMismatch)", "the NVIDIA driver is half updated (its kernel module and library differ): reboot"),
    ("cudaGetDeviceCount failed: system not yet initialized (cudaErrorSystemNotReady)",
     "the GPUs are not ready yet (on NVSwitch machines: start nvidia-fabricmanager)"),
    ("cudaGetDeviceCount failed: forward compatibility was attempted on non supported HW "
     "(cudaErrorCompatNotSupportedOnDevice)", "this GPU cannot use the CUDA compatibility package installed here"),
    ("cudaGetDeviceCount failed: operation not permitted (cudaErrorNotPermitted)",
     "this user may not use the GPU (see the permissions of /dev/nvidia*)"),
    ("cudaGetDeviceCount failed: initialization error (cudaErrorInitializationError)",
     "the NVIDIA driver could not start the GPU"),
    ("cudaGetDeviceCount failed: unknown error (cudaErrorUnknown)",
     "the NVIDIA driver failed (often after a suspend): reload it or reboot"),
    ("cudaGetDeviceProperties failed: out of memory", "the GPU did not answer when asked what it is"),
    ("gemmpad was built without its CUDA module (neither nvcc nor an NVIDIA driver at build time, or GEMMPAD_CUDA=0; "
     "reinstall with GEMMPAD_CUDA=1)",
     "gemmpad was built without GPU support: reinstall with GEMMPAD_CUDA=1 where an NVIDIA GPU and the CUDA toolkit are"),
    ("the CUDA module failed to load: libcudart.so.13: cannot open shared object file",
     "gemmpad's GPU module could not load (a CUDA library is missing)"),
    ("cudaGetDeviceCount failed: a new kind of trouble (cudaErrorSomethingNew)",
     "cudaGetDeviceCount failed: a new kind of trouble (cudaErrorSomethingNew)"),  # unknown: as CUDA said it
]


@pytest.mark.parametrize("raw, plain", RAW_REASONS)
def test_each_cuda_reason_reads_as_one_plain_line(raw: str, plain: str) -> None:
    from gemmpad.runtime.native import plain_reason

    assert plain_reason(raw) == plain
    status = CudaStatus(available=False, reason=plain_reason(raw), built=True, detail=raw)
    assert gpu_line(status) == f"No GPU: {plain}; the CPU runs the network"


def test_gpu_line_says_one_thing_a_user_can_act_on() -> None:
    driver = CudaStatus(available=False, reason="no NVIDIA GPU driver on this machine", built=True,
                        detail="no NVIDIA driver found (CUDA driver version is insufficient for CUDA runtime version)")
    assert gpu_line(driver) == "No GPU: no NVIDIA GPU driver on this machine; the CPU runs the network"
    assert gpu_line(CudaStatus(available=True, reason="", built=True, device="NVIDIA H200")) == "GPU: NVIDIA H200"


def test_frames_caption_counts_in_words() -> None:
    assert frames_caption(1, "cpu.mlp_sparse", 1, False).startswith("1 frame of cpu.mlp_sparse at batch 1 (")
    assert frames_caption(2, "k", 16, True).startswith("2 frames of k at batch 16, warm (")


def test_kernel_line_shows_the_committed_agreement_with_fp32(monkeypatch) -> None:
    """The kernel line says how often the selected rung reads a digit as fp32 does, from the committed
    bench-mlp.json (what a reduced precision costs a user), and nothing where no bench measured it."""
    from gemmpad.ui import text

    monkeypatch.setattr(text.registry, "agreement", {"cpu.01_naive": (0.99871, "2026-11-29")}.get)
    assert text.kernel_summary("cpu.01_naive").endswith(
        "  agrees with fp32 on 99.87 % of MNIST test digits (bench of 2026-11-29)")
    assert "agrees" not in text.kernel_summary("cpu.02_blocked_simd")
    assert text.agreement_note((1.0, "")) == "  agrees with fp32 on 100.00 % of MNIST test digits"
    monkeypatch.undo()  # the shipped manifest itself: installed or not, the fp8 rung has its figure (below 100 %)
    share, date = text.registry.agreement("cuda.18_wgmma_fp8")
    assert share < 1.0
    assert text.kernel_summary("cuda.18_wgmma_fp8").endswith(
        f"  agrees with fp32 on {100 * share:.2f} % of MNIST test digits (bench of {date})")


def test_the_hidden_layers_line_names_the_kernel_and_scales_its_cost() -> None:
    plain = lambda *a: hidden_source(*a).replace(NBSP, " ")  # noqa: E731
    assert plain("cuda.mlp_fused", 0.4) == "h1, h2 from cuda.mlp_fused · +400 ns to write them"
    assert plain("cpu.01_naive", 1500.0, True) == "h1, h2 from cpu.01_naive · +1.50 ms"
    assert plain("cpu.01_naive", 0.0) == "h1, h2 from cpu.01_naive · no extra time to write them"
    assert plain("cpu.01_naive", float("nan"), True) == "h1, h2 from cpu.01_naive · not timed"
