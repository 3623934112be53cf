// cuda.04_wpt_1d: more work per thread: each thread computes 8 outputs of one column (1-D register blocking).
// Change from 03: 512 threads own a 64x64 tile, K in slices of 8; a thread loads B[k][col] once into a
// register and reuses it for 8 rows: ~1.1 shared loads per FMA instead of 2, global reuse 64x.
// Limit: A still costs one shared load per FMA; 05 reuses both operands from registers.
// Run: gemmpad bench gemm --kernels cuda.04_wpt_1d --sizes 4096x4096x4096
// Profile: ncu -k regex:wpt_1d_kernel -c 1 gemmpad bench gemm --kernels cuda.04_wpt_1d --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 19,053 GFLOP/s = 37.1 % of cuBLAS fp32
#include "../support/registry.cuh"
#include "epilogue.cuh"

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

// Its grid for problem p: a block per tile of C.
dim3 grid_of(const GemmProblem& p) { return dim3(ceil_div(p.N, BN), ceil_div(p.M, BM)); }

void launch(const GemmProblem& p, cudaStream_t stream) {
    const dim3 grid = grid_of(p);
    wpt_1d_kernel<<<grid, kThreads, 0, stream>>>(p.M, p.N, p.K, static_cast<const float*>(p.A),
                                                  static_cast<const float*>(p.B), p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.04_wpt_1d");
}

// What launch() launches for p (kernel_anatomy).
Anatomy anatomy(const GemmProblem& p) {
    Anatomy a;
    a.kernel = reinterpret_cast<const void*>(wpt_1d_kernel);
    a.bm = BM, a.bn = BN, a.bk = BK, a.tm = TM, a.tn = 1;
    a.block = dim3(kThreads);
    a.grid = grid_of(p);
    return a;
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.04_wpt_1d", "fp32", gemmpad::InType::F32,
                           "64x64 tiles, 8 outputs per thread down a column (1-D register blocking)",
                           gemmpad::cuda::launch, nullptr, nullptr, gemmpad::cuda::anatomy);
