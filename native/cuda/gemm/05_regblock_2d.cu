// cuda.05_regblock_2d: each thread computes an 8x8 block of C from registers (2-D register blocking).
// Change from 04: 256 threads own a 128x128 tile; per k a thread loads 8 A and 8 B values and forms
// their outer product: 64 FMAs for 16 shared loads (0.25 per FMA), global reuse 128x.
// Limit: 4-byte scalar shared and global loads, B row reads hitting the same banks 4 times over; on
// mid-sized problems 128x128 tiles and 147 registers a thread leave SMs idle (NOTES.md).
// Run: gemmpad bench gemm --kernels cuda.05_regblock_2d --sizes 4096x4096x4096
// Profile: ncu -k regex:regblock_2d_kernel -c 1 gemmpad bench gemm --kernels cuda.05_regblock_2d --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 21,117 GFLOP/s = 41.1 % of cuBLAS fp32
#include "../support/registry.cuh"
#include "epilogue.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int BM = 128, BN = 128, BK = 8;
constexpr int TM = 8, TN = 8;                       // outputs per thread
constexpr int kThreads = (BM / TM) * (BN / TN);     // 256
static_assert(BM * BK % kThreads == 0 && BK * BN % kThreads == 0, "tiles split evenly over the threads");

__global__ void __launch_bounds__(kThreads)
    regblock_2d_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                       const float* __restrict__ bias, float* __restrict__ C, Act act) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int t = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int trow = t / (BN / TN), tcol = t % (BN / TN);  // this thread's 8x8 block: rows trow*8.., cols tcol*8..

    float acc[TM][TN] = {};
    float a_reg[TM], b_reg[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        // Each thread copies BM*BK/256 = 4 elements of each tile; consecutive
        // threads take consecutive addresses of a row.
#pragma unroll
        for (int s = 0; s < BM * BK / kThreads; ++s) {
            const int i = t + s * kThreads;
            const int r = i / BK, c = i % BK, gr = row0 + r, gk = k0 + c;
            As[r][c] = (gr < M && gk < K) ? A[(size_t)gr * K + gk] : 0.0f;
        }
#pragma unroll
        for (int s = 0; s < BK * BN / kThreads; ++s) {
            const int i = t + s * kThreads;
            const int r = i / BN, c = i % BN, gk = k0 + r, gc = col0 + c;
            Bs[r][c] = (gk < K && gc < N) ? B[(size_t)gk * N + gc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a_reg[i] = As[trow * TM + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b_reg[j] = Bs[k][tcol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + trow * TM + i;
        if (row >= M) break;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = col0 + tcol * TN + j;
            if (col < N) C[(size_t)row * N + col] = epilogue(acc[i][j], bias, col, act);
        }
    }
}

// Its grid for problem p: a block per tile of C.
dim3 grid_of(const GemmProblem& p) { return dim3(ceil_div(p.N, BN), ceil_div(p.M, BM)); }

void launch(const GemmProblem& p, cudaStream_t stream) {
    const dim3 grid = grid_of(p);
    regblock_2d_kernel<<<grid, kThreads, 0, stream>>>(p.M, p.N, p.K, static_cast<const float*>(p.A),
                                                       static_cast<const float*>(p.B), p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.05_regblock_2d");
}

// What launch() launches for p (kernel_anatomy).
Anatomy anatomy(const GemmProblem& p) {
    Anatomy a;
    a.kernel = reinterpret_cast<const void*>(regblock_2d_kernel);
    a.bm = BM, a.bn = BN, a.bk = BK, a.tm = TM, a.tn = TN;
    a.block = dim3(kThreads);
    a.grid = grid_of(p);
    return a;
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.05_regblock_2d", "fp32", gemmpad::InType::F32,
                           "128x128 tiles, 8x8 outputs per thread from registers (2-D register blocking)",
                           gemmpad::cuda::launch, nullptr, nullptr, gemmpad::cuda::anatomy);
