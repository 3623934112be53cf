// cuda.03_smem_tiled: 32x32 tiles of A and B staged in shared memory.
//
// What changed from 02: a block of 32x32 threads owns a 32x32 tile of C. It
// walks K in steps of 32: each thread copies one element of A's tile and one
// of B's tile into shared memory (zero outside the matrix, so partial tiles
// need no special case in the inner loop), the block synchronises, and every
// thread runs 32 multiply-adds out of shared memory.
// Why it should be faster: in 02 every operand came from global memory (L1/L2
// at best) once per multiply-add. Here each element fetched from global memory
// is reused by 32 threads, so global traffic drops 32x and the inner loop reads
// on-chip memory: As[ty][k] is one address per warp (broadcast) and Bs[k][tx]
// is 32 consecutive words in 32 different banks (no bank conflicts).
// What still holds it back: each multiply-add needs two shared-memory loads,
// so the loop is bound by shared-memory bandwidth, not by the FMA units.
// Measured: 4096^3 8,764 GFLOP/s = 16.8 % of cuBLAS fp32
// (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "../common.cuh"

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

void launch(const GemmProblem& p, cudaStream_t stream) {
    dim3 block(kTile, kTile);
    dim3 grid(ceil_div(p.N, kTile), ceil_div(p.M, kTile));
    smem_tiled_kernel<<<grid, block, 0, stream>>>(p.M, p.N, p.K, static_cast<const float*>(p.A),
                                                   static_cast<const float*>(p.B), p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.03_smem_tiled");
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA("cuda.03_smem_tiled", "fp32", gemmpad::InType::F32,
                      "32x32 tiles of A and B in shared memory, reused by the whole block", gemmpad::cuda::launch);
