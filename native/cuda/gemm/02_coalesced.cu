// cuda.02_coalesced: same arithmetic as 01, threads re-mapped so a warp reads contiguous memory.
//
// What changed from 01: threadIdx.x now walks *columns* of C (blocks of 32x8
// threads). The 32 threads of a warp share one row of A and read 32 adjacent
// elements of B's row k.
// Why it should be faster: the GPU merges ("coalesces") the loads of a warp
// when its 32 threads touch neighbouring addresses. Now every load of B is one
// 128-byte transaction instead of 32 separate ones, A[row][k] is one address
// broadcast to the whole warp, and the stores of C are contiguous too.
// Storing B transposed, so that *each thread* walks contiguous memory along k,
// looks cache-friendly but is the wrong contiguity (6.5x slower, NOTES.md): what
// coalesces is contiguity *across the threads of a warp at one instant*; with B
// transposed the 32 threads read 32 addresses K floats apart at every step.
// What holds it back: every operand still comes from global memory (L1/L2 at
// best) once per multiply-add; 03 reuses it from shared memory.
// Measured: 4096^3 5,992 GFLOP/s = 11.5 % of cuBLAS fp32
// (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "../common.cuh"

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

void launch(const GemmProblem& p, cudaStream_t stream) {
    dim3 block(kBlockX, kBlockY);
    dim3 grid(ceil_div(p.N, kBlockX), ceil_div(p.M, kBlockY));
    coalesced_kernel<<<grid, block, 0, stream>>>(p.M, p.N, p.K, static_cast<const float*>(p.A),
                                                  static_cast<const float*>(p.B), p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.02_coalesced");
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA("cuda.02_coalesced", "fp32", gemmpad::InType::F32,
                      "one thread per output, warps along rows of C so loads coalesce", gemmpad::cuda::launch);
