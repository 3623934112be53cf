"""gemmpad.bench.learn: what its cells and its table say about a Learn's cost to everyone else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gemmpad.bench import learn
from gemmpad.data.drawings import Example
from gemmpad.learn import finetune
from gemmpad.runtime.model import load_model


@pytest.mark.parametrize("writers", [True, False])
def test_cells_and_table_say_the_same_of_unseen_writers(monkeypatch: pytest.MonkeyPatch, writers: bool) -> None:
    """Learn sets without unseen writers (a model trained without pendigits) have no such figure: a cell
    said "+0.00 points" and the table "+nan / +nan"; both now say it was not measured, and with the
    figure both give it."""
    model = load_model()
    figures = {"MNIST test": 0.99} | ({"unseen writers": 0.98} if writers else {})

    def fake_learn(base: Any, examples: Any, *a: Any, **k: Any) -> finetune.Outcome:
        after = {name: v - 0.001 for name, v in figures.items()}
        return finetune.Outcome(base.weights, figures, after, True, "", "numpy", 5, 0, 100, 300, {"total": 0.1})

    monkeypatch.setattr(finetune, "learn", fake_learn)
    blank = Example(4, Path(), np.zeros((28, 28), np.float32), None, "0" * 12)
    cell = learn.Cell(1, 4, "brush-18px-280", [blank] * 5, [blank] * 5, 0.5)
    said: list[str] = []
    rows = learn.quality(model, [cell], None, "numpy", log=said.append)  # type: ignore[arg-type]
    table = learn.summary(rows, [])
    assert "nan" not in table.lower() and "nan" not in said[0].lower()
    in_cell, in_table = ("-0.10 points", "-0.10 / -0.10") if writers else (learn.NOT_MEASURED, learn.NOT_MEASURED)
    assert f"unseen writers {in_cell}," in said[0] and table.splitlines()[2].endswith(f"| {in_table} |")
