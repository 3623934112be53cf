// train forward_l1_fp32: layer-1 forward, partial sums of X[perm[offset + b]] @ W1 per K slice, fp32.
// Change from the ladder's smem-tiled GEMM (4x4 register micro-tiles): rows of X gathered through the
// epoch's permutation (no batch is copied), and K = 784 split into 7 slices of 112 so that M = 64, N = 100
// makes 56 blocks, not 8; rows.cu adds the slices in a fixed order (deterministic, no atomics).
// Limit: fp32 FMAs and fp32 operands; forward_l1_bf16 is the tensor-core version.
// Run: gemmpad bench train --batches 64 256 --parity-epochs 0
// Profile: ncu -k regex:forward_l1_fp32 -c 20 gemmpad bench train --batches 64 --epochs 1 --torch-epochs 1 --parity-epochs 0
// Figure (H200 2026-12-01, assets/benchmarks/h200/train.json): native fp32: 4.2 us per launch at batch 64, 6.2 at batch 256 (forward_l1_us)
#include "tile.cuh"

namespace gemmpad::cuda::train {
namespace {

__global__ void __launch_bounds__(TILE_THREADS) forward_l1_fp32(DeviceState s, int offset, int rows) {
    // The whole K slice is staged at once: one round trip to L2 per block
    // instead of four (the first version staged 28 k at a time and spent most
    // of its 5.7 us waiting on the four dependent loads).
    __shared__ alignas(16) float Ls[KSLICE * TILE];  // Ls[k][m] = X[row(b0 + m)][k0 + k]
    __shared__ alignas(16) float Rs[KSLICE * TILE];  // Rs[k][n] = W1[k0 + k][j0 + n]
    __shared__ alignas(16) float red[4 * TILE * TILE];
    __shared__ int row_of[TILE];
    const int j0 = blockIdx.x * TILE, b0 = blockIdx.y * TILE, slice = blockIdx.z, t = threadIdx.x;
    const int k0 = slice * KSLICE;
    if (t < TILE) row_of[t] = b0 + t < rows ? s.perm[offset + b0 + t] : -1;
    __syncthreads();
    constexpr int LOADS = TILE * KSLICE / 4;  // float4s per operand: 896
    constexpr int PER_THREAD = (LOADS + TILE_THREADS - 1) / TILE_THREADS;  // 4 (the last one partly idle)
    // All loads first, then all stores: the stores cannot be hoisted above
    // loads through generic pointers, so interleaving them would serialise
    // the round trips again.
    float4 xv[PER_THREAD], wv[PER_THREAD];
#pragma unroll
    for (int q = 0; q < PER_THREAD; ++q) {
        const int e = t + q * TILE_THREADS;
        xv[q] = wv[q] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (e < LOADS) {
            const int m = e % TILE, c4 = e / TILE, row = row_of[m];  // X: m fastest (conflict-free stores)
            if (row >= 0) xv[q] = *reinterpret_cast<const float4*>(s.x + (size_t)row * IN + k0 + 4 * c4);
            const int r = e / 8, w4 = e % 8, j = j0 + 4 * w4;  // W1: H1 % 4 == 0, a float4 is all in or all out
            if (j < H1) wv[q] = *reinterpret_cast<const float4*>(s.w1 + (size_t)(k0 + r) * H1 + j);
        }
    }
#pragma unroll
    for (int q = 0; q < PER_THREAD; ++q) {
        const int e = t + q * TILE_THREADS;
        if (e < LOADS) {
            const int m = e % TILE, c4 = e / TILE;
            Ls[(4 * c4 + 0) * TILE + m] = xv[q].x;
            Ls[(4 * c4 + 1) * TILE + m] = xv[q].y;
            Ls[(4 * c4 + 2) * TILE + m] = xv[q].z;
            Ls[(4 * c4 + 3) * TILE + m] = xv[q].w;
            const int r = e / 8, w4 = e % 8;
            *reinterpret_cast<float4*>(Rs + r * TILE + 4 * w4) = wv[q];
        }
    }
    __syncthreads();
    TileAcc acc;
    tile_zero(acc);
    tile_accumulate(Ls, Rs, KSLICE, acc);
    tile_reduce(acc, red, [&](int m, int n, float v) {
        const int b = b0 + m, j = j0 + n;
        if (b < rows && j < H1) s.part[((size_t)slice * s.batch_pad + b) * PN + j] = v;
    });
}

}  // namespace

void launch_forward_l1_fp32(const DeviceState& s, int offset, int rows, cudaStream_t st) {
    const dim3 grid(ceil_div(H1, TILE), ceil_div(rows, TILE), KSLICES);
    forward_l1_fp32<<<grid, TILE_THREADS, 0, st>>>(s, offset, rows);
    CUDA_CHECK_LAUNCH("train.forward_l1_fp32");
}

}  // namespace gemmpad::cuda::train
