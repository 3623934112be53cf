"""Writes (or checks) app/gemmpad/kernel_manifest.json: every CUDA kernel the sources
register, and the committed benchmark figures of every kernel.

Why a committed file: an install without the CUDA module (no nvcc, or a laptop) cannot ask
`_cuda.kernels()`, yet the window and `gemmpad info` should still show the whole ladder,
greyed, with each rung's summary, source file and measured speed. The manifest is read
from the GEMMPAD_REGISTER_CUDA(_IF) / GEMMPAD_REGISTER_FUSED calls in native/cuda/** (the
same arguments the C++ registry gets) and from assets/benchmarks/*/bench-gemm.json;
tests/test_registry.py fails when it no longer matches them.

    python native/tools/kernel_manifest.py          # rewrite the manifest
    python native/tools/kernel_manifest.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "app" / "gemmpad" / "kernel_manifest.json"
# The file types CMake compiles into _cuda (native/CMakeLists.txt's GEMMPAD_CUDA_SOURCES).
SUFFIXES = (".cu", ".cpp")
IN_TYPES = {"F32": "f32", "F16": "f16", "BF16": "bf16", "F8E4M3": "f8e4m3"}
MACROS = ("GEMMPAD_REGISTER_CUDA_IF", "GEMMPAD_REGISTER_CUDA", "GEMMPAD_REGISTER_FUSED")
PREFERRED_SHAPE = (4096, 4096, 4096)  # the figure shown for each kernel: one shape, so rungs compare


def _strip_comments(text: str) -> str:
    """The C++ text with comments blanked and string literals kept (a '//' inside a
    summary is text, not a comment)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _arguments(text: str, start: int) -> list[str]:
    """The top-level comma-separated arguments of the call whose '(' is at `start`."""
    args, depth, i, cur = [], 0, start, []
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i : j + 1])
            i = j + 1
            continue
        if c == "(":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args
        elif c == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    raise ValueError("unterminated macro call")


def _string(arg: str) -> str:
    """A C++ string argument: adjacent literals concatenated, simple escapes undone."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', arg)
    if not parts or re.sub(r'"((?:[^"\\]|\\.)*)"', "", arg).strip():
        raise ValueError(f"expected string literals, got {arg!r}")
    return "".join(parts).replace('\\"', '"').replace("\\\\", "\\")


def registrations(root: Path = ROOT) -> list[dict[str, str]]:
    """The CUDA kernels registered in root/native/cuda, in the order the module lists them:
    GEMM kernels sorted by name (the C++ registry is a std::map), then whole-network kernels
    in registration order (their dispatch table is a vector filled as files register)."""
    gemm, mlp = [], []
    pattern = re.compile(r"\b(" + "|".join(MACROS) + r")\s*\(")
    for path in sorted(p for p in (root / "native" / "cuda").rglob("*") if p.suffix in SUFFIXES):
        text = _strip_comments(path.read_text(encoding="utf-8"))
        source = path.relative_to(root).as_posix()
        for m in pattern.finditer(text):
            if text[: m.start()].rstrip().endswith("#define"):
                continue
            args = _arguments(text, m.end() - 1)
            if m.group(1) == "GEMMPAD_REGISTER_FUSED":
                name, precision, _kind, summary = args
                entry = {"name": _string(name), "device": "cuda", "kind": "mlp", "precision": _string(precision),
                         "in_type": "f32", "summary": _string(summary), "source": source}
                mlp.append(entry)
            else:
                name, precision, in_type, summary = args[:4]
                entry = {"name": _string(name), "device": "cuda", "kind": "gemm", "precision": _string(precision),
                         "in_type": IN_TYPES[in_type.rsplit("::", 1)[-1]], "summary": _string(summary),
                         "source": source}
                gemm.append(entry)
    return sorted(gemm, key=lambda e: e["name"]) + mlp


def figures(root: Path = ROOT) -> dict[str, list[dict[str, Any]]]:
    """Per kernel, one committed measurement per machine: at PREFERRED_SHAPE where the run
    has it, else the largest problem it measured."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((root / "assets" / "benchmarks").glob("*/bench-gemm.json")):
        run = json.loads(path.read_text(encoding="utf-8"))
        machine = run["machine"]
        best: dict[str, tuple[tuple[bool, int], dict[str, Any]]] = {}
        for r in run["results"]:
            if not r.get("correct", True) or not r.get("gflops"):
                continue
            shape = (r["M"], r["N"], r["K"])
            rank = (shape == PREFERRED_SHAPE, r["M"] * r["N"] * r["K"])
            if r["kernel"] in best and best[r["kernel"]][0] >= rank:
                continue
            best[r["kernel"]] = (rank, {
                "machine": machine.get("cuda", {}).get("device") if r["device"] == "cuda" else machine.get("cpu"),
                "date": machine["date_utc"][:10],
                "file": path.relative_to(root).as_posix(),
                "shape": list(shape),
                "gflops": round(r["gflops"], 1),
                "reference": r.get("reference") or "",
                "percent_of_reference": round(r["percent_of_reference"], 1) if r.get("percent_of_reference") else None,
            })
        for kernel, (_rank, fig) in best.items():
            out.setdefault(kernel, []).append(fig)
    return dict(sorted(out.items()))


def agreement(root: Path = ROOT) -> dict[str, dict[str, Any]]:
    """Per kernel, the share of the 10,000 MNIST test digits it reads as the fp32 network does,
    from the newest committed bench-mlp.json: the window's kernel line shows it, installed or not."""
    runs = [(json.loads(p.read_text(encoding="utf-8")), p) for p in (root / "assets" / "benchmarks").glob("*/bench-mlp.json")]
    if not runs:
        return {}
    run, path = max(runs, key=lambda rp: rp[0]["machine"]["date_utc"])
    out: dict[str, dict[str, Any]] = {}
    for r in run["results"]:
        share = r.get("agrees_with_fp32")
        if isinstance(share, (int, float)) and not isinstance(share, bool) and r.get("backend") != "torch":
            out.setdefault(r["kernel"], {"share": round(share, 5), "date": run["machine"]["date_utc"][:10],
                                         "file": path.relative_to(root).as_posix()})
    return dict(sorted(out.items()))


def manifest(root: Path = ROOT) -> dict[str, Any]:
    """The manifest's content, as written."""
    return {
        "about": "Generated by native/tools/kernel_manifest.py from native/cuda/** and "
                 "assets/benchmarks/*/bench-gemm.json and bench-mlp.json; tests/test_registry.py checks it.",
        "kernels": registrations(root),
        "figures": figures(root),
        "agreement": agreement(root),
    }


def render(root: Path = ROOT) -> str:
    return json.dumps(manifest(root), indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed manifest is out of date")
    args = parser.parse_args()
    text = render()
    if args.check:
        if MANIFEST.read_text(encoding="utf-8") != text:
            print(f"{MANIFEST.relative_to(ROOT)} is out of date: run python native/tools/kernel_manifest.py",
                  file=sys.stderr)
            return 1
        return 0
    tmp = MANIFEST.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(MANIFEST)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
