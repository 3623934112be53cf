"""`gemmpad train --teacher cnn`: a convolutional teacher (or --teachers N of them) whose soft readings the MLP learns from.

The shipped network must stay 784-100-100-10, but what it is trained towards need not be
the hard labels alone. A small CNN, trained first on the very same arrays, generalises
better to strokes it has not seen (its filters are shared across positions); its
softened probabilities (temperature TEMPERATURE) say which digits a sample resembles,
and the MLP fits a mix of those and the labels (Hinton, Vinyals & Dean, 2015). The
teacher is thrown away after training: the model file holds the MLP only.
torch is imported inside functions only, like gemmpad.learn.train.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from gemmpad.learn import torch_graph

TEMPERATURE = 3.0  # softens the teacher's probabilities so the runner-up digits carry signal
SOFT_WEIGHT = 0.7  # share of the loss that follows the teacher; the rest follows the labels
EPOCHS = 8  # the teacher's epochs (AdamW, cosine learning rate from LR)
LR = 2e-3
BATCH = 256


def _network() -> Any:
    import torch.nn as nn

    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Dropout(0.3), nn.Linear(128 * 5 * 5, 256), nn.ReLU(), nn.Dropout(0.3), nn.Linear(256, 10))


class Team:
    """Trained CNNs that read as one teacher: the mean of their log-probabilities (members that
    disagree leave the runner-up digits more weight: the softer targets are what the MLP gains from,
    issue 43)."""

    def __init__(self, nets: list[Any], device: str) -> None:
        self.nets, self.device = nets, device
        for net in nets:
            net.eval()  # dropout off: a teacher reads, it no longer trains

    def logits(self, x: np.ndarray) -> np.ndarray:
        """Their reading of rows x [N, 784] (normalised as the MLP sees them), float32 [N, 10]: the
        fixed targets of plain distillation, read() 8192 rows at a time."""
        import torch

        xt = torch.from_numpy(np.ascontiguousarray(x, np.float32)).to(self.device)
        out = [self.read(xt[i : i + 8192]).cpu().numpy() for i in range(0, len(x), 8192)]
        return np.concatenate(out) if out else np.zeros((0, 10), np.float32)

    def read(self, xb: Any) -> Any:
        """Their reading of a device tensor of rows [B, 784], as a tensor [B, 10], without gradients:
        what function matching (gemmpad.learn.matching) asks of the teacher every step."""
        import torch
        import torch.nn.functional as F

        cuda = self.device == "cuda"
        images = xb.view(-1, 1, 28, 28).contiguous(memory_format=torch.channels_last if cuda else torch.contiguous_format)
        with torch.no_grad(), torch.autocast(device_type=self.device, dtype=torch.bfloat16, enabled=cuda):
            return sum(F.log_softmax(net(images).float(), dim=1) for net in self.nets) / len(self.nets)


def train_team(x: np.ndarray, y: np.ndarray, x_val: np.ndarray, y_val: np.ndarray, seed: int, device: str,
               log: Callable[[str], None], members: int = 1) -> tuple[Team, float]:
    """Train `members` CNNs on x [N, 784] (normalised as the MLP sees it), y, each from its own seed
    (seed, seed + 1, ...); return them as one Team and its accuracy on the held-out x_val, y_val (nan
    when empty). On a GPU each trains by one captured step replayed (_trained)."""
    import torch

    xt = torch.from_numpy(x).to(device).view(-1, 1, 28, 28)
    nets = [_trained(xt, torch.from_numpy(y).to(device), seed + m, device,
                     log if members == 1 else (lambda s, m=m: log(f"  member {m + 1}/{members}:{s}")))
            for m in range(members)]
    team = Team(nets, device)
    return team, (float((team.logits(x_val).argmax(1) == y_val).mean()) if len(x_val) else float("nan"))


def teacher_logits(x: np.ndarray, y: np.ndarray, x_val: np.ndarray, y_val: np.ndarray, seed: int, device: str,
                   log: Callable[[str], None], members: int = 1) -> tuple[np.ndarray, float]:
    """train_team, then the team's reading of x (float32 [N, 10]) and its held-out accuracy."""
    team, val = train_team(x, y, x_val, y_val, seed, device, log, members)
    out = team.logits(x)
    log(f"  teacher ({describe_team(members)}): training-set accuracy {100 * float((out.argmax(1) == y).mean()):.2f}%, "
        f"held-out {100 * val:.2f}%")
    return out, val


def _trained(xt: Any, yt: Any, seed: int, device: str, log: Callable[[str], None]) -> Any:
    """One CNN trained on the tensors xt [N, 1, 28, 28], yt [N] (EPOCHS of AdamW, cosine rate). On a
    GPU the full batches replay one captured step (gemmpad.learn.torch_graph) on channels-last
    images: 2.5 -> 1.0 ms a step on the H200 (NOTES.md, 2026-11-30)."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    cuda = device == "cuda"
    layout = torch.channels_last if cuda else torch.contiguous_format
    net = _network().to(device, memory_format=layout)
    opt = torch.optim.AdamW(net.parameters(), lr=torch_graph.lr_value(torch, LR, device), weight_decay=1e-4,
                            capturable=cuda)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    steps = math.ceil(len(xt) / BATCH)

    def step(idx: Any) -> tuple[Any]:
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=cuda):
            loss = F.cross_entropy(net(xt[idx].contiguous(memory_format=layout)).float(), yt[idx])
        opt.zero_grad(set_to_none=not cuda)
        loss.backward()
        opt.step()
        return (loss.detach(),)

    net.train()
    graph = None
    if cuda and len(xt) >= BATCH:
        graph = torch_graph.GraphStep(torch, step, BATCH, device, net.parameters(), opt)
    for epoch in range(EPOCHS):
        torch_graph.set_lr(opt, LR * 0.5 * (1 + math.cos(math.pi * epoch / EPOCHS)))
        order = torch.randperm(len(xt), generator=gen).to(device)
        for s in range(steps):
            idx = order[s * BATCH : (s + 1) * BATCH]
            (loss,) = graph.run(idx) if graph is not None and len(idx) == BATCH else step(idx)
        log(f"  teacher epoch {epoch + 1}/{EPOCHS}  loss {float(loss):.4f}")
    return net


def loss(logits: Any, labels: Any, teacher: Any, temperature: float = TEMPERATURE,
         soft_weight: float = SOFT_WEIGHT) -> Any:
    """The student's loss: soft_weight of the tempered KL to the teacher (scaled by T^2 so its
    gradients keep their size), the rest cross-entropy to the labels."""
    import torch.nn.functional as F

    t = temperature
    kd = F.kl_div(F.log_softmax(logits / t, dim=1), F.log_softmax(teacher / t, dim=1), log_target=True,
                  reduction="batchmean") * (t * t)
    return kd if soft_weight == 1 else soft_weight * kd + (1 - soft_weight) * F.cross_entropy(logits, labels)


def describe() -> str:
    """The teacher's layers in one line, for the model card (kept beside _network)."""
    return ("conv 3x3x32, conv 3x3x64, max-pool 2, conv 3x3x128, max-pool 2, dropout 0.3, dense 256, "
            "dropout 0.3, dense 10; ReLU")


def describe_team(members: int) -> str:
    """'CNN' or 'ensemble of N CNNs', for the log and the card."""
    return "CNN" if members == 1 else f"ensemble of {members} CNNs, log-probabilities averaged"


def describe_loss(temperature: float = TEMPERATURE, soft_weight: float = SOFT_WEIGHT) -> str:
    """The student's loss in words, for the model card."""
    kl = f"KL(teacher || MLP) at temperature {temperature:g} (scaled by T^2)"
    return kl if soft_weight == 1 else f"{soft_weight:g} x {kl} + {1 - soft_weight:.1f} x softmax cross-entropy"
