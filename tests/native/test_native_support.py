"""native/cuda/support: one device-buffer type and one graph type, and no probe code in the
module's sources (issue 41). Source checks: they run without a GPU or a CUDA build."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CUDA = ROOT / "native" / "cuda"
SOURCES = sorted(p for p in CUDA.rglob("*") if p.suffix in {".cu", ".cuh", ".cpp", ".h"})

# Raw allocation and graph calls belong to support/buffer.cuh and support/graph.cuh alone: a second
# buffer type would skip the free guard that stops the resident kernel before a free can hang.
OWNED = {
    "support/buffer.cuh": re.compile(r"\b(cudaMalloc|cudaFree|cudaFreeHost|cudaHostAlloc|cudaMallocHost)\s*\("),
    "support/graph.cuh": re.compile(r"\b(cudaStreamBeginCapture|cudaGraphInstantiate|cudaGraphExecDestroy)\s*\("),
}


def code(path: Path) -> str:
    """The file without its comments (a comment may name a call)."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def test_the_sources_are_found():
    assert any(p.name == "mlp.cu" for p in SOURCES) and any(p.name == "trainer.cu" for p in SOURCES)


@pytest.mark.parametrize("owner", sorted(OWNED))
def test_only_the_support_header_makes_these_calls(owner):
    pattern = OWNED[owner]
    callers = [f"{p.relative_to(CUDA)}: {m.group(1)}" for p in SOURCES if p.relative_to(CUDA).as_posix() != owner
               for m in pattern.finditer(code(p))]
    assert not callers, f"use {owner}'s type instead of the raw calls: {callers}"


def test_no_probe_code_in_the_modules_sources():
    """The probe's knobs and trace tables live in native/tools; a kernel keeps only its empty
    stamp(i) phase marks (fused_common.cuh defines them unless the trace build has)."""
    hooks = [f"{p.relative_to(CUDA)}:{i}" for p in SOURCES for i, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"#\s*if(n?def)?\b.*GEMMPAD_MLP_(PROBE|TRACE)", line)
             and not (p.name == "fused_common.cuh" and line.strip() == "#ifndef GEMMPAD_MLP_TRACE")]
    assert not hooks
    assert not re.search(r"tools/", "".join(code(p) for p in SOURCES if p.suffix != ".cpp")), "a source includes native/tools"
