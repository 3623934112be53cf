"""What the window says, without a window (gemmpad.ui.text)."""

from __future__ import annotations

from gemmpad.native import CudaStatus
from gemmpad.ui.text import fmt_us, frames_caption, gpu_line, log_ticks


def test_latency_axis_ticks_and_figures() -> None:
    assert log_ticks(0.8, 60.0) == (("1", 1.0), ("2", 2.0), ("5", 5.0), ("10", 10.0), ("20", 20.0), ("50", 50.0))
    assert log_ticks(0.31, 2000.0) == (("1", 1.0), ("10", 10.0), ("100", 100.0), ("1k", 1000.0))  # 3.8 decades
    for lo in (0.3, 1.7, 42.0, 900.0):  # the narrowest range the panel draws (x1.6 either side) has a tick
        assert len(log_ticks(lo, lo * 2.56)) >= 1
    assert [fmt_us(v) for v in (None, float("nan"), 0.784, 31.04, 12022.4)] == \
        ["–", "–", "0.78 µs", "31.0 µs", "12,022 µs"]


def test_gpu_line_says_one_thing_a_user_can_act_on() -> None:
    driver = CudaStatus(available=False, reason="no NVIDIA driver found (CUDA driver version is insufficient for "
                                                "CUDA runtime version)", built=True)
    assert gpu_line(driver) == "No GPU: no NVIDIA driver found; the CPU runs the network"
    assert gpu_line(CudaStatus(available=True, reason="", built=True, device="NVIDIA H200")) == "GPU: NVIDIA H200"


def test_frames_caption_counts_in_words() -> None:
    assert frames_caption(1, "cpu.mlp_sparse", 1, False).startswith("1 frame of cpu.mlp_sparse at batch 1 (")
    assert frames_caption(2, "k", 16, True).startswith("2 frames of k at batch 16, warm (")


def test_kernel_line_shows_the_committed_agreement_with_fp32(monkeypatch) -> None:
    """The kernel line says how often the selected rung reads a digit as fp32 does, from the committed
    bench-mlp.json (what a reduced precision costs a user), and nothing where no bench measured it."""
    from gemmpad.ui import text

    monkeypatch.setattr(text, "committed_agreement", lambda: {"cpu.01_naive": (0.99871, "2026-11-29")})
    assert text.kernel_summary("cpu.01_naive").endswith(
        "  agrees with fp32 on 99.87 % of MNIST test digits (bench of 2026-11-29)")
    assert "agrees" not in text.kernel_summary("cpu.02_blocked_simd")
    assert text.agreement_note((1.0, "")) == "  agrees with fp32 on 100.00 % of MNIST test digits"
