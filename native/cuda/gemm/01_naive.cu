// cuda.01_naive: one thread per output element, each runs the k loop for its C[row][col].
// Change from the CPU loop: the two outer loops become the grid; thousands of dot products at once.
// Limit: threadIdx.x walks rows, so a warp reads 32 rows of A (stride K) and writes C with stride N:
// nothing coalesces, and every operand comes from global memory once per use.
// Run: gemmpad bench gemm --kernels cuda.01_naive --sizes 4096x4096x4096
// Profile: ncu -k regex:naive_kernel -c 1 gemmpad bench gemm --kernels cuda.01_naive --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 972 GFLOP/s = 1.9 % of cuBLAS fp32
#include "../support/registry.cuh"
#include "epilogue.cuh"

namespace gemmpad::cuda {
namespace {

__global__ void naive_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                             const float* __restrict__ bias, float* __restrict__ C, Act act) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = epilogue(acc, bias, col, act);
}

// Its grid for problem p: a block per tile of C.
dim3 grid_of(const GemmProblem& p) { return dim3(ceil_div(p.M, 16), ceil_div(p.N, 16)); }

void launch(const GemmProblem& p, cudaStream_t stream) {
    dim3 block(16, 16);
    const dim3 grid = grid_of(p);
    naive_kernel<<<grid, block, 0, stream>>>(p.M, p.N, p.K, static_cast<const float*>(p.A),
                                              static_cast<const float*>(p.B), p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.01_naive");
}

// What launch() launches for p (kernel_anatomy).
Anatomy anatomy(const GemmProblem& p) {
    Anatomy a;
    a.kernel = reinterpret_cast<const void*>(naive_kernel);
    a.bm = 16, a.bn = 16, a.tm = 1, a.tn = 1;
    a.block = dim3(16, 16);
    a.grid = grid_of(p);
    a.note = "threadIdx.x walks rows: a warp reads 32 rows of A apart";
    return a;
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.01_naive", "fp32", gemmpad::InType::F32,
                           "one thread per output, warps stride across rows (uncoalesced)",
                           gemmpad::cuda::launch, nullptr, nullptr, gemmpad::cuda::anatomy);
