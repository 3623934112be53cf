"""The trainers by name: the one place `--trainer` is read (gemmpad train, fine-tune, personal and
both training benchmarks pick through it).

"numpy" (gemmpad.learn.train_numpy) runs anywhere; "native" (gemmpad.learn.train_native) is
gemmpad's own CUDA kernels; "torch" (gemmpad.learn.train_torch) made the shipped model and is the
benchmarks' reference. "auto" is the GPU's native trainer when it can run, else NumPy (the window's
fine-tune: torch is not loaded there). Each is a gemmpad.learn.trainer.Trainer; the options only
one of them has (precision, device, optimizer...) are bound here, so its fit() takes the common
arguments alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gemmpad.errors import CudaUnavailable, GemmpadError
from gemmpad.learn import train_native, train_numpy, train_torch
from gemmpad.learn.trainer import Trainer
from gemmpad.runtime import native

NAMES = ("numpy", "native", "torch")
CHOICES = ("auto",) + NAMES


@dataclass(frozen=True)
class Picked:
    """A trainer's fit() with its own options bound: a gemmpad.learn.trainer.Trainer."""

    name: str
    fit: Callable[..., dict[str, np.ndarray]]


def pick(name: str, **options: Any) -> Trainer:
    """The trainer called `name` (one of CHOICES), with `options` bound to its fit().

    "native" without a usable GPU, or without the trainer in this build, raises CudaUnavailable
    saying why, before any work; "auto" then falls back to NumPy.
    """
    if name not in CHOICES:
        raise GemmpadError(f"unknown trainer {name!r}; choose one of {', '.join(CHOICES)}")
    if name in ("auto", "native"):
        try:
            status = native.cuda_status()
            if not status.available:
                raise CudaUnavailable(f"--trainer native trains on the GPU: {status.reason}")
            train_native.cuda_trainer_class()
            name = "native"
        except GemmpadError:  # CudaUnavailable, or a build without the trainer
            if name == "native":
                raise
            name = "numpy"
    module = {"numpy": train_numpy, "native": train_native, "torch": train_torch}[name]
    return Picked(name, functools.partial(module.fit, **options))
