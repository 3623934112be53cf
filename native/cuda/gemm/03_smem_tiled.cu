// cuda.03_smem_tiled: 32x32 tiles of A and B staged in shared memory, each reused by 32 threads.
// Change from 02: a 32x32 block walks K in steps of 32; each thread copies one element of each tile
// (zero outside the matrix), the block syncs, then runs 32 multiply-adds from shared memory: global
// traffic drops 32x, As[ty][k] is a broadcast and Bs[k][tx] hits 32 banks.
// Limit: two shared-memory loads per multiply-add: shared bandwidth, not the FMA units, sets the pace.
// Run: gemmpad bench gemm --kernels cuda.03_smem_tiled --sizes 4096x4096x4096
// Profile: ncu -k regex:smem_tiled_kernel -c 1 gemmpad bench gemm --kernels cuda.03_smem_tiled --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 8,552 GFLOP/s = 16.7 % of cuBLAS fp32
#include "../support/registry.cuh"
#include "epilogue.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int kTile = 32;

__global__ void __launch_bounds__(kTile * kTile)
    smem_tiled_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                      const float* __restrict__ bias, float* __restrict__ C, Act act) {
    __shared__ float As[kTile][kTile];
    __shared__ float Bs[kTile][kTile];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * kTile + ty;
    const int col = blockIdx.x * kTile + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += kTile) {
        // Coalesced copies: threadIdx.x walks along a row of each tile.
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // nobody overwrites the tiles while others still read them
    }
    if (row < M && col < N) C[(size_t)row * N + col] = epilogue(acc, bias, col, act);
}

// Its grid for problem p: a block per tile of C.
dim3 grid_of(const GemmProblem& p) { return dim3(ceil_div(p.N, kTile), ceil_div(p.M, kTile)); }

void launch(const GemmProblem& p, cudaStream_t stream) {
    dim3 block(kTile, kTile);
    const dim3 grid = grid_of(p);
    smem_tiled_kernel<<<grid, block, 0, stream>>>(p.M, p.N, p.K, static_cast<const float*>(p.A),
                                                   static_cast<const float*>(p.B), p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.03_smem_tiled");
}

// What launch() launches for p (kernel_anatomy).
Anatomy anatomy(const GemmProblem& p) {
    Anatomy a;
    a.kernel = reinterpret_cast<const void*>(smem_tiled_kernel);
    a.bm = kTile, a.bn = kTile, a.bk = kTile, a.tm = 1, a.tn = 1;
    a.block = dim3(kTile, kTile);
    a.grid = grid_of(p);
    return a;
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.03_smem_tiled", "fp32", gemmpad::InType::F32,
                           "32x32 tiles of A and B in shared memory, reused by the whole block",
                           gemmpad::cuda::launch, nullptr, nullptr, gemmpad::cuda::anatomy);
