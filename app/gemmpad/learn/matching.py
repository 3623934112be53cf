"""`gemmpad train --teacher cnn --match`: function matching. Every step the MLP learns the teacher's
reading of a fresh view of its batch, instead of the teacher's fixed readings of the training arrays.

Why: taught fixed readings, the 784-100-100-10 student stays 0.2-0.3 points of MNIST test below its
CNN teachers, and better teachers, more epochs, EMA or label smoothing did not move it
(gemmpad/learn/NOTES.md). Beyer et al. (2022, "Knowledge distillation: A good teacher is patient and
consistent") find that a student gains when it and the teacher see the very same augmented view each
step, for many epochs: every step brings rows never seen before, labelled by the teacher, so the small
network spends its capacity on the teacher's function around the data, not on the arrays themselves.

The views are mild because `preprocess` has already normalised place, size, slant and pen width: an
elastic field (Simard, Steinkraus & Platt 2003: alpha 34 px, sigma 4 px, scaled per row by a uniform
draw), a rotation and a scale, a share of rows left as they are; `mix` blends that share of rows with
their neighbour in the batch (weight <= 0.5), so the teacher's reading between two digits is taught too.
Every random number is drawn on the device inside the step, so a captured step (gemmpad.learn.torch_graph)
draws fresh views on every replay. torch is imported inside functions only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gemmpad.learn import distill

ROTATION_DEG = 6.0  # +- degrees
SCALE = 0.06  # +- share of the size
ELASTIC_ALPHA = 34.0  # px, Simard et al.'s scale of the smoothed displacement field
ELASTIC_SIGMA = 4.0  # px, the Gaussian that smooths it
CLEAN = 0.2  # share of rows the step shows as they are
MIX_WEIGHT = 0.5  # the most a mixed row takes of its neighbour
TEMPERATURE = 1.0  # the teacher's reading matched as it is: the views carry the softness
SOFT_WEIGHT = 1.0  # the teacher's reading only: a blended or distorted row has no label of its own


class Views:
    """The view function: rows [B, 784] (normalised as the MLP sees them) -> fresh views [B, 784]."""

    def __init__(self, background: float, device: str, mix: float = 0.0) -> None:
        """background: the normalised value of a blank pixel (what moves in from outside the field);
        mix: the share of rows blended with their neighbour."""
        import torch

        if not 0 <= mix <= 1:
            raise ValueError(f"mix {mix}: a share between 0 and 1")
        self.background, self.mix = background, mix
        r = torch.arange(-3 * ELASTIC_SIGMA, 3 * ELASTIC_SIGMA + 1, dtype=torch.float32, device=device)
        g = torch.exp(-r * r / (2 * ELASTIC_SIGMA**2))
        g = g / g.sum()
        self.half = len(r) // 2
        self.blur_x = g.view(1, 1, 1, -1).repeat(2, 1, 1, 1)  # both displacement channels, one at a time
        self.blur_y = g.view(1, 1, -1, 1).repeat(2, 1, 1, 1)

    def __call__(self, xb: Any) -> Any:
        import torch
        import torch.nn.functional as F

        img = xb.view(-1, 1, 28, 28) - self.background  # blank = 0, so grid_sample's padding is paper
        b = img.shape[0]
        r = torch.rand(b, 5, device=xb.device)
        angle = (2 * r[:, 0] - 1) * math.radians(ROTATION_DEG)
        scale = 1 + (2 * r[:, 1] - 1) * SCALE
        cos, sin, zero = torch.cos(angle) / scale, torch.sin(angle) / scale, torch.zeros_like(angle)
        theta = torch.stack([torch.stack([cos, -sin, zero], 1), torch.stack([sin, cos, zero], 1)], 1)
        grid = F.affine_grid(theta, [b, 1, 28, 28], align_corners=False)
        field = torch.rand(b, 2, 28, 28, device=xb.device) * 2 - 1
        field = F.conv2d(F.conv2d(field, self.blur_x, padding=(0, self.half), groups=2), self.blur_y,
                         padding=(self.half, 0), groups=2)
        grid = grid + (field * (ELASTIC_ALPHA * 2 / 28) * r[:, 2].view(-1, 1, 1, 1)).permute(0, 2, 3, 1)
        out = F.grid_sample(img, grid, padding_mode="zeros", align_corners=False)
        out = torch.where((r[:, 3] < CLEAN).view(-1, 1, 1, 1), img, out)
        if self.mix > 0:
            weight = torch.where(r[:, 4] < self.mix, torch.rand(b, device=xb.device) * MIX_WEIGHT,
                                 torch.zeros_like(angle)).view(-1, 1, 1, 1)
            out = (1 - weight) * out + weight * out.roll(1, 0)
        return (out + self.background).view(-1, 784)


@dataclass(frozen=True)
class Matching:
    """What a trainer needs to teach by function matching: the teacher and the views it reads."""

    team: distill.Team
    views: Views

    def step_targets(self, xb: Any) -> tuple[Any, Any]:
        """(fresh views of the rows xb, the teacher's reading of them)."""
        seen = self.views(xb)
        return seen, self.team.read(seen)

    def loss(self, logits: Any, labels: Any, teacher: Any) -> Any:
        return distill.loss(logits, labels, teacher, TEMPERATURE, SOFT_WEIGHT)


def describe_loss() -> str:
    """The student's loss in words, for the model card."""
    return distill.describe_loss(TEMPERATURE, SOFT_WEIGHT)


def describe(mix: float) -> str:
    """The views in one line, for the model card."""
    return (f"function matching: each step a fresh view of the batch (elastic alpha {ELASTIC_ALPHA:g} px sigma "
            f"{ELASTIC_SIGMA:g} px, rotation +-{ROTATION_DEG:g} deg, scale +-{100 * SCALE:g} %, {100 * CLEAN:g} % of "
            f"rows unchanged, {100 * mix:g} % blended with a neighbour at weight <= {MIX_WEIGHT:g}) read by the teacher")
