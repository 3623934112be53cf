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


def test_package_data_is_read_where_the_wheel_puts_it() -> None:
    """The wheel carries app/gemmpad as it is, plus the models CMake installs into gemmpad/models;
    the modules that read package data moved into subpackages (issue 41) and must still look at
    the package root, not beside themselves."""
    import gemmpad
    from gemmpad.runtime import model, registry
    from gemmpad.ui import style

    package = Path(gemmpad.__file__).resolve().parent
    assert "DESTINATION gemmpad/models" in (ROOT / "native" / "CMakeLists.txt").read_text()
    assert model.MODELS_DIR == package / "models"
    assert registry.MANIFEST == package / "kernel_manifest.json" and registry.MANIFEST.is_file()
    assert style.FONTS == package / "ui" / "fonts" and any(style.FONTS.glob("*.ttf"))
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["scikit-build"]["wheel"]["packages"] == [
        "app/gemmpad"]
