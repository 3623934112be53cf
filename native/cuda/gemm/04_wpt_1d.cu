// cuda.04_wpt_1d: more work per thread ("WPT"): each thread computes 8 outputs of a column.
//
// What changed from 03: a block of 512 threads owns a 64x64 tile of C and
// walks K in slices of 8 (A tile 64x8, B tile 8x64 in shared memory). Each
// thread keeps 8 accumulators in registers for 8 consecutive rows of one
// column. In the inner loop it loads B[k][col] from shared memory once into a
// register and reuses it for all 8 rows (1-D register blocking).
// Why it should be faster: 03 needed two shared-memory loads per FMA. Here a
// step of the inner loop is 1 load of B + 8 loads of A (broadcasts: the whole
// warp reads the same A element) for 8 FMAs, about 1.1 loads per FMA, and the
// block reuses each global element 64 times instead of 32.
// What still holds it back: A still costs one shared load per FMA; a 2-D
// block of outputs per thread (05) reuses both operands.
// Measured: 4096^3 19,275 GFLOP/s = 37.0 % of cuBLAS fp32
// (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "../common.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int BM = 64, BN = 64, BK = 8;
constexpr int TM = 8;                            // outputs per thread, down a column
constexpr int kThreads = BM * BN / TM;           // 512
static_assert(BM * BK == kThreads && BK * BN == kThreads, "one A and one B element per thread per tile");

__global__ void __launch_bounds__(kThreads)
    wpt_1d_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                  const float* __restrict__ bias, float* __restrict__ C, Act act) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int t = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // Which output column / group of 8 rows this thread accumulates.
    const int tcol = t % BN, trow = t / BN;
    // Which element of each tile this thread copies (consecutive threads, consecutive addresses).
    const int a_r = t / BK, a_c = t % BK;
    const int b_r = t / BN, b_c = t % BN;

    float acc[TM] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        const int ar = row0 + a_r, ak = k0 + a_c;
        As[a_r][a_c] = (ar < M && ak < K) ? A[(size_t)ar * K + ak] : 0.0f;
        const int bk = k0 + b_r, bc = col0 + b_c;
        Bs[b_r][b_c] = (bk < K && bc < N) ? B[(size_t)bk * N + bc] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k][tcol];  // one load, reused TM times
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] += As[trow * TM + i][k] * b;
        }
        __syncthreads();
    }
    const int col = col0 + tcol;
    if (col >= N) return;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + trow * TM + i;
        if (row < M) C[(size_t)row * N + col] = epilogue(acc[i], bias, col, act);
    }
}

void launch(const GemmProblem& p, cudaStream_t stream) {
    dim3 grid(ceil_div(p.N, BN), ceil_div(p.M, BM));
    wpt_1d_kernel<<<grid, kThreads, 0, stream>>>(p.M, p.N, p.K, static_cast<const float*>(p.A),
                                                  static_cast<const float*>(p.B), p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.04_wpt_1d");
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA("cuda.04_wpt_1d", "fp32", gemmpad::InType::F32,
                      "64x64 tiles, 8 outputs per thread down a column (1-D register blocking)",
                      gemmpad::cuda::launch);
