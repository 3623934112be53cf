"""How far a kernel of a given precision may stray from float64: one error bound for every check.

A fixed tolerance per precision is the wrong instrument: the error a correct bf16 kernel makes
grows with K and with the operands' magnitudes, so a tolerance loose enough for K = 784 hides
bugs at K = 8, and one tight enough for K = 8 fails correct kernels at K = 784 (the H200 run of
2026-11-29 marked every bf16 rung "wrong" at batch 4096). Instead every check compares each
element with the classic forward-error bound of a product whose operands are rounded to the
precision's unit roundoff u and whose sums are accumulated in float32 (Higham, Accuracy and
Stability of Numerical Algorithms, 3.5):

    |C - C64| <= SAFETY * [((1+u)^2 - 1 + gamma_{K+1}) * (|A| @ |B|) + underflow terms + u_acc |bias|]

where gamma_n = n u_acc / (1 - n u_acc) and u_acc is the accumulator's unit roundoff. The bound
is a worst case (real errors grow like sqrt(K), not K), so a kernel that breaks it is broken,
never unlucky. ReLU is 1-Lipschitz, so the bound carries through it; the MLP's bound is
propagated layer by layer (`mlp_bound`), and through the softmax onto probabilities and the
argmax (`MlpBound`).

SAFETY = 2 covers the hardware's round-toward-zero where it truncates instead of rounding:
tensor cores read float32 operands as tf32 by dropping bits (error up to 2u, not u), and their
adders truncate the aligned addends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gemmpad.errors import GemmpadError

SAFETY = 2.0
_F32_U = 2.0**-24
_F32_TINY = 2.0**-126  # smallest normal float32: what an accumulator that flushes subnormals may lose per add


@dataclass(frozen=True)
class Format:
    """The operand format of a kernel precision, as its rounding error needs it."""

    unit_roundoff: float  # relative rounding error of a normal value: 2^-(significand bits)
    underflow: float  # absolute rounding error of a value below the normal range: half the smallest subnormal
    max_finite: float  # larger values saturate (fp8) or overflow: no relative bound holds there
    accumulate: float = _F32_U  # unit roundoff of the sums


FORMATS = {
    "fp32": Format(_F32_U, 2.0**-150, float(np.finfo(np.float32).max)),
    "tf32": Format(2.0**-11, 2.0**-150, float(np.finfo(np.float32).max)),
    "fp16": Format(2.0**-11, 2.0**-25, 65504.0),
    "bf16": Format(2.0**-8, 2.0**-134, float(np.finfo(np.float32).max)),
    # e4m3: 3 mantissa bits, subnormals from 2^-9, saturating at 448. Hopper's fp8 wgmma keeps only
    # about 14 bits of its float32 accumulator (DeepSeek-V3 report, 3.3.2), hence u_acc = 2^-13.
    "fp8": Format(2.0**-4, 2.0**-10, 448.0, accumulate=2.0**-13),
}


def format_of(precision: str) -> Format:
    """The Format of a kernel precision; a GemmpadError naming the known ones otherwise."""
    try:
        return FORMATS[precision]
    except KeyError:
        raise GemmpadError(f"precision {precision!r} has no error bound in gemmpad.runtime.precision.FORMATS "
                           f"(known: {', '.join(FORMATS)})") from None


def _gamma(n: float, u: float) -> float:
    return n * u / (1.0 - n * u) if n * u < 1.0 else math.inf


def gemm_bound(a: np.ndarray, b: np.ndarray, precision: str, bias: np.ndarray | None = None,
               operands_rounded: bool = False) -> np.ndarray:
    """Elementwise bound [M, N] (float64) on |C - C64| for C = act(A @ B + bias) computed by a kernel
    of `precision`, C64 the same in float64 from the float32 operands, act ReLU or none.

    Only magnitudes enter, so `a` and `b` may be upper bounds of |A| and |B| (what `mlp_bound`
    passes). operands_rounded: C64 is taken from operands already rounded to the format (as the
    fp8 tests do, to see the accumulation's error alone): then only the sums' error is left.
    Rows of A or columns of B with a value past the format's largest finite one get an infinite
    bound: saturation and overflow have no relative bound, and the bound claims nothing there.
    """
    fmt = format_of(precision)
    abs_a = np.abs(np.asarray(a, dtype=np.float64))
    abs_b = np.abs(np.asarray(b, dtype=np.float64))
    k = abs_a.shape[1]
    u, eta = (0.0, 0.0) if operands_rounded else (fmt.unit_roundoff, fmt.underflow)
    terms = abs_a @ abs_b
    product = (1.0 + u) ** 2 - 1.0  # each product of two rounded operands
    gamma = _gamma(k + 1, fmt.accumulate)  # K - 1 adds, the bias and the epilogue's rounding
    bound = (product + gamma * (1.0 + u) ** 2) * terms
    if eta:  # operands rounded below the normal range lose up to eta each, not u relative
        bound += eta * (1.0 + u) * (1.0 + gamma) * (abs_a.sum(axis=1)[:, None] + abs_b.sum(axis=0)[None, :])
        bound += k * eta * eta
    bound += (k + 1) * _F32_TINY
    if bias is not None:
        bound += fmt.accumulate * np.abs(np.asarray(bias, dtype=np.float64))[None, :]
    with np.errstate(invalid="ignore"):
        saturated = (abs_a > fmt.max_finite).any(axis=1)[:, None] | (abs_b > fmt.max_finite).any(axis=0)[None, :]
    return np.where(saturated, np.inf, SAFETY * bound)


def bound_ratio(out: np.ndarray, ref: np.ndarray, bound: np.ndarray) -> float:
    """max |out - ref| / bound over the elements: <= 1 when the kernel keeps its bound. Any NaN
    or infinity in `out` where `ref` is finite gives inf (it never passes)."""
    out64 = np.asarray(out, dtype=np.float64)
    ref64 = np.asarray(ref, dtype=np.float64)
    err = np.abs(out64 - ref64)
    err = np.where(np.isfinite(out64), err, np.inf)
    if err.size == 0:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(err == 0.0, 0.0, err / bound)
    return float(np.max(np.where(np.isnan(ratio), np.inf, ratio)))


@dataclass(frozen=True)
class MlpBound:
    """The float64 network's logits and probabilities with elementwise bounds on a kernel's error."""

    logits: np.ndarray  # [B, 10] float64
    logit_bound: np.ndarray  # [B, 10]: |logit - logit64| <= this
    probs: np.ndarray  # [B, 10] float64 softmax
    prob_bound: np.ndarray  # [B, 10]: |prob - prob64| <= this

    def ratio(self, probs: np.ndarray) -> float:
        """max |probs - probs64| / bound (<= 1: within the bound)."""
        return bound_ratio(probs, self.probs, self.prob_bound)

    def decided(self) -> np.ndarray:
        """[B] bool: rows whose top logit leads the next by more than both their bounds, so
        that any kernel keeping its bound must pick the same digit (elsewhere a flip is allowed)."""
        order = np.argsort(self.logits, axis=1)
        rows = np.arange(len(self.logits))
        top, second = order[:, -1], order[:, -2]
        gap = self.logits[rows, top] - self.logits[rows, second]
        return gap > self.logit_bound[rows, top] + self.logit_bound[rows, second]

    def argmax_broken(self, probs: np.ndarray) -> int:
        """How many decided rows a kernel's probabilities read as another digit (0 when correct)."""
        decided = self.decided()
        return int(np.sum(np.argmax(probs, axis=1)[decided] != np.argmax(self.logits, axis=1)[decided]))

    def kept(self, probs: np.ndarray) -> bool:
        """A kernel's probabilities within the bound and reading every decided row's digit: the one
        check of a run. Both, since on inputs far from digits (all ones, random pixels) a model's
        folded normalisation (weights ~20, biases ~100) makes the probability bound reach 1 everywhere
        while real digits' rows stay decided."""
        return self.ratio(probs) <= 1.0 and self.argmax_broken(probs) == 0


def mlp_bound(weights: dict[str, np.ndarray], x: np.ndarray, precision: str) -> MlpBound:
    """The bound for softmax(relu(relu(x W1 + b1) W2 + b2) W3 + b3) run by a kernel of `precision`.

    Layer by layer: a layer's error is its own product's bound, taken on the magnitudes the
    kernel's previous output may have (|h64| + E), plus the previous error carried through |W|
    (E @ |W|); ReLU is 1-Lipschitz. On the logits z, an error of at most e_i moves each softmax
    probability by at most p_i * expm1(e_i + max e), plus float32's own rounding of the softmax
    (exp evaluated on z - max z, with fast-math exp's error growing with |z|).
    """
    h = np.asarray(x, dtype=np.float64)
    err = np.zeros_like(h)
    layers = [(weights[f"W{i}"], weights[f"b{i}"]) for i in (1, 2, 3)]
    for i, (w, b) in enumerate(layers):
        w64, b64 = np.asarray(w, dtype=np.float64), np.asarray(b, dtype=np.float64)
        new_err = gemm_bound(np.abs(h) + err, w64, precision, b64) + err @ np.abs(w64)
        h = h @ w64 + b64
        if i < len(layers) - 1:
            h = np.maximum(h, 0.0)
        err = new_err
    z = h
    z_max = np.abs(z).max(axis=1, keepdims=True)
    e = err + SAFETY * 4 * _F32_U * (np.abs(z) + z_max)  # float32 z, z - max z, and exp's argument error
    shifted = np.exp(z - z.max(axis=1, keepdims=True))
    p = shifted / shifted.sum(axis=1, keepdims=True)
    with np.errstate(over="ignore"):
        p_bound = p * np.expm1(e + e.max(axis=1, keepdims=True)) + SAFETY * 16 * _F32_U * p
    return MlpBound(z, e, p, np.minimum(p_bound, 1.0))  # a probability is off by at most 1


def argmax_agreement(probs: np.ndarray, reference: np.ndarray) -> float:
    """Share of rows whose argmax matches the reference's: what a user of a reduced-precision
    kernel cares about (does it read the same digit as fp32?)."""
    if len(probs) == 0:
        return 1.0
    return float(np.mean(np.argmax(probs, axis=1) == np.argmax(reference, axis=1)))
