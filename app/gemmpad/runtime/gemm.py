"""`gemm()`: one matrix product on any kernel of the registry, from NumPy.

Validation lives here rather than in C++ so that errors name the shapes and
dtypes the caller passed.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from gemmpad.runtime import backends, native, registry
from gemmpad.errors import CudaUnavailable, InputShapeError, InputTypeError

Activation = Literal["relu"] | None
_ACTS = {None: 0, "none": 0, "relu": 1}
# Elements in any one of a, b and the result: GemmProblem's dimensions are ints and the CUDA
# kernels index with them; past this they would wrap.
MAX_ELEMENTS = 2**31 - 1


def _checked(name: str, x: object, ndim: int) -> np.ndarray:
    """`x` as an array of real numbers with `ndim` dimensions, none empty; not yet converted."""
    if not isinstance(x, np.ndarray):
        try:
            x = np.asarray(x)
        except Exception as exc:  # ragged lists and the like
            raise InputTypeError(f"{name} could not be read as an array: {exc}") from None
    if x.dtype.kind not in "fiub":
        raise InputTypeError(f"{name} must hold real numbers, got dtype {x.dtype}")
    if x.ndim != ndim:
        raise InputShapeError(f"{name} must be {ndim}-D, got shape {x.shape}")
    if x.size == 0:
        raise InputShapeError(f"{name} is empty (shape {x.shape}); every dimension must be >= 1")
    return x


def gemm(
    a: np.ndarray,
    b: np.ndarray,
    *,
    bias: np.ndarray | None = None,
    activation: Activation = None,
    kernel: str | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Return act(a @ b + bias) in float32, computed by `kernel`.

    Inputs of other real dtypes, or non-contiguous ones, are converted to
    contiguous float32 (as NumPy would promote them). NaN and Inf pass
    through as they would in NumPy. `kernel` defaults, on a usable GPU, to the
    dispatcher cuda.auto_fp32, which runs the fastest fp32 rung for the shape
    (gemmpad.runtime.registry.dispatched() names it), else to the top of the CPU
    ladder. A rung asked for a shape outside its step raises KernelUnavailable
    rather than run another rung. `out`, if given,
    must be a C-contiguous float32 [M, N] array, apart from the inputs, and is
    overwritten.
    """
    a_in, b_in = _checked("a", a, 2), _checked("b", b, 2)
    (m, k), (k2, n) = a_in.shape, b_in.shape
    if k != k2:
        raise InputShapeError(f"inner dimensions differ: a is {a_in.shape}, b is {b_in.shape}")
    bias_in = None if bias is None else _checked("bias", bias, 1)
    if bias_in is not None and bias_in.shape[0] != n:
        raise InputShapeError(f"bias must have shape ({n},) for b of shape {b_in.shape}, got {bias_in.shape}")
    if activation is not None and not isinstance(activation, str):
        raise InputTypeError(f"activation must be None or 'relu', got {type(activation).__name__} {activation!r}")
    if activation not in _ACTS:
        raise ValueError(f"activation must be None or 'relu', got {activation!r}")
    if kernel is not None and not isinstance(kernel, str):
        raise InputTypeError(f"kernel must be a kernel name (str) or None, got {type(kernel).__name__} {kernel!r}")
    # Before any conversion: a float32 copy of an oversized input could itself exhaust memory.
    if max(m * k, k * n, m * n) > MAX_ELEMENTS:
        raise InputShapeError(f"a {a_in.shape} @ b {b_in.shape} is too large: {max(m * k, k * n, m * n):,} elements "
                              f"in one matrix, at most {MAX_ELEMENTS:,} (2**31 - 1)")
    a32 = np.ascontiguousarray(a_in, dtype=np.float32)
    b32 = np.ascontiguousarray(b_in, dtype=np.float32)
    bias32 = None if bias_in is None else np.ascontiguousarray(bias_in, dtype=np.float32)

    if kernel is None:
        spec = registry.default_gemm(backends.pick(among=backends.GEMM_DEVICES))
    else:
        spec = registry.get(kernel)
    if spec.kind != "gemm":
        raise ValueError(f"kernel {spec.name!r} is a whole-network kernel, not a GEMM")
    if not spec.available:
        raise CudaUnavailable(f"kernel {spec.name!r} cannot run here: {spec.unavailable_reason}")

    if out is None:
        out = np.empty((m, n), dtype=np.float32)
    elif not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.shape != (m, n):
        got = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise InputShapeError(f"out must be a C-contiguous float32 array of shape {(m, n)}, got {got}")
    elif not out.flags.c_contiguous:
        raise InputShapeError("out must be C-contiguous (a transposed or strided view is not)")
    elif any(x is not None and np.shares_memory(out, x) for x in (a32, b32, bias32)):
        # the kernels read a, b and bias while they write out: an overlap would corrupt the result silently
        raise InputShapeError("out must not share memory with a, b or bias")
    module = native.cpu if spec.device == "cpu" else native.cuda()
    try:
        module.gemm(spec.name, a32, b32, bias32, _ACTS[activation], out)
    except MemoryError as exc:  # host-side allocation inside the module
        raise MemoryError(f"not enough memory for a {a32.shape} @ {b32.shape} product: {exc}") from None
    return out
