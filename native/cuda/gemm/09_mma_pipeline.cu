// cuda.09_mma_fp16 / _tf32: tensor cores driven in PTX: mma.sync, ldmatrix and a cp.async pipeline.
// Change from 08: cp.async copies 16-byte chunks global -> shared without registers, 4 k-tiles in flight;
// ldmatrix.x4 loads fragments in mma.sync's layout; rows padded by 16 bytes (conflict-free, no swizzle);
// grouped tile raster for L2; deterministic split-K (fp32 partials, a fixed-order sum) for small problems.
// Limit: mma.sync is Ampere's instruction, operands staged through registers; Hopper's full tensor rate
// needs wgmma (10). Runs on sm_80-89 too. Tile shapes tried: NOTES.md.
// Run: gemmpad bench gemm --kernels cuda.09_mma_fp16 --sizes 4096x4096x4096
// Profile: ncu -k regex:mma_kernel -c 1 gemmpad bench gemm --kernels cuda.09_mma_fp16 --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 GFLOP/s (% of cuBLAS at each precision): fp16 327,435 (45.5 %), tf32 157,166 (39.5 %)
#include "../ptx/cp_async.cuh"
#include "../ptx/mma.cuh"
#include "../support/buffer.cuh"
#include "../support/registry.cuh"
#include "epilogue.cuh"
#include "splitk.cuh"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

namespace gemmpad::cuda {
namespace {

constexpr int WM = 64, WN = 64;       // warp tile
constexpr int MT = WM / 16, NT = WN / 8;  // mma tiles per warp: 4 x 8
constexpr int GROUP_M = 8;                // tile-rows per raster group

// A block tile: WARPS_M x WARPS_N warps of 64x64, a k-tile of KBYTES bytes per
// A row, STAGES k-tiles in flight. T = __half (mma.m16n8k16, B fragments via
// ldmatrix.trans) or float (tf32 mma.m16n8k8, B fragments via 32-bit loads).
template <class T_, int WARPS_M_, int WARPS_N_, int KBYTES, int STAGES_>
struct Tile {
    using T = T_;
    static constexpr bool fp16 = std::is_same_v<T, __half>;
    static constexpr int WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, STAGES = STAGES_;
    static constexpr int BM = WM * WARPS_M, BN = WN * WARPS_N, THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int EPC = 16 / (int)sizeof(T);  // elements per 16-byte chunk
    static constexpr int BK = KBYTES / (int)sizeof(T);
    static constexpr int KSTEP = fp16 ? 16 : 8;  // k of one mma
    // Rows padded by 16 bytes (A, and B for fp16): the 8 row addresses of an
    // ldmatrix phase then fall in 8 different 16-byte bank groups. tf32 B rows
    // are padded by 32 bytes so the 4x8 lanes of a fragment load hit 32 banks.
    static constexpr int A_LD = BK + EPC;
    static constexpr int B_LD = BN + 8;
    static constexpr int A_STAGE = BM * A_LD, B_STAGE = BK * B_LD;  // elements
    static constexpr int SMEM = STAGES * (A_STAGE + B_STAGE) * (int)sizeof(T);
    static_assert((BM * BK / EPC) % THREADS == 0 && (BK * BN / EPC) % THREADS == 0, "chunks per thread");
};

// One 16-byte chunk from global memory, element by element with bounds (the
// path for K or N not a multiple of the chunk, where cp.async would be misaligned).
template <class T>
__device__ __forceinline__ void load_chunk_checked(T* dst, const T* __restrict__ src, int valid) {
    constexpr int E = 16 / (int)sizeof(T);
    alignas(16) T v[E];
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = i < valid ? src[i] : T(0.0f);
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(v);
}

// Copies k-tile `kt` of A [BM x BK] and B [BK x BN] into one pipeline stage.
template <class C, bool ALIGNED, class T = typename C::T>
__device__ __forceinline__ void load_stage(T* sA, T* sB, const T* __restrict__ A, const T* __restrict__ B, int M,
                                           int N, int K, int m0, int n0, int kt) {
    constexpr int E = C::EPC, BM = C::BM, BN = C::BN, THREADS = C::THREADS;
    const int k0 = kt * C::BK;
    // A: BM rows x (BK/E) chunks; consecutive threads take consecutive chunks of a row.
#pragma unroll
    for (int i = 0; i < BM * C::BK / E / THREADS; ++i) {
        const int c = threadIdx.x + i * THREADS;
        const int r = c / (C::BK / E), ck = (c % (C::BK / E)) * E;
        const int gr = m0 + r, gk = k0 + ck;
        T* dst = sA + r * C::A_LD + ck;
        if constexpr (ALIGNED) {
            const bool in = gr < M && gk < K;
            cp_async16(dst, in ? A + (size_t)gr * K + gk : A, in ? 16 : 0);
        } else {
            const int valid = gr < M ? std::min(E, K - gk) : 0;
            load_chunk_checked(dst, A + (size_t)(gr < M ? gr : 0) * K + gk, valid);
        }
    }
    // B: BK rows x (BN/E) chunks.
#pragma unroll
    for (int i = 0; i < C::BK * BN / E / THREADS; ++i) {
        const int c = threadIdx.x + i * THREADS;
        const int r = c / (BN / E), cn = (c % (BN / E)) * E;
        const int gk = k0 + r, gn = n0 + cn;
        T* dst = sB + r * C::B_LD + cn;
        if constexpr (ALIGNED) {
            const bool in = gk < K && gn < N;
            cp_async16(dst, in ? B + (size_t)gk * N + gn : B, in ? 16 : 0);
        } else {
            const int valid = gk < K ? std::min(E, N - gn) : 0;
            load_chunk_checked(dst, B + (size_t)(gk < K ? gk : 0) * N + gn, valid);
        }
    }
}

// The warp's 64x64 product for one k-tile held in shared memory.
template <class C, class T = typename C::T>
__device__ __forceinline__ void warp_mma(float (&acc)[MT][NT][4], const T* tA, const T* tB, int wm, int wn,
                                         int lane) {
    // ldmatrix row addresses: lanes 0-15 -> rows 0-15 of the fragment, lanes
    // 16-31 -> the same rows 16 bytes further along (k + 8 halves / k + 4 floats).
    const int a_row = wm + (lane & 15), a_col = (lane >> 4) * C::EPC;
#pragma unroll
    for (int kk = 0; kk < C::BK; kk += C::KSTEP) {
        unsigned af[MT][4], bf[NT][2];
#pragma unroll
        for (int i = 0; i < MT; ++i) ldmatrix_x4(af[i], tA + (a_row + i * 16) * C::A_LD + kk + a_col);
        if constexpr (C::fp16) {
            // .trans: lanes 0-15 -> k rows 0-15 at n 0, lanes 16-31 -> k rows 0-15 at n 8;
            // registers 0,1 are b0,b1 of n-tile j, registers 2,3 those of n-tile j+1.
            const int b_row = kk + (lane & 15), b_col = wn + (lane >> 4) * 8;
#pragma unroll
            for (int j = 0; j < NT; j += 2) {
                unsigned r[4];
                ldmatrix_x4_trans(r, tB + b_row * C::B_LD + b_col + j * 8);
                bf[j][0] = r[0];
                bf[j][1] = r[1];
                bf[j + 1][0] = r[2];
                bf[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) mma_m16n8k16<T>(acc[i][j], af[i], bf[j][0], bf[j][1]);
        } else {
            // tf32 m16n8k8: b0 = B[k=t][n=g], b1 = B[k=t+4][n=g] (g = lane/4, t = lane%4);
            // ldmatrix cannot transpose 32-bit elements, so two plain loads.
            const int g = lane >> 2, t = lane & 3;
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int r = 0; r < 4; ++r) af[i][r] = to_tf32(af[i][r]);
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const T* p = tB + (kk + t) * C::B_LD + wn + j * 8 + g;
                bf[j][0] = to_tf32(__float_as_uint(p[0]));
                bf[j][1] = to_tf32(__float_as_uint(p[4 * C::B_LD]));
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) mma_m16n8k8_tf32(acc[i][j], af[i], bf[j][0], bf[j][1]);
        }
    }
}

// One block computes a BM x BN tile of C over k-tiles [kt_begin, kt_end).
// With `partial` set (split-K) it stores raw sums to out + blockIdx.z * M * N;
// otherwise it applies the epilogue and stores to out (= C).
template <class C, bool ALIGNED, class T = typename C::T>
__global__ void __launch_bounds__(C::THREADS) mma_kernel(int M, int N, int K, const T* __restrict__ A,
                                                          const T* __restrict__ B, const float* __restrict__ bias,
                                                          float* __restrict__ out, Act act, int kt_per_split,
                                                          bool partial) {
    constexpr int BM = C::BM, BN = C::BN, STAGES = C::STAGES, WARPS_N = C::WARPS_N;
    constexpr int A_STAGE = C::A_STAGE, B_STAGE = C::B_STAGE;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* sA = reinterpret_cast<T*>(smem_raw);
    T* sB = sA + STAGES * A_STAGE;

    // Grouped raster: blocks launched together cover GROUP_M tile-rows x a few
    // tile-columns, so their A and B panels stay in L2.
    const int tiles_m = ceil_div(M, BM), tiles_n = ceil_div(N, BN);
    const int pid = blockIdx.x;
    const int group = pid / (GROUP_M * tiles_n);
    const int first_m = group * GROUP_M;
    const int group_rows = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
    const int tm = first_m + (pid % (GROUP_M * tiles_n)) % group_rows;
    const int tn = (pid % (GROUP_M * tiles_n)) / group_rows;
    const int m0 = tm * BM, n0 = tn * BN;

    const int k_tiles = ceil_div(K, C::BK);
    const int kt_begin = blockIdx.z * kt_per_split;
    const int kt_end = std::min(k_tiles, kt_begin + kt_per_split);
    const int n_iter = kt_end - kt_begin;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

    // Prologue: fill STAGES-1 stages (empty commit groups keep the count uniform).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < n_iter)
            load_stage<C, ALIGNED>(sA + s * A_STAGE, sB + s * B_STAGE, A, B, M, N, K, m0, n0, kt_begin + s);
        cp_async_commit();
    }

    for (int it = 0; it < n_iter; ++it) {
        cp_async_wait<STAGES - 2>();  // tile `it` has landed (for this thread's copies)...
        __syncthreads();              // ...and for everyone's; stage (it-1) is free again.
        const int next = it + STAGES - 1;
        if (next < n_iter) {
            const int s = next % STAGES;
            load_stage<C, ALIGNED>(sA + s * A_STAGE, sB + s * B_STAGE, A, B, M, N, K, m0, n0, kt_begin + next);
        }
        cp_async_commit();
        warp_mma<C>(acc, sA + (it % STAGES) * A_STAGE, sB + (it % STAGES) * B_STAGE, wm, wn, lane);
    }
    cp_async_wait<0>();  // no copy may still target shared memory when the block exits

    // Accumulator layout of m16n8: lane holds rows g and g+8, columns 2t and 2t+1.
    const int g = lane >> 2, t = lane & 3;
    float* dst = partial ? out + (size_t)blockIdx.z * M * N : out;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + wm + i * 16 + g + h * 8;
            if (row >= M) continue;
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const int col = n0 + wn + j * 8 + 2 * t;
                if (col >= N) continue;  // partial tile: nothing to store, and bias[col] is out of range
                store_pair(dst + (size_t)row * N, col, N, acc[i][j][2 * h], acc[i][j][2 * h + 1], bias, act, !partial);
            }
        }
}

template <class C, bool ALIGNED>
void launch_kernel(const GemmProblem& p, float* out, int splits, int kt_per_split, cudaStream_t stream,
                   const char* name) {
    using T = typename C::T;
    auto kernel = mma_kernel<C, ALIGNED>;
    static bool attribute_set = false;  // per instantiation; one host thread drives the GPU
    if (!attribute_set) {
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
        attribute_set = true;
    }
    dim3 grid(ceil_div(p.M, C::BM) * ceil_div(p.N, C::BN), 1, splits);
    kernel<<<grid, C::THREADS, C::SMEM, stream>>>(p.M, p.N, p.K, static_cast<const T*>(p.A),
                                                   static_cast<const T*>(p.B), p.bias, out, p.act, kt_per_split,
                                                   splits > 1);
    CUDA_CHECK_LAUNCH(name);
}

// Split-K: aim for about two waves of blocks, but give each slice at least 4 k-tiles so the
// pipeline has something to overlap; no empty slice.
template <class C>
int splits_of(const GemmProblem& p) {
    const int tiles = ceil_div(p.M, C::BM) * ceil_div(p.N, C::BN);
    const int k_tiles = ceil_div(p.K, C::BK);
    const int sms = device_props().multiProcessorCount;
    int splits = 1;
    if (tiles < sms) splits = std::min({ceil_div(2 * sms, tiles), k_tiles / 4, 16});
    splits = std::max(splits, 1);
    return ceil_div(k_tiles, ceil_div(k_tiles, splits));
}

// cp.async moves 16-byte chunks: rows of A and B must start 16-byte aligned.
template <class C>
bool aligned(const GemmProblem& p) {
    return p.K % C::EPC == 0 && p.N % C::EPC == 0 && reinterpret_cast<uintptr_t>(p.A) % 16 == 0 &&
           reinterpret_cast<uintptr_t>(p.B) % 16 == 0;
}

template <class C>
void launch_tile(const GemmProblem& p, cudaStream_t stream, const char* name) {
    using T = typename C::T;
    constexpr InType want = C::fp16 ? InType::F16 : InType::F32;
    if (p.in_type != want)
        throw std::invalid_argument(std::string(name) + " expects " + (C::fp16 ? "float16" : "float32") + " operands");
    if ((size_t)C::SMEM > max_smem_per_block_optin())
        throw std::invalid_argument(std::string(name) + " needs " + std::to_string(C::SMEM) +
                                    " bytes of shared memory per block; this device allows " +
                                    std::to_string(max_smem_per_block_optin()));

    const int splits = splits_of<C>(p), kt_per_split = ceil_div(ceil_div(p.K, C::BK), splits);
    float* out = p.C;
    if (splits > 1) out = static_cast<float*>(workspace((size_t)splits * p.M * p.N * sizeof(float)));
    if (aligned<C>(p)) launch_kernel<C, true>(p, out, splits, kt_per_split, stream, name);
    else launch_kernel<C, false>(p, out, splits, kt_per_split, stream, name);

    if (splits > 1) splitk_reduce(p.M, p.N, splits, out, p.bias, p.C, p.act, stream);
}

// 128x128 block, 64-byte k-tile, 4 stages: 76 KB, fits every target (99 KB on
// consumer cards); the fastest of the tile shapes measured (see the header).
using Fp16Base = Tile<__half, 2, 2, 64, 4>;
using Tf32Base = Tile<float, 2, 2, 64, 4>;

// What launch_tile() launches for p (kernel_anatomy); the split's reduction kernel follows it.
template <class C>
Anatomy anatomy(const GemmProblem& p) {
    Anatomy a;
    a.kernel = aligned<C>(p) ? reinterpret_cast<const void*>(mma_kernel<C, true>)
                             : reinterpret_cast<const void*>(mma_kernel<C, false>);
    a.bm = C::BM, a.bn = C::BN, a.bk = C::BK, a.wm = C::BM / C::WARPS_M, a.wn = C::BN / C::WARPS_N;
    a.block = dim3(C::THREADS);
    const int splits = splits_of<C>(p);
    a.grid = dim3(ceil_div(p.M, C::BM) * ceil_div(p.N, C::BN), 1, splits);
    a.dynamic_smem = C::SMEM;
    a.note = std::to_string(C::STAGES) + "-stage cp.async pipeline" +
             (aligned<C>(p) ? "" : ", element-wise loads (rows not 16-byte aligned)") +
             (splits > 1 ? "; split-K " + std::to_string(splits) + " ways, then a reduction kernel" : "");
    return a;
}
Anatomy anatomy_fp16(const GemmProblem& p) { return anatomy<Fp16Base>(p); }
Anatomy anatomy_tf32(const GemmProblem& p) { return anatomy<Tf32Base>(p); }

void launch_fp16(const GemmProblem& p, cudaStream_t s) { launch_tile<Fp16Base>(p, s, "cuda.09_mma_fp16"); }
void launch_tf32(const GemmProblem& p, cudaStream_t s) { launch_tile<Tf32Base>(p, s, "cuda.09_mma_tf32"); }

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.09_mma_fp16", "fp16", gemmpad::InType::F16,
                           "mma.sync m16n8k16 + ldmatrix + 4-stage cp.async pipeline, split-K for small M*N",
                           gemmpad::cuda::launch_fp16, nullptr, nullptr, gemmpad::cuda::anatomy_fp16);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.09_mma_tf32", "tf32", gemmpad::InType::F32,
                           "mma.sync m16n8k8 tf32 + ldmatrix + 4-stage cp.async pipeline, split-K for small M*N",
                           gemmpad::cuda::launch_tf32, nullptr, nullptr, gemmpad::cuda::anatomy_tf32);
