"""The one description of the machine a benchmark ran on: device, driver, CUDA,
clocks, host CPU and versions. Every result file carries it, because a figure
without its machine cannot be read; the README's caption line is made from it."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from gemmpad.terminal import counted

SMI_FIELDS = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit"
# Read by OpenBLAS when it loads: some images pin an older core type (and L2 size) there, which
# keeps a current NumPy off the processor's best kernel. The NumPy reference runs without them.
BLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def machine() -> dict[str, Any]:
    """Device, driver, CUDA, clocks and versions: what a figure needs to be read."""
    from gemmpad.commands.info import collect

    info = collect()
    out: dict[str, Any] = {
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpu": _cpu_model(),
        "host_cores": _cores(),
        "cpu_features": info["cpu_features"],
        "versions": info["versions"],
        "cuda": info["cuda"],
        "blas": blas(),
        "blas_env": {k: os.environ[k] for k in BLAS_ENV if k in os.environ},
    }
    smi = _nvidia_smi()
    if smi:
        out["nvidia_smi"] = smi
    return out


def blas() -> list[dict[str, Any]]:
    """NumPy's BLAS as loaded in this process: library, version, internal kernel (threadpoolctl's
    architecture, e.g. SkylakeX or Haswell) and thread count, since a reference figure means
    nothing without them."""
    import numpy  # noqa: F401  (loads the BLAS threadpoolctl then finds)
    from threadpoolctl import threadpool_info

    keys = ("internal_api", "version", "architecture", "num_threads", "threading_layer")
    return [{k: lib.get(k) for k in keys} for lib in threadpool_info() if lib.get("user_api") == "blas"]


def blas_label(libs: list[dict[str, Any]]) -> str:
    """One line for a BLAS description: "openblas 0.3.31 (SkylakeX kernel, 16 threads)"."""
    return "; ".join(f"{b.get('internal_api')} {b.get('version')} ({b.get('architecture')} kernel, "
                     f"{counted(b['num_threads'], 'thread')})" for b in libs) or "no BLAS found"


def caption(m: dict[str, Any]) -> str:
    """One line: device, driver, CUDA, versions and date of a result file's machine."""
    cuda, smi, v = m.get("cuda", {}), m.get("nvidia_smi", {}), m.get("versions", {})
    parts = []
    if cuda.get("available"):
        sms = f", {counted(cuda['multiprocessors'], 'SM')}" if cuda.get("multiprocessors") else ""
        parts.append(f"{cuda.get('device', 'GPU')}{sms}")
        if smi.get("driver_version"):
            parts.append(f"driver {smi['driver_version']}")
        if cuda.get("runtime_version"):
            rt = int(cuda["runtime_version"])
            parts.append(f"CUDA {rt // 1000}.{rt % 1000 // 10}")
    host = m.get("cpu", "")
    if m.get("host_cores"):
        cores = counted(m["host_cores"], "core")
        host = f"{host}, {cores}" if host else cores
    if host:
        parts.append(f"host {host}")
    parts += [f"{name} {v[name]}" for name in ("gemmpad", "python", "numpy", "torch") if v.get(name)]
    date = str(m.get("date_utc", ""))[:10]
    return ", ".join(parts) + (f"; {date}" if date else "")


def _nvidia_smi() -> dict[str, str]:
    try:
        smi = subprocess.run(["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        if smi.returncode == 0:
            return dict(zip(SMI_FIELDS.split(","), (v.strip() for v in smi.stdout.splitlines()[0].split(","))))
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return {}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)
