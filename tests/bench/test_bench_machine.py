"""gemmpad.bench.machine: the one machine description, and its caption line."""

from __future__ import annotations

from gemmpad.bench import machine


def test_machine_describes_this_host():
    m = machine.machine()
    assert m["versions"]["gemmpad"] and m["date_utc"] and m["host_cores"] >= 1
    assert "available" in m["cuda"]


def test_caption_names_device_driver_cuda_versions_and_date():
    m = {"date_utc": "2026-11-23T06:43:50+00:00", "cpu": "Xeon", "host_cores": 16,
         "versions": {"gemmpad": "0.1.0", "numpy": "2.5.2", "torch": "2.11.0"},
         "cuda": {"available": True, "device": "NVIDIA H200", "multiprocessors": 132, "runtime_version": 13000},
         "nvidia_smi": {"driver_version": "580.159.04"}}
    assert machine.caption(m) == ("NVIDIA H200, 132 SMs, driver 580.159.04, CUDA 13.0, host Xeon, 16 cores, "
                                  "gemmpad 0.1.0, numpy 2.5.2, torch 2.11.0; 2026-11-23")
    assert machine.caption({"cuda": {"available": False}, "versions": {"numpy": "2"}}) == "numpy 2"


def test_counts_in_the_caption_and_the_blas_line_agree_in_number():
    """One core, one thread: the caption said "1 cores" and NumPy's BLAS line "1 threads"."""
    assert machine.caption({"cpu": "Xeon", "host_cores": 1}) == "host Xeon, 1 core"
    assert machine.caption({"host_cores": 2}) == "host 2 cores"
    libs = [{"internal_api": "openblas", "version": "0.3.31", "architecture": "Haswell", "num_threads": 1}]
    assert machine.blas_label(libs) == "openblas 0.3.31 (Haswell kernel, 1 thread)"
