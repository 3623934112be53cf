"""What the package imports is what pyproject.toml installs: a plain `pip install .` in a fresh
venv has only the declared dependencies, so a module imported but not declared fails for a
stranger while every test here passes (filelock came only through torch, 2026-11-29)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
# import name -> distribution name, where they differ
DISTRIBUTION = {"PIL": "pillow", "cupy": "cupy-cuda13x"}
# imported only behind gemmpad.errors.require or an availability check, for the extras and benchmarks
OPTIONAL = {"torch", "torchvision", "matplotlib", "onnx", "onnxruntime", "cupy"}


def imported_packages() -> set[str]:
    names = set()
    for f in (ROOT / "app" / "gemmpad").rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "gemmpad"}


def test_every_imported_package_is_a_declared_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    missing = sorted(n for n in imported_packages() - OPTIONAL if DISTRIBUTION.get(n, n).lower() not in declared)
    assert not missing, f"imported by app/gemmpad but not in [project] dependencies: {missing}"


def test_the_optional_packages_are_in_an_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    offered = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower() for deps in extras.values() for d in deps}
    used = imported_packages() & OPTIONAL - {"cupy"}  # cupy: the bench's second reference, where the GPU image has it
    assert used <= offered, f"optional imports with no extra to install them: {sorted(used - offered)}"
