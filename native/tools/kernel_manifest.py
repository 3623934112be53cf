"""Writes (or checks) app/gemmpad/kernel_manifest.json: every CUDA kernel the sources
register, and the committed benchmark figures of every kernel.

Why a committed file: an install without the CUDA module (no nvcc, or a laptop) cannot ask
`_cuda.kernels()`, yet the window and `gemmpad info` should still show the whole ladder,
greyed, with each rung's summary, source file and measured speed. The manifest is read
from the GEMMPAD_REGISTER_CUDA_RUNG / _AUTO / GEMMPAD_REGISTER_FUSED calls in native/cuda/** (the
same arguments the C++ registry gets) and from assets/benchmarks/*/bench-gemm.json;
tests/runtime/test_registry.py fails when it no longer matches them.

    python native/tools/kernel_manifest.py          # rewrite the manifest
    python native/tools/kernel_manifest.py --check  # exit 1 if it is out of date
    python native/tools/kernel_manifest.py --anatomy  # on a GPU: record every CUDA rung's anatomy

The anatomy (gemmpad.runtime.registry.anatomy: tiles, threads, registers, shared memory, occupancy, read
from the compiled kernels) needs a GPU, so --anatomy records it at ANATOMY_SHAPES and the other
modes carry the committed records over unchanged: the window shows them, labelled, without one.
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
MACROS = ("GEMMPAD_REGISTER_CUDA_RUNG", "GEMMPAD_REGISTER_CUDA_AUTO", "GEMMPAD_REGISTER_FUSED")
# 4096^3 and the MLP's first layer at batch 1 and 4096 (M x N x K = batch x 100 x 784).
ANATOMY_SHAPES = ((4096, 4096, 4096), (1, 100, 784), (4096, 100, 784))
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
                if m.group(1) == "GEMMPAD_REGISTER_CUDA_AUTO":
                    entry["routes"] = [_string(a) for a in args[5:]]
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
    # the newest run, as gemmpad.bench.headers.newest_first picks it; not imported from there because
    # this tool runs on a checkout without the native modules built (importing gemmpad needs them)
    run, path = max(runs, key=lambda rp: rp[0]["machine"]["date_utc"])
    out: dict[str, dict[str, Any]] = {}
    for r in run["results"]:
        share = r.get("agrees_with_fp32")
        if isinstance(share, (int, float)) and not isinstance(share, bool) and r.get("backend") != "torch":
            out.setdefault(r["kernel"], {"share": round(share, 5), "date": run["machine"]["date_utc"][:10],
                                         "file": path.relative_to(root).as_posix()})
    return dict(sorted(out.items()))


def changes(root: Path = ROOT) -> dict[str, str]:
    """Per rung (CPU and CUDA), its header's "Change from N: ..." sentence(s), up to the "Limit:"
    line: the one line the lab view shows beside the rung's anatomy."""
    out: dict[str, str] = {}
    pattern = re.compile(r'GEMMPAD_REGISTER_\w+\(\s*"((?:cpu|cuda)\.[^"]+)"')
    for path in sorted([*(root / "native" / "cuda" / "gemm").glob("[0-9]*.cu"),
                        *(root / "native" / "cpu" / "gemm").glob("[0-9]*.cpp")]):
        text = path.read_text(encoding="utf-8")
        header = [line[2:].strip() for line in text.splitlines() if line.startswith("//")][:12]
        start = next((i for i, line in enumerate(header) if line.startswith("Change from")), None)
        if start is None:
            continue
        lines = [header[start]]
        for line in header[start + 1:]:
            if re.match(r"(Limit|Run|Profile|Figure)\b", line):
                break
            lines.append(line)
        for name in pattern.findall(_strip_comments(text)):
            out[name] = " ".join(lines)
    return dict(sorted(out.items()))


def committed_anatomy(path: Path = MANIFEST) -> dict[str, list[dict[str, Any]]]:
    """The anatomy records of the committed manifest (--anatomy wrote them on a GPU), carried over."""
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("anatomy", {})
    except (OSError, ValueError):
        return {}


def measure_anatomy() -> dict[str, list[dict[str, Any]]]:
    """Every CUDA rung's anatomy at ANATOMY_SHAPES on this machine's GPU; a rung that does not take
    a shape gets {"shape": ..., "unavailable": why}. Dispatchers have none of their own."""
    from gemmpad.runtime import registry
    from gemmpad.errors import GemmpadError

    out: dict[str, list[dict[str, Any]]] = {}
    for spec in registry.kernels(device="cuda", kind="gemm"):
        if spec.routes:
            continue
        rows = []
        for m, n, k in ANATOMY_SHAPES:
            try:
                row = dict(registry.anatomy(spec.name, m, n, k))
                row.pop("source", None)
                row["shape"] = [m, n, k]
            except GemmpadError as exc:
                row = {"shape": [m, n, k], "unavailable": str(exc)}
            rows.append(row)
        out[spec.name] = rows
    return out


def manifest(root: Path = ROOT, anatomy: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The manifest's content, as written; `anatomy` None: the committed records, unchanged."""
    return {
        "about": "Generated by native/tools/kernel_manifest.py from native/cuda/** and "
                 "assets/benchmarks/*/bench-gemm.json and bench-mlp.json; tests/runtime/test_registry.py checks it. "
                 "\"anatomy\": recorded on a GPU by --anatomy.",
        "kernels": registrations(root),
        "figures": figures(root),
        "agreement": agreement(root),
        "changes": changes(root),
        "anatomy": committed_anatomy(root / "app" / "gemmpad" / "kernel_manifest.json") if anatomy is None else anatomy,
    }


def render(root: Path = ROOT, anatomy: dict[str, list[dict[str, Any]]] | None = None) -> str:
    return json.dumps(manifest(root, anatomy), indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed manifest is out of date")
    parser.add_argument("--anatomy", action="store_true",
                        help="on a CUDA GPU: record every rung's anatomy at " +
                             ", ".join("x".join(map(str, s)) for s in ANATOMY_SHAPES))
    args = parser.parse_args()
    text = render(anatomy=measure_anatomy() if args.anatomy else None)
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
