"""The one rule for digit labels (issue 41): gemmpad.data.arraycache.label_outside_digits, used by
the cached sets' check (labels_problem) and by Learn's sets (gemmpad.learn.rehearsal.read)."""

from __future__ import annotations

import numpy as np

from gemmpad.data.arraycache import label_outside_digits, labels_problem


def test_digits_and_no_labels_pass() -> None:
    assert label_outside_digits(np.arange(10, dtype=np.uint8)) is None
    assert label_outside_digits(np.zeros(0, dtype=np.int64)) is None
    assert labels_problem(np.zeros(0, dtype=np.int64), 0) is None


def test_the_largest_bad_label_is_named_else_the_smallest() -> None:
    assert label_outside_digits(np.array([3, 77, 12], dtype=np.uint8)) == 77
    assert label_outside_digits(np.array([3, -4, -1], dtype=np.int64)) == -4
    assert labels_problem(np.array([3, -4, 77], dtype=np.int64), 3) == "labels outside 0-9 (e.g. 77)"
