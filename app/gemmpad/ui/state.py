"""What the window shows and what the user chose, stored once (issue 41: the window kept the
backend and kernel twice, the chosen pair and the running one, and copied one into the other
when a result came back).

Two halves, each changed in one place:
- the choice (`choose`): backend, kernel, batch, timing mode, "run every frame", the Lab's
  rung. The kernel may be left to the backend's default (None): the worker names it, and
  `kernel` reads that name from the reading shown rather than keeping a copy.
- the reading shown (`show`, `blank`): the newest result of the inference worker and what
  made it (backend, kernel, batch).

The panels read it; the window (gemmpad.ui.window) is the only writer. No Dear PyGui here,
so what the window knows is tested without one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gemmpad.runtime.classifier import Prediction, Timing


@dataclass(frozen=True)
class Reading:
    """The newest answer the window shows, and what produced it."""

    backend: str  # what the classifier ran on (after a refused switch: what it still runs)
    kernel: str | None  # None until the worker has answered once
    batch: int  # the batch these figures were measured at (the choice may be newer)
    prediction: Prediction | None = None  # None: nothing drawn, or an error
    unsure: bool | None = None  # the detector's verdict (None: no detector, or nothing read)
    history: list[Timing] = field(default_factory=list)  # this configuration's frames, oldest first
    layer_us: tuple[float, ...] = ()  # per-layer times (layer-by-layer kernels)
    hidden: tuple[np.ndarray, np.ndarray] | None = None  # h1, h2 as `kernel` computed them
    hidden_us: float = float("nan")  # what writing h1, h2 out cost end to end (NaN: not measured)


@dataclass
class State:
    """The one source of truth for the window's selection and reading (see the module)."""

    backend: str
    kernel_choice: str | None  # None: the backend's default, named by the worker's answer
    batch: int
    warm: bool = False
    continuous: bool = False
    lab_rung: str | None = None  # the rung the Lab tab shows when not the running kernel
    reading: Reading = field(init=False)

    def __post_init__(self) -> None:
        self.reading = Reading(self.backend, self.kernel_choice, self.batch)

    # ------------------------------------------------------------------ the choice
    @property
    def kernel(self) -> str | None:
        """The kernel chosen; while the backend's default is asked for, the one the worker
        named for this backend (None until it has)."""
        if self.kernel_choice is not None:
            return self.kernel_choice
        return self.reading.kernel if self.reading.backend == self.backend else None

    def choose(self, *, backend: str | None = None, kernel: str | None = None, batch: int | None = None,
               warm: bool | None = None, continuous: bool | None = None) -> None:
        """Change what the user chose (the window checks the values first). A new backend
        without a kernel asks for its default; a new kernel shows in the Lab tab."""
        if backend is not None and backend != self.backend:
            self.backend, self.kernel_choice = backend, None
        if kernel is not None:
            self.kernel_choice, self.lab_rung = kernel, None
        if batch is not None:
            self.batch = int(batch)
        if warm is not None:
            self.warm = bool(warm)
        if continuous is not None:
            self.continuous = bool(continuous)

    def show_rung(self, rung: str | None) -> None:
        """The Lab tab shows `rung`; None (or the running kernel): the running one."""
        self.lab_rung = None if rung == self.reading.kernel else rung

    def request(self) -> tuple[str, str | None, int, bool]:
        """What a request to the worker runs with; a change is a new request even for the same drawing."""
        return self.backend, self.kernel_choice, self.batch, self.warm

    # ------------------------------------------------------------------ the reading
    def show(self, reading: Reading, *, refused: bool) -> None:
        """The worker's newest answer. `refused`: it could not switch to the choice sent last and
        runs what it ran before; the choice is withdrawn (else the next stroke asks again, and
        the menu would mark a kernel that does not run)."""
        self.reading = reading
        if refused:
            self.backend, self.kernel_choice = reading.backend, reading.kernel

    def blank(self) -> None:
        """The canvas was cleared: no reading, until the next drawing's (the figures stay)."""
        r = self.reading
        self.reading = Reading(r.backend, r.kernel, r.batch, history=r.history, layer_us=r.layer_us)
