// cuda.01_naive: one thread per output element.
//
// What changed (from the CPU triple loop): the two outer loops become the
// grid; each thread runs the k loop for its C[row][col].
// Why it should be faster: thousands of dot products run at once.
// What holds it back: threadIdx.x walks *rows*, so the 32 threads of a warp
// read 32 different rows of A (stride K) and write C with stride N: nothing
// coalesces, and every operand comes from global memory once per use.
// Measured: 4096^3 979 GFLOP/s = 1.9 % of cuBLAS fp32
// (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "../common.cuh"

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

void launch(const GemmProblem& p, cudaStream_t stream) {
    dim3 block(16, 16);
    dim3 grid(ceil_div(p.M, 16), ceil_div(p.N, 16));
    naive_kernel<<<grid, block, 0, stream>>>(p.M, p.N, p.K, static_cast<const float*>(p.A),
                                              static_cast<const float*>(p.B), p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.01_naive");
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA("cuda.01_naive", "fp32", gemmpad::InType::F32,
                      "one thread per output, warps stride across rows (uncoalesced)", gemmpad::cuda::launch);
