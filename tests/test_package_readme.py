"""app/gemmpad/README.md, the newcomer's walk through the package, stays true to the tree:
short, every subpackage in it, and every module path it names exists (issue 41)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "app" / "gemmpad"
README = PACKAGE / "README.md"


def test_it_is_a_short_read() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 80


def test_every_subpackage_is_walked_through() -> None:
    text = README.read_text(encoding="utf-8")
    folders = sorted(str(p.parent.relative_to(PACKAGE)) for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)
    missing = [f for f in folders if f"`{f}/`" not in text]
    assert not missing, f"app/gemmpad/README.md does not mention {missing}"


def test_every_module_it_names_exists() -> None:
    text = README.read_text(encoding="utf-8")
    named = set(re.findall(r"\b((?:[a-z_]+/)+[a-z_]+\.py)\b", text))
    assert named, "the README names modules by their path"
    missing = sorted(n for n in named if not (PACKAGE / n).is_file() and not (PACKAGE.parents[1] / n).is_file())
    assert not missing, f"app/gemmpad/README.md names modules that are not there: {missing}"
