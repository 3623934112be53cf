# compute-sanitizer driver for the training kernels (SANITIZE_EXTRA=this file in
# native/tools/gpu_check.sh, or `compute-sanitizer python3 this_file`): a tiny
# run of every kernel in both precisions, with a short last batch, a batch that
# is not a multiple of 16 and every epoch engine (graph, direct launches, the persistent kernel in fp32), with the labels
# and with soft targets (a fine-tune's distillation); then fp32 batches over 128 rows (the persistent
# epoch's row work 8 rows a block, its layer-1 forward in two passes).
import numpy as np

from gemmpad.runtime import native

_cuda = native.cuda()
_rng = np.random.default_rng(0)
_x = _rng.uniform(0, 1, (101, 784)).astype(np.float32)
_y = _rng.integers(0, 10, 101).astype(np.int32)
_w = {k: (_rng.uniform(-1, 1, s) / np.sqrt(s[0] if len(s) == 2 else 100)).astype(np.float32)
      for k, s in (("W1", (784, 100)), ("b1", (100,)), ("W2", (100, 100)), ("b2", (100,)), ("W3", (100, 10)), ("b3", (10,)))}
_q = _rng.dirichlet(np.ones(10), 101).astype(np.float32)
for _mixed, _soft in ((False, None), (True, None), (False, _q), (True, _q)):
    for _batch in (33, 64):
        _t = _cuda.Trainer(_x, _y, _w, _batch, _mixed, _soft)
        _perm = _rng.permutation(101).astype(np.int32)
        for _engine in ("graph", "launches") + (("persistent",) if _t.persistent_available else ()):
            _t.epoch(_perm, 0.05, 0.9, 1e-4, _engine)
        _t.step(_perm[:7], 0.05, 0.9, 0.0)
        _t.profile(1)
        _t.weights()
        _t.samples()
        print("sanitized trainer mixed=%s soft=%s batch=%d" % (_mixed, _soft is not None, _batch), flush=True)
_x = _rng.uniform(0, 1, (300, 784)).astype(np.float32)
_y = _rng.integers(0, 10, 300).astype(np.int32)
_t = _cuda.Trainer(_x, _y, _w, 256, False)
_perm = _rng.permutation(300).astype(np.int32)
for _engine in ("graph", "launches") + (("persistent",) if _t.persistent_available else ()):
    _t.epoch(_perm, 0.05, 0.9, 1e-4, _engine)
_t.weights()
print("sanitized trainer fp32 batch=256 of 300 rows", flush=True)
