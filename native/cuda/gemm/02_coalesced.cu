// cuda.02_coalesced: 01's arithmetic, threads re-mapped so a warp reads contiguous memory.
// Change from 01: threadIdx.x walks columns of C, so a warp's 32 loads of B are one 128-byte transaction,
// A[row][k] is one broadcast address and the stores of C are contiguous. (What coalesces is contiguity
// across a warp's threads at one instant: B stored transposed is 6.5x slower, NOTES.md.)
// Limit: every operand still comes from global memory (L1/L2 at best) once per multiply-add.
// Run: gemmpad bench gemm --kernels cuda.02_coalesced --sizes 4096x4096x4096
// Profile: ncu -k regex:coalesced_kernel -c 1 gemmpad bench gemm --kernels cuda.02_coalesced --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 5,922 GFLOP/s = 11.5 % of cuBLAS fp32
#include "../support/registry.cuh"
#include "epilogue.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int kBlockX = 32;  // one warp across 32 consecutive columns
constexpr int kBlockY = 8;   // 8 rows per block: 256 threads

__global__ void coalesced_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                                 const float* __restrict__ bias, float* __restrict__ C, Act act) {
    const int col = blockIdx.x * kBlockX + threadIdx.x;
    const int row = blockIdx.y * kBlockY + threadIdx.y;
    if (row >= M || col >= N) return;
    const float* a = A + (size_t)row * K;  // same address for the whole warp: a broadcast
    const float* b = B + col;              // 32 neighbouring floats per warp: one transaction
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += a[k] * b[(size_t)k * N];
    C[(size_t)row * N + col] = epilogue(acc, bias, col, act);
}

// Its grid for problem p: a block per tile of C.
dim3 grid_of(const GemmProblem& p) { return dim3(ceil_div(p.N, kBlockX), ceil_div(p.M, kBlockY)); }

void launch(const GemmProblem& p, cudaStream_t stream) {
    dim3 block(kBlockX, kBlockY);
    const dim3 grid = grid_of(p);
    coalesced_kernel<<<grid, block, 0, stream>>>(p.M, p.N, p.K, static_cast<const float*>(p.A),
                                                  static_cast<const float*>(p.B), p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.02_coalesced");
}

// What launch() launches for p (kernel_anatomy).
Anatomy anatomy(const GemmProblem& p) {
    Anatomy a;
    a.kernel = reinterpret_cast<const void*>(coalesced_kernel);
    a.bm = kBlockY, a.bn = kBlockX, a.tm = 1, a.tn = 1;
    a.block = dim3(kBlockX, kBlockY);
    a.grid = grid_of(p);
    return a;
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.02_coalesced", "fp32", gemmpad::InType::F32,
                           "one thread per output, warps along rows of C so loads coalesce",
                           gemmpad::cuda::launch, nullptr, nullptr, gemmpad::cuda::anatomy);
