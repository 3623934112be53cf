"""gemmpad.runtime.precision's error bound: it must pass every rounding a correct kernel of each precision
can make (NumPy emulations of the formats, worst cases included) and catch an error just past it."""

from __future__ import annotations

import numpy as np
import pytest

from gemmpad.errors import GemmpadError
from gemmpad.runtime.precision import FORMATS, argmax_agreement, bound_ratio, gemm_bound, mlp_bound
from tests.conftest import round_e4m3
from tests.runtime.test_classifier import FIXED_SEEDS, digit_like, random_model


def round_to(x: np.ndarray, precision: str) -> np.ndarray:
    """x (float32) as a kernel of `precision` reads it, back in float32: bf16 to nearest even, fp16
    by NumPy, tf32 truncated (as tensor cores read float32 bits: the worst case), fp8 by conftest."""
    x = np.asarray(x, dtype=np.float32)
    if precision == "bf16":
        bits = x.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.astype(np.uint32).view(np.float32)
    if precision == "tf32":
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    if precision == "fp16":
        return x.astype(np.float16).astype(np.float32)
    if precision == "fp8":
        return round_e4m3(x).astype(np.float32)
    return x


def emulated_gemm(a: np.ndarray, b: np.ndarray, precision: str, bias: np.ndarray | None = None) -> np.ndarray:
    """A correct kernel of `precision`: rounded operands, float32 sums, float32 bias and ReLU."""
    c = round_to(a, precision) @ round_to(b, precision)
    if bias is not None:
        c = c + bias.astype(np.float32)
    return np.maximum(c, np.float32(0))


@pytest.mark.parametrize("precision", list(FORMATS))
@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 17, 784), (64, 100, 4096)], ids=lambda s: "x".join(map(str, s)))
def test_correct_rounding_stays_within_the_bound(precision: str, shape: tuple[int, int, int], rng) -> None:
    m, n, k = shape
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    bias = rng.uniform(-1, 1, n).astype(np.float32)
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0.0)
    out = emulated_gemm(a, b, precision, bias)
    assert bound_ratio(out, ref, gemm_bound(a, b, precision, bias)) <= 1.0


@pytest.mark.parametrize("precision,u", [("bf16", 2.0**-8), ("fp16", 2.0**-11), ("tf32", 2.0**-11)])
def test_worst_case_rounding_is_just_inside(precision: str, u: float) -> None:
    """Operands every one of which rounds by the most it can, all in the same direction, over K terms
    whose sums are exact: the error is the bound's product term in full. It must pass, and use most of
    the bound (so the bound is no looser than it needs to be); tf32's truncation needs SAFETY's 2."""
    k = 512
    if precision == "tf32":  # truncation drops up to 2u: 1 + 2u(1 - 2^-12) reads as 1
        x = np.float32(1.0 + 2 * u * (1 - 2.0**-12))
    else:  # a tie just above 1 + u rounds down to 1 (nearest even), losing u
        x = np.float32(1.0 + u)
    a = np.full((1, k), x, np.float32)
    b = np.full((k, 1), x, np.float32)
    out = round_to(a, precision) @ round_to(b, precision)
    assert out[0, 0] == k  # every operand read as 1
    ratio = bound_ratio(out, a.astype(np.float64) @ b.astype(np.float64), gemm_bound(a, b, precision))
    assert (0.9 if precision == "tf32" else 0.45) < ratio <= 1.0


@pytest.mark.parametrize("precision", list(FORMATS))
def test_an_error_just_past_the_bound_is_caught(precision: str, rng) -> None:
    a = rng.uniform(-1, 1, (20, 300)).astype(np.float32)
    b = rng.uniform(-1, 1, (300, 30)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    bound = gemm_bound(a, b, precision)
    near = ref.copy()
    near[7, 11] += 0.99 * bound[7, 11]
    assert bound_ratio(near, ref, bound) == pytest.approx(0.99)
    far = ref.copy()
    far[7, 11] -= 1.01 * bound[7, 11]
    assert bound_ratio(far, ref, bound) > 1.0


def test_the_bound_grows_with_k_and_magnitude() -> None:
    """What a fixed tolerance missed: the allowed error scales with K and with |A| @ |B|."""
    one = gemm_bound(np.ones((1, 100)), np.ones((100, 1)), "bf16")[0, 0]
    assert gemm_bound(np.ones((1, 1000)), np.ones((1000, 1)), "bf16")[0, 0] > 9 * one
    assert gemm_bound(4 * np.ones((1, 100)), np.ones((100, 1)), "bf16")[0, 0] == pytest.approx(4 * one, rel=1e-6)
    assert gemm_bound(np.ones((1, 100)), np.ones((100, 1)), "fp32")[0, 0] < one / 1000


def test_nan_saturation_and_unknown_precisions() -> None:
    ref = np.zeros((2, 2))
    bound = np.full((2, 2), 1e-3)
    assert bound_ratio(np.array([[0.0, np.nan], [0.0, 0.0]]), ref, bound) == np.inf
    assert bound_ratio(np.array([[0.0, np.inf], [0.0, 0.0]]), ref, bound) == np.inf
    assert bound_ratio(ref, ref, np.zeros((2, 2))) == 0.0  # exact where the bound is zero: passes
    big = gemm_bound(np.array([[1.0, 500.0], [1.0, 1.0]]), np.ones((2, 2)), "fp8")
    assert np.isinf(big[0]).all() and np.isfinite(big[1]).all()  # e4m3 saturates past 448: no claim
    with pytest.raises(GemmpadError, match="fp4.*known"):
        gemm_bound(np.ones((1, 1)), np.ones((1, 1)), "fp4")


def emulated_mlp(weights: dict[str, np.ndarray], x: np.ndarray, precision: str) -> np.ndarray:
    """The network run by a correct kernel of `precision`, softmax in float32."""
    h = x
    for i in (1, 2, 3):
        c = round_to(h, precision) @ round_to(weights[f"W{i}"], precision) + weights[f"b{i}"]
        h = np.maximum(c, np.float32(0)) if i < 3 else c
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("seed", FIXED_SEEDS + [None], ids=lambda s: f"seed{s}" if s else "random")
@pytest.mark.parametrize("precision", list(FORMATS))
def test_mlp_bound_holds_for_correct_kernels_and_catches_a_wrong_one(precision: str, seed: int | None, rng) -> None:
    rng = np.random.default_rng(seed) if seed else rng
    model = random_model(rng)
    x = digit_like(rng, 300)
    bound = mlp_bound(model.weights, x, precision)
    probs = emulated_mlp(model.weights, x, precision)
    assert bound.ratio(probs) <= 1.0
    assert bound.argmax_broken(probs) == 0
    r, c = np.unravel_index(np.argmin(bound.prob_bound), probs.shape)  # an error just past the bound
    wrong = probs.astype(np.float64)
    wrong[r, c] = bound.probs[r, c] + 1.01 * bound.prob_bound[r, c]
    assert bound.ratio(wrong) > 1.0


# 1331236009: a decided row whose top two were swapped stayed within the probability bound (ratio 0.98;
# CI reproduction, 2026-11-29): "decided" compares the logits' gap with their two bounds, while each
# probability's bound also carries the largest logit error, so the swap need not exceed it. What
# catches that kernel is argmax_broken, which is what this test now asks of every seed.
FLIP_SEEDS = [1331236009]


@pytest.mark.parametrize("seed", FIXED_SEEDS + FLIP_SEEDS + [None], ids=lambda s: f"seed{s}" if s else "random")
def test_a_digit_the_bound_decides_may_not_flip(seed: int | None, rng) -> None:
    rng = np.random.default_rng(seed) if seed else rng
    model = random_model(rng)
    x = digit_like(rng, 300)
    bound = mlp_bound(model.weights, x, "fp32")
    probs = emulated_mlp(model.weights, x, "fp32")
    rows = np.flatnonzero(bound.decided())
    assert len(rows) > 0 and bound.argmax_broken(probs) == 0
    top2 = np.argsort(probs[rows[0]])[-2:]
    probs[rows[0], top2] = probs[rows[0], top2[::-1]]  # a kernel that swaps a decided row's top two digits
    assert bound.argmax_broken(probs) == 1


def test_fp32_bound_decides_most_digits(rng) -> None:
    """The fp32 bound is not vacuous: it decides the digit of most rows and allows probability errors
    of a few 1e-3 at most. (A worst case carried through three layers: for bf16 and fp8 it decides
    no digit, and the layers' own GEMM bounds in test_gemm are what hold those kernels tightly.)"""
    model = random_model(rng)
    x = digit_like(rng, 500)
    fp32 = mlp_bound(model.weights, x, "fp32")
    assert fp32.decided().mean() > 0.5
    assert np.median(fp32.prob_bound) < 1e-2


def test_argmax_agreement() -> None:
    ref = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    assert argmax_agreement(np.array([[0.2, 0.8], [0.4, 0.6], [0.1, 0.9]]), ref) == pytest.approx(2 / 3)
    assert argmax_agreement(np.zeros((0, 2)), np.zeros((0, 2))) == 1.0
