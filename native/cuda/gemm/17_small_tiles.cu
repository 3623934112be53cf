// cuda.17_small_tiles_fp16 / _bf16 / _tf32: the tile sized for the problem. Where 16's (13's for
// tf32) 128x256 tiles cannot fill the GPU, as at all three of the MLP's layer shapes, a light
// kernel with small tiles runs instead; elsewhere 16 (13) runs unchanged.
//
// What changed from 16: for M x 100 x K a 128x256 tile computes 256 columns to keep 100 and holds
// 197 KB of shared memory, so 4096 rows make 32 blocks on 132 SMs; split-K fills the rest and pays a
// reduction of 128-row tiles, and the producer's 4 warps issue every cp.async alone (200-byte rows
// are out of TMA's reach). Here a block tile is 64 x 64 (two column tiles for N = 100), 8 warps of
// 16 x 32, mma.sync m16n8k16 (m16n8k8 for tf32) fed by ldmatrix from a 4-stage cp.async ring that
// every warp fills, each operand in the widest chunks its rows allow (16, 8 or 4 bytes); each thread
// works out its chunks' sources and places once and steps them a k-tile per fill; split-K over a
// cluster (as 10-16) only where the tiles leave SMs idle; the two column tiles of a row run side by
// side; tf32 takes float32 bit patterns as they are (as 12-13 do). cuBLAS's own kernels at these
// shapes are sm80 kernels of this kind (64x64 tiles, no split, at 4096 x 100 x 784; ncu).
// Why it should be faster: at these shapes the tensor cores idle most of the time; what counts is
// how soon each SM has its operands and how few instructions its 8 warps (2 per scheduler) issue
// between them: per-fill index arithmetic was most of the k-loop (ncu), and working it out once
// took fp16 at 4096 x 100 x 784 from 15.9 to 13.0 us. No reduction at 4096 rows (128 blocks).
// What holds it back: tf32 takes ~1.3x cuBLAS's time with the same tiles and bytes, for a reason
// not found (NOTES.md: not stages, k-tile size, warps per tile or fragment loads); 16-bit B rows of
// 200 bytes go in 8-byte chunks. Not faster (NOTES.md): 6 or 8 stages, 32 or 128 rows, 4 warps of
// 32 x 32, L2 prefetches, TMA boxes instead of cp.async, wgmma for tf32 (a rung 18), k-tiles of 64
// floats, two warps per 16 x 32 splitting each k-tile; 128 columns split in two gain 4 % at 4096 x
// 100 x 784 and lose 8 % at 8192 rows. Rows aligned to 2 bytes only (odd K or N in 16 bits) take
// 16's (13's) path, as do large problems.
// Measured: 4096x100x784 50,176 GFLOP/s = 113.6 % of cuBLAS fp16; 4096x100x784 33,903 GFLOP/s =
// 79.1 % of cuBLAS tf32 (H100, 2026-11-27;
// assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include <algorithm>
#include <type_traits>

#include "wgmma.cuh"

namespace gemmpad::cuda::small {
namespace {

constexpr int BM = 64, BN = 64;  // block tile: 2 column tiles for the MLP's N = 100
constexpr int WN = 32;           // a warp per 16 x 32: four n8 mma tiles
constexpr int WARPS = BM / 16 * (BN / WN), THREADS = 32 * WARPS;
constexpr int ROW_BYTES = 128;   // a k-tile: 64 halves or 32 floats per row of A
constexpr int STAGES = 4;        // 6 and 8 were no faster (NOTES.md)

// The block tile's layout for operand type T_ (__half, __nv_bfloat16, or float for tf32), A copied
// in WA_-byte cp.async chunks (16, 8 or 4: the widest its rows allow), B in WB_-byte ones.
template <class T_, int WA_, int WB_>
struct Tile {
    using T = T_;
    static constexpr bool tf32 = std::is_same_v<T, float>;
    static constexpr int WA = WA_, WB = WB_;
    static constexpr int BK = ROW_BYTES / (int)sizeof(T), KSTEP = tf32 ? 8 : 16;
    // Rows padded as in 09: A's by 16 bytes (ldmatrix phases on 8 bank groups), B's by 8 elements
    // (16-bit: the same for ldmatrix.trans; tf32: 32 bytes, so a fragment's 4x8 loads hit 32 banks).
    static constexpr int A_PITCH = ROW_BYTES + 16, B_PITCH = (BN + 8) * (int)sizeof(T);  // bytes
    static constexpr int A_BYTES = BM * A_PITCH, B_BYTES = BK * B_PITCH;                 // a stage
    static constexpr int PITCH = BN + 4;  // split-K's partial tile row, floats
    static constexpr int SMEM = std::max<int>(STAGES * (A_BYTES + B_BYTES), BM * PITCH * (int)sizeof(float));
};

// Fills a stage with k-tile [k0, k0 + BK) of A's rows [m0, m0 + BM) and of B's columns [n0, n0 +
// BN), in WA- and WB-byte cp.async chunks. Past K: zeros in both operands (the padding adds
// nothing). Rows of A past M and columns past N are left as they are: they reach only outputs never
// stored.
template <class C, class T>
__device__ __forceinline__ void load_stage(unsigned char* sA, unsigned char* sB, const T* __restrict__ A,
                                           const T* __restrict__ B, int M, int N, int K, int m0, int n0, int k0) {
    {
        constexpr int E = C::WA / (int)sizeof(T), ROW = C::BK / E;
        static_assert(BM * ROW % THREADS == 0, "A's chunks split evenly over the threads");
#pragma unroll
        for (int i = 0; i < BM * ROW / THREADS; ++i) {
            const int q = threadIdx.x + i * THREADS, r = q / ROW, c = (q % ROW) * E;
            const int gr = m0 + r, gk = k0 + c, valid = max(0, min(E, K - gk));
            if (gr < M)
                cp_async_zfill<C::WA>(smem_u32(sA + r * C::A_PITCH + c * (int)sizeof(T)),
                                      valid ? A + (size_t)gr * K + gk : A, valid * sizeof(T));
        }
    }
    {
        constexpr int E = C::WB / (int)sizeof(T), ROW = BN / E;
        static_assert(C::BK * ROW % THREADS == 0, "B's chunks split evenly over the threads");
#pragma unroll
        for (int i = 0; i < C::BK * ROW / THREADS; ++i) {
            const int q = threadIdx.x + i * THREADS, r = q / ROW, c = (q % ROW) * E;
            const int gk = k0 + r, gn = n0 + c, valid = gk < K ? min(E, N - gn) : 0;
            if (gn < N)
                cp_async_zfill<C::WB>(smem_u32(sB + r * C::B_PITCH + c * (int)sizeof(T)),
                                      valid ? B + (size_t)gk * N + gn : B, valid * sizeof(T));
        }
    }
}

// This thread's share of a stage's copies where a k-tile lies whole inside K, as load_stage makes
// them: each chunk's source (advanced one k-tile per fill), place in the stage and byte count (0:
// a row past M or a column past N, nothing to copy), worked out once per block rather than at
// every k-tile: the copies' index arithmetic was most of the k-loop's instructions.
// Not kept for 4-byte copies of both 16-bit operands: their 16 chunks per thread would spill.
template <class C, class T = typename C::T>
struct Copies {
    static constexpr int EA = C::WA / (int)sizeof(T), EB = C::WB / (int)sizeof(T);
    static constexpr int NA = BM * (C::BK / EA) / THREADS, NB = C::BK * (BN / EB) / THREADS;
    static constexpr bool kept = NA + NB <= 12;
    const T* a[NA];
    const T* b[NB];
    unsigned a_dst[NA], b_dst[NB];
    int a_bytes[NA], b_bytes[NB];
    size_t b_step;  // elements from one k-tile of B to the next

    __device__ __forceinline__ Copies(const T* __restrict__ A, const T* __restrict__ B, int M, int N, int K, int m0,
                                      int n0, int k0)
        : b_step((size_t)C::BK * N) {
#pragma unroll
        for (int i = 0; i < NA; ++i) {
            const int q = threadIdx.x + i * THREADS, r = q / (C::BK / EA), c = (q % (C::BK / EA)) * EA;
            a[i] = A + (size_t)min(m0 + r, M - 1) * K + k0 + c;
            a_dst[i] = r * C::A_PITCH + c * (int)sizeof(T);
            a_bytes[i] = m0 + r < M ? C::WA : 0;
        }
#pragma unroll
        for (int i = 0; i < NB; ++i) {
            const int q = threadIdx.x + i * THREADS, r = q / (BN / EB), c = (q % (BN / EB)) * EB;
            b[i] = B + (size_t)(k0 + r) * N + min(n0 + c, N - 1);
            b_dst[i] = r * C::B_PITCH + c * (int)sizeof(T);
            b_bytes[i] = max(0, min(EB, N - n0 - c)) * (int)sizeof(T);
        }
    }
    // The next k-tile into the stage at shared addresses sA, sB.
    __device__ __forceinline__ void fill(unsigned sA, unsigned sB) {
#pragma unroll
        for (int i = 0; i < NA; ++i) {
            if (a_bytes[i]) cp_async_zfill<C::WA>(sA + a_dst[i], a[i], a_bytes[i]);
            a[i] += C::BK;
        }
#pragma unroll
        for (int i = 0; i < NB; ++i) {
            if (b_bytes[i]) cp_async_zfill<C::WB>(sB + b_dst[i], b[i], b_bytes[i]);
            b[i] += b_step;
        }
    }
};

// The warp's 16 x 32 product over one k-tile in shared memory (fragments as in 09).
template <class C>
__device__ __forceinline__ void warp_mma(float (&acc)[WN / 8][4], const unsigned char* tA, const unsigned char* tB,
                                         int wm, int wn, int lane) {
    using T = typename C::T;
    const int a_row = wm + (lane & 15), g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int kk = 0; kk < C::BK; kk += C::KSTEP) {
        unsigned af[4];
        ldmatrix_x4(af, tA + a_row * C::A_PITCH + (kk + (lane >> 4) * (16 / (int)sizeof(T))) * (int)sizeof(T));
        if constexpr (C::tf32) {  // float32 bit patterns: the tensor cores ignore the low 13 mantissa bits
#pragma unroll
            for (int j = 0; j < WN / 8; ++j) {
                const float* p = reinterpret_cast<const float*>(tB + (kk + t) * C::B_PITCH) + wn + j * 8 + g;
                mma_m16n8k8_tf32(acc[j], af, __float_as_uint(p[0]), __float_as_uint(p[4 * C::B_PITCH / sizeof(float)]));
            }
        } else {
#pragma unroll
            for (int j = 0; j < WN / 8; j += 2) {
                unsigned b[4];  // b0, b1 of n-tile j, then of n-tile j + 1
                const int n = wn + (lane >> 4) * 8 + j * 8;
                ldmatrix_x4_trans(b, tB + (kk + (lane & 15)) * C::B_PITCH + n * (int)sizeof(T));
                mma_m16n8k16<T>(acc[j], af, b[0], b[1]);
                mma_m16n8k16<T>(acc[j + 1], af, b[2], b[3]);
            }
        }
    }
}

// C = act(A @ B + bias) for the tile of block x over k-tiles [y * kt_per_split, +kt_per_split).
// Tiles go a row of tiles at a time, so that the blocks reading the same rows of A run side by side.
// With gridDim.y > 1 the blocks of a tile are one cluster and add up their partial tiles through
// distributed shared memory (cluster_reduce_store, as 10-16 do).
template <class C, class T = typename C::T>
__global__ void __launch_bounds__(THREADS)
    small_kernel(const T* __restrict__ A, const T* __restrict__ B, const float* __restrict__ bias,
                 float* __restrict__ out, int M, int N, int K, Act act, int kt_per_split) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* sA = smem_raw;
    unsigned char* sB = sA + STAGES * C::A_BYTES;
    const int tiles_n = ceil_div(N, BN);
    const int m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
    const int kt_begin = blockIdx.y * kt_per_split;
    const int n_iter = min(ceil_div(K, C::BK) - kt_begin, kt_per_split);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / (BN / WN)) * 16, wn = (warp % (BN / WN)) * WN;
    float acc[WN / 8][4] = {};
    Copies<C> copies(A, B, M, N, K, m0, n0, kt_begin * C::BK);
    auto fill = [&](int i) {  // k-tile kt_begin + i into stage i % STAGES; called for i = 0, 1, ... in turn
        unsigned char *a = sA + (i % STAGES) * C::A_BYTES, *b = sB + (i % STAGES) * C::B_BYTES;
        const int k0 = (kt_begin + i) * C::BK;
        if (Copies<C>::kept && k0 + C::BK <= K) copies.fill(smem_u32(a), smem_u32(b));
        else load_stage<C>(a, b, A, B, M, N, K, m0, n0, k0);  // the last k-tile of K, zeros past it
    };

    // The ring as in 09: STAGES - 1 k-tiles in flight ahead of the one multiplied.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < n_iter) fill(s);
        cp_async_commit();
    }
    for (int it = 0; it < n_iter; ++it) {
        cp_async_wait<STAGES - 2>();  // k-tile `it` has landed (this thread's copies)...
        __syncthreads();              // ...and everyone's; the stage of it - 1 is free again
        if (it + STAGES - 1 < n_iter) fill(it + STAGES - 1);
        cp_async_commit();
        warp_mma<C>(acc, sA + (it % STAGES) * C::A_BYTES, sB + (it % STAGES) * C::B_BYTES, wm, wn, lane);
    }
    cp_async_wait<0>();

    // m16n8 accumulators: a lane holds rows g, g + 8 and columns 2t, 2t + 1 of each n-tile.
    const int g = lane >> 2, t = lane & 3;
    if (gridDim.y > 1) {
        float* part = reinterpret_cast<float*>(sA);  // over the stages
        __syncthreads();                              // every warp is done reading them
#pragma unroll
        for (int j = 0; j < WN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
                *reinterpret_cast<float2*>(part + (wm + g + 8 * h) * C::PITCH + wn + 8 * j + 2 * t) =
                    make_float2(acc[j][2 * h], acc[j][2 * h + 1]);
        cluster_arrive_release();
        cluster_wait_acquire();  // every block's partial tile is written
        cluster_reduce_store(part, BM, BN, C::PITCH, m0, n0, M, N, bias, act, out, threadIdx.x, THREADS);
        cluster_arrive_relaxed();
        cluster_wait_acquire();  // no block leaves while another still reads its tile
        return;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm + g + 8 * h;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < WN / 8; ++j) {
            const int col = n0 + wn + 8 * j + 2 * t;
            if (col < N) store_pair(out + (size_t)row * N, col, N, acc[j][2 * h], acc[j][2 * h + 1], bias, act);
        }
    }
}

template <class T, int WA, int WB>
void run(const GemmProblem& p, cudaStream_t stream, const char* name) {
    using C = Tile<T, WA, WB>;
    constexpr auto kernel = small_kernel<C>;
    static bool attribute_set = false;  // per instantiation; one host thread drives the GPU (common.cuh)
    if (!attribute_set) {
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
        attribute_set = true;
    }
    const int tiles = ceil_div(p.M, BM) * ceil_div(p.N, BN), k_tiles = ceil_div(p.K, C::BK);
    const int splits = cluster_splits(reinterpret_cast<const void*>(kernel), THREADS, C::SMEM, tiles, k_tiles, 1);
    const int kt_per_split = ceil_div(k_tiles, splits);
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = make_launch_config(dim3(tiles, splits), dim3(THREADS), C::SMEM, stream,
                                                      dim3(1, splits), attr);
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<const T*>(p.A), static_cast<const T*>(p.B), p.bias, p.C,
                                  p.M, p.N, p.K, p.act, kt_per_split));
    CUDA_CHECK_LAUNCH(name);
}

// Copy width in bytes (16, 8 or 4) -> template argument.
template <class F>
void with_width(int w, F&& f) {
    if (w == 16) f(std::integral_constant<int, 16>{});
    else if (w == 8) f(std::integral_constant<int, 8>{});
    else f(std::integral_constant<int, 4>{});
}

// The rung: small tiles where 16's (13's) 128 x 256 tiles cannot fill the SMs and the operands'
// rows allow 4-byte copies; else 16's (13's) path, which also says why a GPU cannot run it. Each
// operand in the widest copies its rows allow.
template <class Op, bool... STEPS>
void launch(const GemmProblem& p, cudaStream_t stream, const char* name) {
    using T = typename Op::T;
    const int big_tiles = ceil_div(p.M, hopper::tile_rows<Op>()) * ceil_div(p.N, hopper::tile_cols<Op>());
    const int align_a = hopper::row_alignment(p.A, p.K, sizeof(T));
    const int align_b = hopper::row_alignment(p.B, p.N, sizeof(T));
    if (p.in_type != Op::in_type || !hopper::unavailable().empty() || std::min(align_a, align_b) < 4 ||
        big_tiles >= device_props().multiProcessorCount)
        return hopper::launch<Op, STEPS...>(p, stream, name);
    with_width(align_a, [&](auto a) {
        constexpr int WA = decltype(a)::value;
        with_width(align_b, [&](auto b) { run<T, WA, decltype(b)::value>(p, stream, name); });
    });
}

void launch_fp16(const GemmProblem& p, cudaStream_t s) {
    launch<hopper::Fp16, true, true, true>(p, s, "cuda.17_small_tiles_fp16");
}
void launch_bf16(const GemmProblem& p, cudaStream_t s) {
    launch<hopper::Bf16, true, true, true>(p, s, "cuda.17_small_tiles_bf16");
}
void launch_tf32(const GemmProblem& p, cudaStream_t s) { launch<hopper::Tf32Swap>(p, s, "cuda.17_small_tiles_tf32"); }

}  // namespace
}  // namespace gemmpad::cuda::small

GEMMPAD_REGISTER_CUDA_IF("cuda.17_small_tiles_fp16", "fp16", gemmpad::InType::F16,
                         "16 where its tiles fill the GPU; else 64 x 64 tiles, mma.sync, all warps load",
                         gemmpad::cuda::small::launch_fp16, gemmpad::cuda::hopper::unavailable);
GEMMPAD_REGISTER_CUDA_IF("cuda.17_small_tiles_bf16", "bf16", gemmpad::InType::BF16,
                         "16 where its tiles fill the GPU; else 64 x 64 tiles, mma.sync, all warps load",
                         gemmpad::cuda::small::launch_bf16, gemmpad::cuda::hopper::unavailable);
GEMMPAD_REGISTER_CUDA_IF("cuda.17_small_tiles_tf32", "tf32", gemmpad::InType::F32,
                         "13 where its tiles fill the GPU; else 64 x 64 tiles, mma.sync tf32, all warps load",
                         gemmpad::cuda::small::launch_tf32, gemmpad::cuda::hopper::unavailable);
