// cuda.08_wmma_tf32 / _fp16: the first tensor-core step, through the WMMA API, fp32 accumulate.
// Change from 07: same block -> warp hierarchy, but each warp's 64x32 tile is 4x2 16x16 accumulator
// fragments, one wmma::mma_sync per fragment and k step (tf32: floats rounded after loading; fp16: __half
// operands, half the bytes); epilogue through a per-warp staging tile (fragment layout is unspecified).
// Limit: single-buffered loads through registers (the tensor cores wait on every tile); tf32 needs 146
// registers x 256 threads + 35 KB, one block per SM, so nothing hides the global latency (09 fixes it).
// Run: gemmpad bench gemm --kernels cuda.08_wmma_fp16 --sizes 4096x4096x4096
// Profile: ncu -k regex:wmma_kernel -c 1 gemmpad bench gemm --kernels cuda.08_wmma_fp16 --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 GFLOP/s (% of cuBLAS at each precision): fp16 107,678 (14.6 %), tf32 25,852 (6.5 %)
#include <mma.h>

#include <type_traits>

#include "../support/registry.cuh"
#include "epilogue.cuh"

namespace gemmpad::cuda {
namespace {

using namespace nvcuda;

constexpr int BM = 128, BN = 128, BK = 32;
constexpr int WM = 64, WN = 32;                      // warp tile
constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;  // 2 x 4
constexpr int THREADS = 32 * WARPS_M * WARPS_N;      // 256
constexpr int FM = WM / 16, FN = WN / 16;            // 4 x 2 accumulator fragments per warp
constexpr int C_LD = 16 + 4;                         // staging tile row (floats)

// Element type in memory/shared memory, WMMA input type and k per mma.
template <class T> struct Wmma;
template <> struct Wmma<float> {
    using frag_t = wmma::precision::tf32;
    static constexpr int FK = 8;
    static constexpr int VEC = 4;  // elements per 16-byte load
};
template <> struct Wmma<__half> {
    using frag_t = __half;
    static constexpr int FK = 16;
    static constexpr int VEC = 8;
};

// Copies a ROWS x COLS tile starting at (r0, c0) of a row-major [R, Cn] matrix
// into shared memory with leading dimension LD, zero-filling outside the matrix.
template <class T, int ROWS, int COLS, int LD>
__device__ __forceinline__ void load_tile(T* __restrict__ s, const T* __restrict__ g, int R, int Cn, int r0, int c0,
                                          bool vec_ok) {
    constexpr int V = Wmma<T>::VEC;
    constexpr int CHUNKS = ROWS * COLS / V;
#pragma unroll
    for (int i = 0; i < CHUNKS / THREADS; ++i) {
        const int c = threadIdx.x + i * THREADS;
        const int r = c / (COLS / V), cc = (c % (COLS / V)) * V;
        const int gr = r0 + r, gc = c0 + cc;
        T* dst = s + r * LD + cc;
        if (vec_ok && gr < R && gc + V <= Cn) {
            *reinterpret_cast<uint4*>(dst) = __ldg(reinterpret_cast<const uint4*>(g + (size_t)gr * Cn + gc));
        } else {
#pragma unroll
            for (int e = 0; e < V; ++e)
                dst[e] = (gr < R && gc + e < Cn) ? g[(size_t)gr * Cn + gc + e] : T(0.0f);
        }
    }
}

template <class T>
__global__ void __launch_bounds__(THREADS) wmma_kernel(int M, int N, int K, const T* __restrict__ A,
                                                        const T* __restrict__ B, const float* __restrict__ bias,
                                                        float* __restrict__ C, Act act) {
    using W = Wmma<T>;
    // Rows padded by 16 bytes so that fragment loads spread over the banks.
    constexpr int A_LD = BK + W::VEC, B_LD = BN + W::VEC;
    constexpr int AB_BYTES = (BM * A_LD + BK * B_LD) * sizeof(T);
    constexpr int C_BYTES = (THREADS / 32) * 16 * C_LD * sizeof(float);
    // The C staging tiles reuse the operand buffers after the main loop.
    __shared__ __align__(32) unsigned char smem[AB_BYTES > C_BYTES ? AB_BYTES : C_BYTES];
    T* sA = reinterpret_cast<T*>(smem);
    T* sB = sA + BM * A_LD;

    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    const bool a_vec = K % W::VEC == 0, b_vec = N % W::VEC == 0;

    wmma::fragment<wmma::accumulator, 16, 16, W::FK, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile<T, BM, BK, A_LD>(sA, A, M, K, m0, k0, a_vec);
        load_tile<T, BK, BN, B_LD>(sB, B, K, N, k0, n0, b_vec);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += W::FK) {
            wmma::fragment<wmma::matrix_a, 16, 16, W::FK, typename W::frag_t, wmma::row_major> af[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, W::FK, typename W::frag_t, wmma::row_major> bf[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) {
                wmma::load_matrix_sync(af[i], sA + (wm + i * 16) * A_LD + kk, A_LD);
                if constexpr (std::is_same_v<T, float>)
#pragma unroll
                    for (int e = 0; e < af[i].num_elements; ++e) af[i].x[e] = wmma::__float_to_tf32(af[i].x[e]);
            }
#pragma unroll
            for (int j = 0; j < FN; ++j) {
                wmma::load_matrix_sync(bf[j], sB + kk * B_LD + wn + j * 16, B_LD);
                if constexpr (std::is_same_v<T, float>)
#pragma unroll
                    for (int e = 0; e < bf[j].num_elements; ++e) bf[j].x[e] = wmma::__float_to_tf32(bf[j].x[e]);
            }
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
        }
        __syncthreads();  // the next iteration overwrites the tiles
    }

    // Epilogue: each fragment goes through this warp's 16x16 staging tile, then
    // each lane writes half a row (8 values) with bias/ReLU and bounds checks.
    float* stage = reinterpret_cast<float*>(smem) + warp * 16 * C_LD;
    const int r = lane / 2, c = (lane % 2) * 8;
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            wmma::store_matrix_sync(stage, acc[i][j], C_LD, wmma::mem_row_major);
            __syncwarp();
            const int row = m0 + wm + i * 16 + r;
            const int col0 = n0 + wn + j * 16 + c;
            if (row < M)
#pragma unroll
                for (int e = 0; e < 8; ++e)
                    if (col0 + e < N) C[(size_t)row * N + col0 + e] = epilogue(stage[r * C_LD + c + e], bias, col0 + e, act);
            __syncwarp();  // before the next fragment overwrites the staging tile
        }
}

// Its grid for problem p: a block per 128 x 128 tile of C.
dim3 grid_of(const GemmProblem& p) { return dim3(ceil_div(p.N, BN), ceil_div(p.M, BM)); }

template <class T>
void launch(const GemmProblem& p, cudaStream_t stream, const char* name) {
    const dim3 grid = grid_of(p);
    wmma_kernel<T><<<grid, THREADS, 0, stream>>>(p.M, p.N, p.K, static_cast<const T*>(p.A),
                                                  static_cast<const T*>(p.B), p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH(name);
}

// What launch() launches for p (kernel_anatomy).
template <class T>
Anatomy anatomy(const GemmProblem& p) {
    Anatomy a;
    a.kernel = reinterpret_cast<const void*>(wmma_kernel<T>);
    a.bm = BM, a.bn = BN, a.bk = BK, a.wm = WM, a.wn = WN;
    a.block = dim3(THREADS);
    a.grid = grid_of(p);
    return a;
}
Anatomy anatomy_tf32(const GemmProblem& p) { return anatomy<float>(p); }
Anatomy anatomy_fp16(const GemmProblem& p) { return anatomy<__half>(p); }

void launch_tf32(const GemmProblem& p, cudaStream_t stream) {
    if (p.in_type != InType::F32) throw std::invalid_argument("cuda.08_wmma_tf32 expects float32 operands");
    launch<float>(p, stream, "cuda.08_wmma_tf32");
}

void launch_fp16(const GemmProblem& p, cudaStream_t stream) {
    if (p.in_type != InType::F16) throw std::invalid_argument("cuda.08_wmma_fp16 expects float16 operands");
    launch<__half>(p, stream, "cuda.08_wmma_fp16");
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.08_wmma_tf32", "tf32", gemmpad::InType::F32,
                           "WMMA 16x16x8 tf32 fragments, fp32 accumulate, 128x128 block / 64x32 warp tiles",
                           gemmpad::cuda::launch_tf32, nullptr, nullptr, gemmpad::cuda::anatomy_tf32);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.08_wmma_fp16", "fp16", gemmpad::InType::F16,
                           "WMMA 16x16x16 fp16 fragments, fp32 accumulate, 128x128 block / 64x32 warp tiles",
                           gemmpad::cuda::launch_fp16, nullptr, nullptr, gemmpad::cuda::anatomy_fp16);
