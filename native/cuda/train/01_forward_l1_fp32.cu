// train 01: layer-1 forward, Z1 partial sums = X[perm[offset + b]] @ W1, fp32.
//
// What it is: the ladder's smem-tiled GEMM idea (stage a tile of each operand
// in shared memory, 4 x 4 register micro-tiles) with two changes for training.
// (1) The rows of X are gathered through the epoch's permutation, so the
//     dataset stays where it was uploaded and no batch is ever copied.
// (2) K = 784 is split into 7 slices of 112 (split-K): with M = 64 rows and
//     N = 100 there would otherwise be only 2 x 4 = 8 blocks of 32 x 32 for
//     132 SMs; with the split there are 56 (batch 64) or 224 (batch 256).
//     Each slice writes its partial sums; kernel 02 adds them in a fixed
//     order with the bias, so the result is deterministic (no atomics).
// Why it should be fast: the step is latency-bound, not FLOP-bound (a batch of
// 256 is 20 MFLOP here); more, shorter blocks finish sooner.
// Measured: see assets/benchmarks/train.json ("profile").
#include "tile.cuh"

namespace gemmpad::cuda::train {
namespace {

constexpr int KC = 28;  // k per staged chunk: 4 chunks per slice of 112

__global__ void __launch_bounds__(TILE_THREADS) forward_l1_fp32(DeviceState s, int offset, int rows) {
    __shared__ alignas(16) float Ls[KC * TILE];  // Ls[k][m] = X[row(b0 + m)][k0 + k]
    __shared__ alignas(16) float Rs[KC * TILE];  // Rs[k][n] = W1[k0 + k][j0 + n]
    __shared__ alignas(16) float red[4 * TILE * TILE];
    __shared__ int row_of[TILE];
    const int j0 = blockIdx.x * TILE, b0 = blockIdx.y * TILE, slice = blockIdx.z, t = threadIdx.x;
    if (t < TILE) row_of[t] = b0 + t < rows ? s.perm[offset + b0 + t] : -1;
    __syncthreads();
    TileAcc acc;
    tile_zero(acc);
    for (int c = 0; c < KSLICE / KC; ++c) {
        const int k0 = slice * KSLICE + c * KC;
        if (t < TILE * KC / 4) {  // one float4 of X per thread, m fastest so the smem stores never conflict
            const int m = t % TILE, q = t / TILE, row = row_of[m];
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (row >= 0) v = *reinterpret_cast<const float4*>(s.x + (size_t)row * IN + k0 + 4 * q);
            Ls[(4 * q + 0) * TILE + m] = v.x;
            Ls[(4 * q + 1) * TILE + m] = v.y;
            Ls[(4 * q + 2) * TILE + m] = v.z;
            Ls[(4 * q + 3) * TILE + m] = v.w;
        }
        if (t < KC * TILE / 4) {  // one float4 of W1 per thread (H1 % 4 == 0: all in or all out)
            const int r = t / 8, q = t % 8, j = j0 + 4 * q;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (j < H1) v = *reinterpret_cast<const float4*>(s.w1 + (size_t)(k0 + r) * H1 + j);
            *reinterpret_cast<float4*>(Rs + r * TILE + 4 * q) = v;
        }
        __syncthreads();
        tile_accumulate(Ls, Rs, KC, acc);
        __syncthreads();
    }
    tile_reduce(acc, red, [&](int m, int n, float v) {
        const int b = b0 + m, j = j0 + n;
        if (b < rows && j < H1) s.part[((size_t)slice * s.batch_pad + b) * PN + j] = v;
    });
}

}  // namespace

void launch_forward_l1_fp32(const DeviceState& s, int offset, int rows, cudaStream_t st) {
    const dim3 grid(ceil_div(H1, TILE), ceil_div(rows, TILE), KSLICES);
    forward_l1_fp32<<<grid, TILE_THREADS, 0, st>>>(s, offset, rows);
    CUDA_CHECK_LAUNCH("train.01_forward_l1_fp32");
}

}  // namespace gemmpad::cuda::train
