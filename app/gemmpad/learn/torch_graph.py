"""One torch training step captured in a CUDA graph and replayed: how the MLP (gemmpad.learn.train_torch)
and its CNN teacher (gemmpad.learn.distill) train on a GPU without paying Python and a launch per op.

Eagerly a step of the 784-100-100-10 MLP costs ~1.7 ms of host time on the H200's host for ~0.3 ms
of GPU work, and the teacher's 2.5 ms for ~1 ms (NOTES.md, 2026-11-30); replayed, each costs its GPU
time. What a step needs to be captured: its rows chosen through one static index tensor, gradients
kept (zero_grad(set_to_none=False)), and an optimizer that steps on the device (SGD, or AdamW with
capturable=True and its learning rate a device tensor, set with `set_lr`). torch is passed in, so
this module imports it nowhere itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

WARMUP = 3  # eager steps on a side stream before capture: torch's docs ask for a few (lazy state, cuBLAS handles)


def set_lr(opt: Any, lr: float) -> None:
    """Every parameter group's learning rate, in place where it is a device tensor (a captured step
    reads it from there), else by assignment."""
    for g in opt.param_groups:
        if hasattr(g["lr"], "fill_"):
            g["lr"].fill_(lr)
        else:
            g["lr"] = lr


def lr_value(torch: Any, lr: float, device: str) -> Any:
    """The learning rate to build an optimizer with: a device tensor on CUDA (AdamW(capturable=True)
    reads it inside a graph), a float elsewhere."""
    return torch.tensor(lr, dtype=torch.float32, device=device) if device == "cuda" else lr


class GraphStep:
    """step(index) captured once for index tensors of `rows` entries and replayed with `run`. The
    warm-up's steps are undone (the parameters restored, every optimizer state tensor zeroed: a zero
    momentum or moment with step 0 is what a first step starts from), so the weights and the
    optimizer are those of an eager loop that had not run yet."""

    def __init__(self, torch: Any, step: Callable[[Any], tuple[Any, ...]], rows: int, device: str,
                 params: Iterable[Any], opt: Any) -> None:
        self.index = torch.zeros(rows, dtype=torch.int64, device=device)
        params = list(params)
        start = [p.detach().clone() for p in params]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP):
                step(self.index)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = step(self.index)
        with torch.no_grad():
            for p, s in zip(params, start):
                p.copy_(s)
                for value in opt.state[p].values():
                    if torch.is_tensor(value):
                        value.zero_()

    def run(self, index: Any) -> tuple[Any, ...]:
        """One step on the rows `index` (a device tensor of `rows` entries); its outputs, copied out
        of the graph's static buffers."""
        self.index.copy_(index)
        self.graph.replay()
        return tuple(o.clone() for o in self.out)
