// train grad_update_fp32: every weight gradient and the SGD step (momentum, weight decay), fp32, one launch.
// Change from 3 GEMMs + 3 optimiser passes: dW = A^T dZ for the three layers (bias = a column of ones),
// each 32x32 tile reduced over the batch in one block and updated in its epilogue; 120 independent
// blocks, and the gradient never round-trips through memory.
// Limit: a tile reduces over the whole batch in one block, so time grows with the batch.
// Run: gemmpad bench train --batches 64 256 --parity-epochs 0
// Profile: ncu -k regex:grad_update_fp32 -c 20 gemmpad bench train --batches 64 --epochs 1 --torch-epochs 1 --parity-epochs 0
// Figure (H200 2026-12-01, assets/benchmarks/h200/train.json): native fp32: 5.4 us per launch at batch 64, 9.5 at batch 256 (grad_update_us)
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
