"""Exercise gemmpad._cuda.Mlp under compute-sanitizer: every CUDA kernel of the
registry layer by layer, and the fused kernels in both tile configurations
(batch <= 512: 16-row tiles, mapped input up to 64; larger: 64-row tiles).

    SANITIZE_EXTRA=native/cuda/mlp/sanitize_mlp.py bash native/tools/gpu_check.sh sanitize

SANITIZE_MLP_KERNELS (a regex) narrows the kernels, as SANITIZE_KERNELS does for the GEMM part.
"""

import os
import re

import numpy as np

from gemmpad import _cuda, registry

_rng = np.random.default_rng(0)
_shapes = {"W1": (784, 100), "b1": (100,), "W2": (100, 100), "b2": (100,), "W3": (100, 10), "b3": (10,)}
_w = {k: _rng.normal(0, 0.1, s).astype(np.float32) for k, s in _shapes.items()}
_mlp = _cuda.Mlp(*(_w[k] for k in _shapes))
_names = [s.name for s in registry.kernels(device="cuda", kind="gemm")] + [k["name"] for k in _cuda.mlp_kernels()]
_pattern = re.compile(os.environ.get("SANITIZE_MLP_KERNELS", "."))
for _name in filter(_pattern.search, _names):
    for _batch in (1, 7, 300, 600):
        _x = _rng.uniform(0, 1, (_batch, 784)).astype(np.float32)
        _out = np.full((_batch, 10), np.nan, dtype=np.float32)
        _mlp.forward(_x, _out, _name)
        assert np.all(np.isfinite(_out)), (_name, _batch)
    print("ran Mlp", _name, flush=True)
