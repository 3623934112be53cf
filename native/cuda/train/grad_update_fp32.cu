// train grad_update_fp32: every weight gradient and the optimiser step, fp32, one launch.
//
// What it is: dW = A^T dZ for the three layers (A = X[perm], H1, H2) plus the
// bias gradients (an extra input column of ones), each 32 x 32 tile of the
// augmented gradient reduced over the batch in one block, and the SGD update
// (momentum, weight decay) applied in the tile's epilogue.
// Why it should be fast: the three layers' tiles are independent, so they run
// side by side in one grid of 120 blocks instead of six launches (3 GEMMs and
// 3 optimiser passes); the gradient never round-trips through memory.
// What holds it back: each tile reduces over the whole batch in one block, so the time grows
// with the batch; grad_update_bf16 moves dW1, the largest, to tensor cores.
// Measured: 5.5 us per launch at batch 64, 9.4 at batch 256
// (native fp32, grad_update_us in assets/benchmarks/h200/train.json).
#include "grad_tile.cuh"

namespace gemmpad::cuda::train {
namespace {

__global__ void __launch_bounds__(TILE_THREADS) grad_update_fp32(DeviceState s, int offset, int rows) {
    __shared__ alignas(16) GradSmem sm;
    const Hyper h = *s.hyper;
    int layer, i0, j0;
    grad_job(blockIdx.x, 0, layer, i0, j0);
    grad_tile_update(s, layer, i0, j0, offset, rows, h, sm);
}

}  // namespace

void launch_grad_update_fp32(const DeviceState& s, int offset, int rows, cudaStream_t st) {
    grad_update_fp32<<<grad_jobs(0), TILE_THREADS, 0, st>>>(s, offset, rows);
    CUDA_CHECK_LAUNCH("train.grad_update_fp32");
}

}  // namespace gemmpad::cuda::train
