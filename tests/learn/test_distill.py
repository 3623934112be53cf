"""The distillation loss: labels and the teacher each pull the way they should."""

from __future__ import annotations

import pytest
from gemmpad.learn import distill

torch = pytest.importorskip("torch")


def test_a_student_that_matches_the_teacher_pays_only_the_label_share() -> None:
    logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]])
    labels = torch.tensor([0, 2])
    ce = torch.nn.functional.cross_entropy(logits, labels)
    assert float(distill.loss(logits, labels, logits.clone())) == pytest.approx((1 - distill.SOFT_WEIGHT) * float(ce))


def test_the_teacher_pulls_towards_its_own_reading() -> None:
    labels = torch.tensor([0])
    teacher = torch.tensor([[1.0, 3.0, -2.0]])  # the teacher reads a 1
    student = torch.zeros(1, 3, requires_grad=True)
    distill.loss(student, labels, teacher).backward()
    soft = torch.zeros(1, 3, requires_grad=True)  # the teacher's part alone
    (distill.loss(soft, labels, teacher) - (1 - distill.SOFT_WEIGHT)
     * torch.nn.functional.cross_entropy(soft, labels)).backward()
    assert soft.grad[0, 1] < 0 < soft.grad[0, 2]  # descent raises the teacher's digit, lowers its least likely
    assert student.grad[0, 0] < 0  # and the label still pulls its own digit up
