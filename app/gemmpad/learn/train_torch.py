"""Training the MLP in PyTorch: the trainer that made the shipped model (`gemmpad train`'s default),
and the reference `gemmpad bench train` and `gemmpad bench learn` measure gemmpad's own against.

One loop for all of them: the same network (x @ W + b, weights in gemmpad.runtime.model's
layout), the arguments of gemmpad.learn.trainer.Trainer.fit, and what only torch offers bound
when the trainer is picked (gemmpad.learn.trainers.pick): AdamW, automatic mixed precision, a
CNN teacher's logits (gemmpad.learn.distill) or its reading of fresh views of each batch
(gemmpad.learn.matching), the device, and one step captured in a CUDA graph (gemmpad.learn.torch_graph).
torch is imported inside fit() only: `gemmpad info` and the app never load it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from gemmpad.errors import CudaUnavailable, GemmpadError
from gemmpad.learn import distill, matching, torch_graph
from gemmpad.learn.trainer import BatchOrder, EpochCallback, LrSchedule, check_loss, plan

OPTIMIZERS = ("sgd", "adamw")
NAMES = ("W1", "b1", "W2", "b2", "W3", "b3")


def device_for(choice: str) -> str:
    """"cpu", "cuda", or for "auto" the GPU when torch sees one, else the CPU."""
    import torch

    if choice == "cuda" and not torch.cuda.is_available():
        raise CudaUnavailable("--device cuda: torch sees no CUDA device")
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return choice


def fit(
    x: np.ndarray,
    y: np.ndarray,
    weights: dict[str, np.ndarray],
    *,
    epochs: int,
    batch_size: int = 64,
    lr_schedule: LrSchedule = 0.05,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    decay_biases: bool = True,
    seed: int = 0,
    batch_order: BatchOrder | None = None,
    callback: EpochCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    targets: np.ndarray | None = None,
    optimizer: str = "sgd",
    precision: str = "fp32",
    device: str = "cpu",
    teacher: np.ndarray | None = None,
    match: matching.Matching | None = None,
    use_graph: bool = False,
    step_losses: list[float] | None = None,
    progress: bool = False,
) -> dict[str, np.ndarray]:
    """gemmpad.learn.trainer.Trainer.fit in torch, plus:

    optimizer: "sgd" (torch.optim.SGD with momentum) or "adamw" (torch.optim.AdamW; momentum unused),
    weight decay on every parameter unless decay_biases=False. precision "mixed": autocast to
    bf16 on the CPU, fp16 with a gradient scaler on the GPU. teacher: logits [N, 10] of a CNN;
    the loss is then gemmpad.learn.distill.loss. match (instead of teacher): each step trains on its
    fresh views of the batch, towards its teacher's reading of them. use_graph (CUDA, fp32): full
    batches replay one captured step (gemmpad.learn.torch_graph), the short last batch runs eagerly;
    on a GPU AdamW always steps on the device (capturable, its rate a device tensor: any schedule
    replays, and a replayed step computes what the eager one does, bit for bit), SGD keeps the rate
    it was captured with (one rate for every epoch). `gemmpad train` uses it on a GPU;
    `gemmpad bench train` times torch with and without it. step_losses gets each step's loss appended.
    device: "cpu", "cuda" or "auto" (device_for). progress: a bar on stderr when it is a terminal.
    should_stop is polled between steps.
    """
    import torch

    p = plan(x, y, weights, epochs=epochs, batch_size=batch_size, lr_schedule=lr_schedule, momentum=momentum,
             weight_decay=weight_decay, seed=seed, batch_order=batch_order, targets=targets, precision=precision)
    if optimizer not in OPTIMIZERS:
        raise GemmpadError(f"unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
    if teacher is not None and match is not None:
        raise GemmpadError("a teacher's fixed logits or function matching, not both")
    if teacher is not None and teacher.shape != (len(p.x), 10):
        raise GemmpadError(f"teacher logits must have shape ({len(p.x)}, 10), got {teacher.shape}")
    if use_graph and optimizer == "sgd" and len(set(p.lrs)) > 1:  # SGD's captured step keeps its rate
        raise GemmpadError("use_graph with SGD needs one learning rate for every epoch (the captured step keeps "
                           "its own); AdamW's follows a schedule")
    device = device_for(device)  # "cuda" without one: a line saying so, not torch's traceback
    if use_graph and (device != "cuda" or precision != "fp32"):
        raise GemmpadError("use_graph captures an fp32 step on a CUDA device only")
    torch.manual_seed(seed)
    params = {k: torch.tensor(p.weights[k], device=device, requires_grad=True) for k in NAMES}
    groups: Any = [params[k] for k in NAMES]
    if not decay_biases:
        groups = [{"params": [params[k] for k in NAMES if k[0] == "W"]},
                  {"params": [params[k] for k in NAMES if k[0] == "b"], "weight_decay": 0.0}]
    if optimizer == "sgd":
        opt: Any = torch.optim.SGD(groups, lr=p.lrs[0], momentum=momentum, weight_decay=weight_decay)
    else:  # on a GPU it steps on the device, its rate a device tensor, captured or not: a replay is the eager step
        opt = torch.optim.AdamW(groups, lr=torch_graph.lr_value(torch, p.lrs[0], device), weight_decay=weight_decay,
                                capturable=device == "cuda")
    xt = torch.from_numpy(p.x).to(device)
    yt = torch.from_numpy(p.y.astype(np.int64)).to(device)
    soft = torch.from_numpy(p.targets).to(device) if p.targets is not None else None
    tt = torch.from_numpy(teacher).to(device) if teacher is not None else None
    mixed = precision == "mixed"
    amp_dtype = torch.bfloat16 if device == "cpu" else torch.float16
    scaler = torch.amp.GradScaler(device, enabled=mixed and amp_dtype == torch.float16)

    def forward(xb: Any) -> Any:
        h = torch.relu(xb @ params["W1"] + params["b1"])
        h = torch.relu(h @ params["W2"] + params["b2"])
        return h @ params["W3"] + params["b3"]

    def step(idx: Any) -> tuple[Any, Any]:
        """One optimizer step on rows idx: (its mean loss, how many it read right), device tensors."""
        yb = yt[idx]
        xb, target = match.step_targets(xt[idx]) if match is not None else (xt[idx], None)
        with torch.autocast(device_type=device, dtype=amp_dtype, enabled=mixed):
            logits = forward(xb)
            if match is not None:
                loss = match.loss(logits.float(), yb, target)
            elif tt is not None:
                loss = distill.loss(logits.float(), yb, tt[idx])
            else:
                loss = torch.nn.functional.cross_entropy(logits.float(), yb if soft is None else soft[idx])
        opt.zero_grad(set_to_none=not use_graph)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.detach(), (logits.detach().argmax(1) == yb).sum()

    graph = torch_graph.GraphStep(torch, step, batch_size, device, params.values(), opt) if use_graph else None
    n = len(p.x)
    steps = -(-n // batch_size)
    host = lambda: {k: v.detach().float().cpu().numpy().astype(np.float32) for k, v in params.items()}  # noqa: E731
    for epoch, lr in enumerate(p.lrs):
        torch_graph.set_lr(opt, lr)
        order = torch.from_numpy(p.order(epoch).astype(np.int64)).to(device)
        losses, sizes, correct = [], [], []  # summed once per epoch: no extra launches per step
        for s in range(steps):
            if should_stop is not None and should_stop():
                return host()
            idx = order[s * batch_size : (s + 1) * batch_size]
            loss, right = graph.run(idx) if graph is not None and len(idx) == batch_size else step(idx)
            losses.append(loss)
            sizes.append(len(idx))
            correct.append(right)
            if progress and sys.stderr.isatty() and s % 50 == 0:
                done = (s + 1) / steps
                print(f"\r  epoch {epoch + 1}: [{'#' * int(30 * done):30s}] {100 * done:5.1f}%", end="", file=sys.stderr)
        if progress and sys.stderr.isatty():
            print("\r" + " " * 60 + "\r", end="", file=sys.stderr)
        per_step = torch.stack(losses).float().cpu().numpy()
        if step_losses is not None:
            step_losses += per_step.tolist()
        mean_loss = float(per_step @ np.array(sizes, dtype=np.float64)) / n
        check_loss(epoch, mean_loss)
        if callback is not None:
            callback(epoch, mean_loss, float(torch.stack(correct).sum()) / n, host())
    return host()

