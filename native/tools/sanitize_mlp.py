"""Exercise gemmpad._cuda.Mlp under compute-sanitizer: every CUDA kernel of the
registry layer by layer, and the fused kernels in all the configurations their
plans pick (the split kernel of fused_mlp.cu: 1-, 2-, 4-row FMA tiles, with
clusters reading x from mapped host memory by slices, without them from device
memory; 16-row tensor-core tiles, each with and without clusters; the k-split
kernel of fused_mlp_ksplit.cu, 16-, 32- and 64-row tiles; the row-block kernel
of fused_mlp_tc.cu, 16- and 32-row tiles; mapped output or copied back). native/tools/mlp_probe/check.cu runs every variant,
under compute-sanitizer too. Each configuration also runs asking for the hidden layers (the
kernels' own stores of h1/h2) and from uint8 pixels (forward_u8: read through the mapping, then
copied, with mapped and copied output); cuda.mlp_resident's
persistent kernel is stopped explicitly at the end (a kernel left running at exit would keep
the sanitizer waiting).

    SANITIZE_EXTRA=native/tools/sanitize_mlp.py bash native/tools/gpu_check.sh sanitize

SANITIZE_MLP_KERNELS (a regex) narrows the kernels, as SANITIZE_KERNELS does for the GEMM part;
SANITIZE_MLP_BATCHES (comma-separated) the batches: racecheck serialises the resident kernel's
polling, so it finishes there only with a few small batches.
"""

import os
import re

import numpy as np

from gemmpad import _cuda
from gemmpad.errors import KernelUnavailable
from gemmpad.runtime import registry

_rng = np.random.default_rng(0)
_shapes = {"W1": (784, 100), "b1": (100,), "W2": (100, 100), "b2": (100,), "W3": (100, 10), "b3": (10,)}
_w = {k: _rng.normal(0, 0.1, s).astype(np.float32) for k, s in _shapes.items()}
_mlp = _cuda.Mlp(*(_w[k] for k in _shapes))
_names = [s.name for s in registry.kernels(device="cuda", kind="gemm")] + [k["name"] for k in _cuda.mlp_kernels()]
_default = _mlp.staging
_all_mapped = {**_default, "mapped_u8_rows": 1 << 30, "mapped_out_rows": 1 << 30}
_none_mapped = {**_default, "mapped_u8_rows": 0, "mapped_out_rows": 0}
_pattern = re.compile(os.environ.get("SANITIZE_MLP_KERNELS", "."))
_batches = [int(b) for b in os.environ.get("SANITIZE_MLP_BATCHES", "1,2,7,33,100,200,300,600,900,1500,3100").split(",")]
for _name in filter(_pattern.search, _names):
    for _clusters in (True, False) if _name.startswith("cuda.mlp_") else (True,):  # resident: both designs too
        _cuda.set_fused_clusters(_clusters)
        for _batch in _batches:
            _x = _rng.uniform(0, 1, (_batch, 784)).astype(np.float32)
            _out = np.full((_batch, 10), np.nan, dtype=np.float32)
            try:
                _mlp.forward(_x, _out, _name)
            except KernelUnavailable as _why:  # a rung whose step needs shapes the MLP lacks refuses, as in the app
                print("skipped", _name, _batch, "-", _why, flush=True)
                continue
            assert np.all(np.isfinite(_out)), (_name, _batch)
            _h1, _h2 = np.full((_batch, 100), np.nan, np.float32), np.full((_batch, 100), np.nan, np.float32)
            _mlp.forward(_x, _out, _name, h1=_h1, h2=_h2)
            assert np.all(np.isfinite(_h1)) and np.all(np.isfinite(_h2)), (_name, _batch, "hidden")
            # 8-bit input read through the mapping and copied, output mapped and copied back, whatever the defaults
            for _mapped in (_all_mapped, _none_mapped):
                _mlp.set_staging(**_mapped)
                _mlp.forward_u8((_x * 255).astype(np.uint8), _out, _name)
                assert np.all(np.isfinite(_out)), (_name, _batch, "uint8", _mapped)
            _mlp.set_staging(**_default)
        _design = f"{_mlp.resident_blocks} block(s)" if _mlp.resident_running else \
            "clusters" if _cuda.fused_used_clusters() else ""
        print("ran Mlp", _name, _design, flush=True)
    _cuda.set_fused_clusters(True)
_mlp.resident_stop()
