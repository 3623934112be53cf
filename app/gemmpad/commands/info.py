"""`gemmpad info`: what this installation can do, for bug reports and for
knowing why a GPU choice is greyed out. Imports nothing heavy (no torch)."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections.abc import Callable
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from gemmpad import __version__
from gemmpad.data import datafind, userdata
from gemmpad.runtime import native, registry, unsure
from gemmpad.runtime.classifier import available_backends
from gemmpad.errors import GemmpadError
from gemmpad.runtime.model import Model, default_model_path, load_model
from gemmpad.terminal import printable

# Optional packages worth naming in a report; read from metadata, never imported.
OPTIONAL = ("torch", "dearpygui", "pillow", "matplotlib", "cupy-cuda12x", "cupy")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def collect() -> dict[str, Any]:
    """Everything `gemmpad info` reports, as plain data."""
    versions = {"gemmpad": __version__, "python": platform.python_version(), "numpy": np.__version__}
    versions.update({d: v for d in OPTIONAL if (v := _version(d))})
    status = native.cuda_status()
    cuda_mod = native.cuda_module_if_built()
    cuda: dict[str, Any] = {
        "built": status.built,
        "available": status.available,
        "reason": status.reason,
        "reason_detail": status.detail,  # CUDA's own words, for a bug report
        "device": status.device,
        "archs": cuda_mod.build_archs() if cuda_mod is not None and hasattr(cuda_mod, "build_archs") else "",
    }
    for key in ("compute_capability", "multiprocessors", "total_memory", "driver_version", "runtime_version"):
        if key in status.details:
            cuda[key] = status.details[key]
    kernels = [
        {"name": s.name, "kind": s.kind, "precision": s.precision, "available": s.available, "summary": s.summary,
         "source": s.source, "unavailable_reason": s.unavailable_reason,
         "figures": [{"text": str(f), **asdict(f)} for f in registry.figures(s.name)]}
        for s in registry.kernels()
    ]
    model: dict[str, Any] = {"path": str(default_model_path())}
    try:
        m = load_model()
        model["card"] = {k: v for k, v in m.card.items() if isinstance(v, (str, int, float, bool))}
        model["scores"] = m.scores()
        model["unsure_detector"] = detector_entry(m)
    except GemmpadError as exc:
        model["error"] = str(exc)
    personal = userdata.personal_model_path()
    personal_detector = None
    if personal.exists():
        try:
            personal_detector = detector_entry(load_model(personal))
        except GemmpadError as exc:
            personal_detector = {"path": None, "why_none": f"the personal model cannot be used ({exc})"}
    return {
        "user_data": {"folder": str(userdata.data_dir()), "drawings": str(userdata.drawings_dir()),
                      "personal_model": str(personal) if personal.exists() else None,
                      "personal_unsure_detector": personal_detector},
        "versions": versions,
        "platform": platform.platform(),
        "cpu_features": list(native.cpu.cpu_features()),
        "cuda": cuda,
        "backends": {b: (reason or "ok") for b, reason in available_backends().items()},
        "kernels": kernels,
        "model": model,
        "data": datafind.status(),
    }


def detector_entry(model: Model) -> dict[str, Any]:
    """Where the model's unsure detector is, and whether Learn carried it over; or why there is none
    (a model without one reads scribbles as digits: the window and predict say so too)."""
    det, path, why = unsure.find(model)
    if det is None:
        return {"path": None, "why_none": why}
    return {"path": str(path), "carried_over": "carried_from" in det.fitted}


def _detector_text(entry: dict[str, Any]) -> str:
    if entry["path"] is None:
        return f"none: {entry['why_none']}"
    return Path(entry["path"]).name + (" (carried over by Learn)" if entry.get("carried_over") else "")


def data_section(status: dict[str, dict[str, Any]]) -> str:
    """The data sets' lines of `gemmpad info` (what `gemmpad data status` prints): a bug
    report then says which data a command would have used, and a missing set its fix."""
    return "data:\n" + "".join(f"  {line}\n" for line in datafind.status_lines(status))


def arch_name(arch: str) -> str:
    """A CMake CUDA target as nvcc's users write it: "90a-real" -> sm_90a, "90-virtual" ->
    compute_90 (PTX), "86" (both) -> sm_86 + PTX."""
    num, _, kind = arch.strip().partition("-")
    if not num[:1].isdigit():
        return arch.strip()  # "native", "all": what CMake was given
    return {"real": f"sm_{num}", "virtual": f"compute_{num} (PTX)"}.get(kind, f"sm_{num} + PTX")


def _write_kernels(out: Callable[[str], object], kernels: list[dict[str, Any]]) -> None:
    """The whole ladder, runnable or not, so it can be read on any machine: each kernel with its
    source file and committed figures; the unavailable ones marked, each distinct reason said
    once below the list (26 copies of "no CUDA module" would bury the kernels)."""
    reasons: list[str] = []
    runs = sum(k["available"] for k in kernels)
    out(f"kernels ({runs} of {len(kernels)} run here):\n")
    for k in kernels:
        flag = ""
        if not k["available"]:
            if k["unavailable_reason"] not in reasons:
                reasons.append(k["unavailable_reason"])
            flag = f"  [unavailable ({reasons.index(k['unavailable_reason']) + 1})]"
        out(f"  {k['name']:<28} {k['kind']:<4} {k['precision']:<5} {k['summary']}{flag}\n")
        measured = "; ".join(f.short() for f in registry.figures(k["name"]))
        out(f"  {'':<28} {k['source']}{'; ' + measured if measured else ''}\n")
    for i, reason in enumerate(reasons, 1):
        out(f"  unavailable ({i}): {reason}\n")


def run(args: argparse.Namespace) -> int:
    info = collect()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    def out(text: str) -> None:  # paths and card values come from the user's folders and files
        sys.stdout.write("\n".join(printable(line) for line in text.split("\n")))

    out("versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()) + "\n")
    out(f"platform: {info['platform']}\n")
    out(f"CPU SIMD features used: {', '.join(info['cpu_features']) or 'none (scalar code)'}\n")
    c = info["cuda"]
    detail = f" [{c['reason_detail']}]" if c.get("reason_detail") and c["reason_detail"] != c["reason"] else ""
    if not c["built"]:
        out(f"CUDA: not built: {c['reason']}{detail}\n")
    else:
        archs = ", ".join(arch_name(a) for a in c["archs"].split(",") if a) or "unknown"
        out(f"CUDA build: architectures {archs}\n")
        out(f"CUDA device: {c['device']} (compute {c.get('compute_capability', '?')})\n" if c["available"]
            else f"CUDA device: none usable: {c['reason']}{detail}\n")
    out("backends: " + ", ".join(f"{b}: {r}" for b, r in info["backends"].items()) + "\n")
    _write_kernels(out, info["kernels"])
    m = info["model"]
    if "error" in m:
        out(f"model: {m['error']}\n")
    else:
        card = ", ".join(f"{k}={v}" for k, v in m["card"].items()) or "no model card"
        out(f"model: the shipped model: {card}\n")  # its path, inside the installed package, is in --json
        if m["scores"]:
            out(f"model scores: {', '.join(m['scores'])}\n")
        out(f"unsure detector: {_detector_text(m['unsure_detector'])}\n")
    u = info["user_data"]
    out(f"your data: {u['folder']} (drawings in {u['drawings']}; personal model: "
        f"{u['personal_model'] or 'none yet'})\n")
    if u["personal_unsure_detector"] is not None:
        out(f"your personal model's unsure detector: {_detector_text(u['personal_unsure_detector'])}\n")
    out(data_section(info["data"]))
    return 0
