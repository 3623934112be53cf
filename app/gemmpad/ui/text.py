"""The words and numbers the window shows: latency figures, axis ticks, kernel and GPU lines.

Pure functions (no Dear PyGui), so what a user reads is tested without a window.
"""

from __future__ import annotations

import numpy as np

from gemmpad.runtime import registry
from gemmpad.errors import GemmpadError
from gemmpad.runtime.native import CudaStatus
from gemmpad.runtime.unsure import Detector, writers_entry


# (microseconds per unit, unit): a time is shown in the largest unit it reaches, so the slowest
# rung at batch 4096 (1.3 s) reads "1.33 s", not "1,332,838 µs" that no column is wide enough for
_UNITS = ((1e6, "s"), (1e3, "ms"), (1.0, "µs"), (1e-3, "ns"))
# Between a number and its unit: a no-break space, so a wrapped line never leaves "1.23" at the
# end of one line and "µs" at the start of the next (the window wraps text at plain spaces)
NBSP = "\u00a0"


def fmt_us(v: float | None) -> str:
    """A time given in microseconds, in the unit that suits it with 3 significant figures
    ("850 ns", "5.12 µs", "14.4 ms", "1.33 s"): at most 7 characters below 1000 s, so
    columns never touch; "–" when there is none."""
    if v is None or not np.isfinite(v):
        return "–"
    i = next((i for i, (scale, _) in enumerate(_UNITS) if abs(v) >= scale), len(_UNITS) - 1)
    x = float(f"{abs(v) / _UNITS[i][0]:.3g}")  # rounded first: 999.96 µs is "1.00 ms", not "1000 µs"
    if x >= 1000 and i > 0:
        i -= 1
        x = float(f"{abs(v) / _UNITS[i][0]:.3g}")
    decimals = 2 if x < 10 else 1 if x < 100 else 0
    return f"{'-' if v < 0 else ''}{x:,.{decimals}f}{NBSP}{_UNITS[i][1]}"


def log_ticks(lo: float, hi: float) -> tuple[tuple[str, float], ...]:
    """1-2-5 ticks between lo and hi microseconds (the default log axis labels only whole
    decades), or decades alone when the range spans more than 2.5 of them (the labels would
    overlap); each label in its own unit ("500 µs", "1 ms", "2 s")."""
    ticks = []
    digits = (1, 2, 5) if np.log10(hi / lo) <= 2.5 else (1,)
    for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1):
        for d in digits:
            v = d * 10.0**e
            if lo <= v <= hi:
                scale, unit = next(((s, u) for s, u in _UNITS if v >= s), _UNITS[-1])
                ticks.append((f"{v / scale:g}{NBSP}{unit}", v))
    return tuple(ticks)


def kernel_summary(name: str) -> str:
    """One line on what a kernel does, from the registry, and how often it reads a digit as fp32 does
    (the committed bench figure: what a reduced precision costs a user, in digits)."""
    if name == "numpy":
        return "NumPy's matmul (BLAS) in Python: the reference the native kernels must match."
    try:
        spec = registry.get(name)
    except GemmpadError:  # a kernel the registry does not describe: no summary rather than a failure
        return ""
    line = f"{spec.summary}  [{spec.precision}, {spec.kind}]  {spec.source}"
    return line + agreement_note(registry.agreement(name))


def agreement_note(figure: tuple[float, str] | None) -> str:
    """"  agrees with fp32 on 99.87 % of MNIST test digits (bench of 2026-11-29)", or "" without a figure."""
    if figure is None:
        return ""
    share, date = figure
    return f"  agrees with fp32 on {100 * share:.2f} % of MNIST test digits" + (f" (bench of {date})" if date else "")


def gpu_line(status: CudaStatus) -> str:
    """The status bar's GPU words: the device, or the plain reason (native.plain_reason) there is none."""
    if status.available:
        return f"GPU: {status.device}"
    return f"No GPU: {status.reason.rstrip('.')}; the CPU runs the network"


def frames_caption(n: int, kernel: str, batch: int, warm: bool) -> str:
    """What the latency plot covers."""
    what = f"{n} frame{'' if n == 1 else 's'} of {kernel} at batch {batch}{', warm' if warm else ''}"
    return what + " (the plot restarts when the setting changes)"


def unsure_note(detector: Detector | None, why: str) -> str:
    """What the prediction's tooltip says about the unsure detector: what it looks at and
    how often it was measured to be wrong, or why there is none."""
    if detector is None:
        return f"(No unsure detector: {why}.)"
    m = detector.measured
    try:
        _, pen = writers_entry(m)
        # the model after --folds trained on every writer: not "unseen" (gemmpad.learn.unsure_fit.trained_on)
        writers = "pen writers' digits it trained on" if pen.get("seen_in_training") else "unseen writers' digits"
        # Learn's (unsure.carried) holds the base's rates; `gemmpad unsure --model` measures the new weights
        measured = " Carried over by Learn from the base model, measured there:" if "carried_from" in detector.fitted \
            else " Measured:"
        rates = (f"{measured} it flags {100 * m['mnist_test']['flagged']:.1f} % of MNIST test digits and "
                 f"{100 * pen['flagged']:.1f} % of {writers}, and catches "
                 f"{100 * m['nondigits']['caught']:.0f} % of generated scribbles, letters, shapes and pairs.")
    except (KeyError, StopIteration, TypeError):
        rates = ""
    return ("A detector reads the hidden layers, the probabilities and the ink's shape to tell scribbles, "
            "letters, shapes and two digits written together from one digit." + rates)


def hidden_source(kernel: str, hidden_us: float, short: bool = False) -> str:
    """Under the hidden layers: which kernel wrote them (they are its own activations, not a
    NumPy recomputation) and what writing them out cost beyond the timed pass; none where the
    pass that wrote them was no slower (0: a difference of two passes is clamped there), or
    that a pass this slow writes them itself, unmeasured (NaN). `short`: without the words a
    narrow panel has no room for."""
    if not np.isfinite(hidden_us):
        cost = "not timed" if short else "their cost not timed on a pass this slow"
    elif hidden_us <= 0.0:
        cost = "no extra time" if short else "no extra time to write them"
    else:
        cost = f"+{fmt_us(hidden_us)}" + ("" if short else " to write them")
    return f"h1, h2 from {kernel} · {cost}"
