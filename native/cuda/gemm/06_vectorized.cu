// cuda.06_vectorized: float4 global loads and stores, A's tile stored transposed in shared memory.
// Change from 05 (same 128x128x8 tiles, 8x8 outputs a thread): one float4 per global fetch and per store
// of C; As[k][m] makes a thread's 8 A values two float4 shared loads: 4 shared instructions per 64 FMAs.
// Needs K, N % 4 == 0 and 16-byte aligned A, B, C; otherwise the same kernel runs scalar and bounds-checked.
// Limit: float4 reads of B take 4 wavefronts (bank conflicts), the transposed store of A is 2-way
// conflicted, and global loads stall the block between tiles (07 fixes all three).
// Run: gemmpad bench gemm --kernels cuda.06_vectorized --sizes 4096x4096x4096
// Profile: ncu -k regex:vectorized_kernel -c 1 gemmpad bench gemm --kernels cuda.06_vectorized --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 34,020 GFLOP/s = 66.3 % of cuBLAS fp32
#include "../support/registry.cuh"
#include "epilogue.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int BM = 128, BN = 128, BK = 8;
constexpr int TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
static_assert(BM * BK == 4 * kThreads && BK * BN == 4 * kThreads, "one float4 of A and of B per thread per tile");

template <bool kVec>
__global__ void __launch_bounds__(kThreads)
    vectorized_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                      const float* __restrict__ bias, float* __restrict__ C, Act act) {
    __shared__ __align__(16) float As[BK][BM];  // transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN];
    const int t = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int trow = t / (BN / TN), tcol = t % (BN / TN);
    // The float4 this thread copies: A row a_r, k a_c..a_c+3; B row b_r, columns b_c..b_c+3.
    const int a_r = t / (BK / 4), a_c = (t % (BK / 4)) * 4;
    const int b_r = t / (BN / 4), b_c = (t % (BN / 4)) * 4;

    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        const int ar = row0 + a_r, ak = k0 + a_c;
        float4 av = make_float4(0.f, 0.f, 0.f, 0.f);
        if constexpr (kVec) {
            if (ar < M && ak < K) av = *reinterpret_cast<const float4*>(A + (size_t)ar * K + ak);
        } else if (ar < M) {
            const float* src = A + (size_t)ar * K;
            if (ak + 0 < K) av.x = src[ak + 0];
            if (ak + 1 < K) av.y = src[ak + 1];
            if (ak + 2 < K) av.z = src[ak + 2];
            if (ak + 3 < K) av.w = src[ak + 3];
        }
        As[a_c + 0][a_r] = av.x;
        As[a_c + 1][a_r] = av.y;
        As[a_c + 2][a_r] = av.z;
        As[a_c + 3][a_r] = av.w;

        const int bk = k0 + b_r, bc = col0 + b_c;
        float4 bv = make_float4(0.f, 0.f, 0.f, 0.f);
        if constexpr (kVec) {
            if (bk < K && bc < N) bv = *reinterpret_cast<const float4*>(B + (size_t)bk * N + bc);
        } else if (bk < K) {
            const float* src = B + (size_t)bk * N;
            if (bc + 0 < N) bv.x = src[bc + 0];
            if (bc + 1 < N) bv.y = src[bc + 1];
            if (bc + 2 < N) bv.z = src[bc + 2];
            if (bc + 3 < N) bv.w = src[bc + 3];
        }
        *reinterpret_cast<float4*>(&Bs[b_r][b_c]) = bv;
        __syncthreads();

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a_reg[TM], b_reg[TN];
            *reinterpret_cast<float4*>(&a_reg[0]) = *reinterpret_cast<const float4*>(&As[k][trow * TM]);
            *reinterpret_cast<float4*>(&a_reg[4]) = *reinterpret_cast<const float4*>(&As[k][trow * TM + 4]);
            *reinterpret_cast<float4*>(&b_reg[0]) = *reinterpret_cast<const float4*>(&Bs[k][tcol * TN]);
            *reinterpret_cast<float4*>(&b_reg[4]) = *reinterpret_cast<const float4*>(&Bs[k][tcol * TN + 4]);
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
        float* c_row = C + (size_t)row * N;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int col = col0 + tcol * TN + j;
            if constexpr (kVec) {
                if (col < N)  // N % 4 == 0: the 4 columns are all inside or all outside
                    *reinterpret_cast<float4*>(c_row + col) =
                        make_float4(epilogue(acc[i][j + 0], bias, col + 0, act), epilogue(acc[i][j + 1], bias, col + 1, act),
                                    epilogue(acc[i][j + 2], bias, col + 2, act), epilogue(acc[i][j + 3], bias, col + 3, act));
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (col + q < N) c_row[col + q] = epilogue(acc[i][j + q], bias, col + q, act);
            }
        }
    }
}

// Its grid for problem p: a block per tile of C.
dim3 grid_of(const GemmProblem& p) { return dim3(ceil_div(p.N, BN), ceil_div(p.M, BM)); }

void launch(const GemmProblem& p, cudaStream_t stream) {
    const dim3 grid = grid_of(p);
    const auto* A = static_cast<const float*>(p.A);
    const auto* B = static_cast<const float*>(p.B);
    if (float4_rows(p))
        vectorized_kernel<true><<<grid, kThreads, 0, stream>>>(p.M, p.N, p.K, A, B, p.bias, p.C, p.act);
    else
        vectorized_kernel<false><<<grid, kThreads, 0, stream>>>(p.M, p.N, p.K, A, B, p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.06_vectorized");
}

// What launch() launches for p (kernel_anatomy).
Anatomy anatomy(const GemmProblem& p) {
    Anatomy a;
    a.kernel = float4_rows(p) ? reinterpret_cast<const void*>(vectorized_kernel<true>)
                             : reinterpret_cast<const void*>(vectorized_kernel<false>);
    a.bm = BM, a.bn = BN, a.bk = BK, a.tm = TM, a.tn = TN;
    a.block = dim3(kThreads);
    a.grid = grid_of(p);
    a.note = float4_rows(p) ? "float4 loads" : "scalar loads (K or N not a multiple of 4)";
    return a;
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.06_vectorized", "fp32", gemmpad::InType::F32,
                           "05 with float4 global/shared loads and A's tile transposed in shared memory",
                           gemmpad::cuda::launch, nullptr, nullptr, gemmpad::cuda::anatomy);
