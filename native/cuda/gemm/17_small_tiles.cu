// cuda.17_small_tiles_fp16 / _bf16 / _tf32: the tile sized for the problem. Where 16's (13's for
// tf32) 128x256 tiles cannot fill the GPU, as at all three of the MLP's layer shapes, a light
// kernel with small tiles runs instead; elsewhere 16 (13) runs unchanged.
//
// What changed from 16: for M x 100 x K a 128x256 tile computes 256 columns to keep 100 and holds
// 197 KB of shared memory, so 4096 rows make 32 blocks on 132 SMs; split-K fills the rest and pays a
// reduction of 128-row tiles, and the producer's 4 warps issue every cp.async alone (200-byte rows
// are out of TMA's reach). Here a block tile is 32 or 64 rows x 128 columns, a warp per 16 x 32,
// mma.sync m16n8k16 (m16n8k8 for tf32) fed by ldmatrix from a 4-stage cp.async ring that every
// warp fills (16-, 8- or 4-byte chunks, as the rows allow). 64 rows where K is long and the tiles
// fill half the SMs (split in two, each block reads half of B), else 32; split-K over a cluster
// (as 10-16) only where the tiles leave SMs idle.
// Why it should be faster: at these shapes the tensor cores idle most of the time; what counts is
// how soon each SM has its operands and how few bytes it reads. 4096 x 100 x 100 needs no reduction
// at all (128 blocks of 32 rows); cuBLAS runs sm80 kernels of this kind here.
// What holds it back: every block re-reads B for its rows (at 4096 x 100 x 784, 16 MB from L2 for
// 6.6 MB of operands); tf32 moves twice the bytes; 8 stages instead of 4 bought nothing, so it is
// not bytes in flight per SM (NOTES.md). Rows aligned to 2 bytes only (odd K or N in 16 bits) take
// 16's (13's) path; mma.sync's rate is half of wgmma's, which is why large problems stay on 16.
// Measured: 4096x100x784 39,509 GFLOP/s = 106.8 % of cuBLAS bf16; 256x100x784 4,296 GFLOP/s =
// 110.4 % of cuBLAS tf32; 4096x100x784 30,783 GFLOP/s = 71.7 % of cuBLAS tf32 (H100, 2026-11-27;
// assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "wgmma.cuh"

namespace gemmpad::cuda::small {
namespace {

constexpr int BN = 128;  // block tile columns (the MLP's N = 100 in one tile)
constexpr int WN = 32;   // columns per warp: four n8 mma tiles
constexpr int ROW_BYTES = 128;  // a k-tile: 64 halves or 32 floats per row of A
constexpr int STAGES = 4;       // 8 were no faster (NOTES.md); 4 leave room for 2 blocks per SM

// A block tile of BM rows (a multiple of 16) for operand type T (__half, __nv_bfloat16, or float
// for tf32), one warp per 16 x 32 piece of it.
template <class T_, int BM_>
struct Tile {
    using T = T_;
    static constexpr bool tf32 = std::is_same_v<T, float>;
    static constexpr int BM = BM_, WARPS = BM / 16 * (BN / WN), THREADS = 32 * WARPS;
    static constexpr int BK = ROW_BYTES / (int)sizeof(T), KSTEP = tf32 ? 8 : 16;
    // Rows padded as in 09: A's by 16 bytes (ldmatrix phases on 8 bank groups), B's by 8 elements
    // (16-bit: the same for ldmatrix.trans; tf32: 32 bytes, so a fragment's 4x8 loads hit 32 banks).
    static constexpr int A_LD = BK + 16 / (int)sizeof(T), B_LD = BN + 8;
    static constexpr int A_STAGE = BM * A_LD, B_STAGE = BK * B_LD;  // elements
    static constexpr int PITCH = BN + 4;  // split-K's partial tile row, floats
    static constexpr int SMEM = std::max<int>(STAGES * (A_STAGE + B_STAGE) * sizeof(T), BM * PITCH * sizeof(float));
};

// Copies k-tile [k0, k0 + BK) of A's rows [m0, m0 + BM) and of B's columns [n0, n0 + BN) into one
// stage in W-byte cp.async chunks. Past K: zeros in both operands (the padding adds nothing). Rows
// of A past M and columns past N are left as they are: they reach only outputs never stored.
template <class C, int W, class T>
__device__ __forceinline__ void load_stage(T* sA, T* sB, const T* __restrict__ A, const T* __restrict__ B, int M,
                                           int N, int K, int m0, int n0, int k0) {
    constexpr int E = W / (int)sizeof(T), A_ROW = C::BK / E, B_ROW = BN / E;
    static_assert((C::BM * A_ROW) % C::THREADS == 0 && (C::BK * B_ROW) % C::THREADS == 0, "chunks per thread");
#pragma unroll
    for (int i = 0; i < C::BM * A_ROW / C::THREADS; ++i) {
        const int q = threadIdx.x + i * C::THREADS, r = q / A_ROW, c = (q % A_ROW) * E;
        const int gr = m0 + r, gk = k0 + c, valid = max(0, min(E, K - gk));
        if (gr < M)
            cp_async_zfill<W>(smem_u32(sA + r * C::A_LD + c), valid ? A + (size_t)gr * K + gk : A, valid * sizeof(T));
    }
#pragma unroll
    for (int i = 0; i < C::BK * B_ROW / C::THREADS; ++i) {
        const int q = threadIdx.x + i * C::THREADS, r = q / B_ROW, c = (q % B_ROW) * E;
        const int gk = k0 + r, gn = n0 + c, valid = gk < K ? min(E, N - gn) : 0;
        if (gn < N)
            cp_async_zfill<W>(smem_u32(sB + r * C::B_LD + c), valid ? B + (size_t)gk * N + gn : B, valid * sizeof(T));
    }
}

// The warp's 16 x 32 product over one k-tile in shared memory (fragments as in 09).
template <class C, class T>
__device__ __forceinline__ void warp_mma(float (&acc)[WN / 8][4], const T* tA, const T* tB, int wm, int wn, int lane) {
    const int a_row = wm + (lane & 15), a_col = (lane >> 4) * (16 / (int)sizeof(T));
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int kk = 0; kk < C::BK; kk += C::KSTEP) {
        unsigned af[4];
        ldmatrix_x4(af, tA + a_row * C::A_LD + kk + a_col);
        if constexpr (C::tf32) {
#pragma unroll
            for (int r = 0; r < 4; ++r) af[r] = to_tf32(af[r]);
#pragma unroll
            for (int j = 0; j < WN / 8; ++j) {
                const T* p = tB + (kk + t) * C::B_LD + wn + j * 8 + g;
                mma_m16n8k8_tf32(acc[j], af, to_tf32(__float_as_uint(p[0])), to_tf32(__float_as_uint(p[4 * C::B_LD])));
            }
        } else {
            const T* p = tB + (kk + (lane & 15)) * C::B_LD + wn + (lane >> 4) * 8;
#pragma unroll
            for (int j = 0; j < WN / 8; j += 2) {
                unsigned b[4];  // b0, b1 of n-tile j, then of n-tile j + 1
                ldmatrix_x4_trans(b, p + j * 8);
                mma_m16n8k16<T>(acc[j], af, b[0], b[1]);
                mma_m16n8k16<T>(acc[j + 1], af, b[2], b[3]);
            }
        }
    }
}

// C = act(A @ B + bias) for the tile of block x (tile-rows first) over k-tiles [y * kt_per_split, +
// kt_per_split). With gridDim.y > 1 the blocks of a tile are one cluster and add up their partial
// tiles through distributed shared memory (cluster_reduce_store, as 10-16 do).
template <class C, int W, class T = typename C::T>
__global__ void __launch_bounds__(C::THREADS) small_kernel(const T* __restrict__ A, const T* __restrict__ B,
                                                           const float* __restrict__ bias, float* __restrict__ out,
                                                           int M, int N, int K, Act act, int kt_per_split) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* sA = reinterpret_cast<T*>(smem_raw);
    T* sB = sA + STAGES * C::A_STAGE;
    const int tiles_m = ceil_div(M, C::BM);
    const int m0 = (blockIdx.x % tiles_m) * C::BM, n0 = (blockIdx.x / tiles_m) * BN;
    const int kt_begin = blockIdx.y * kt_per_split;
    const int n_iter = min(ceil_div(K, C::BK) - kt_begin, kt_per_split);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / (BN / WN)) * 16, wn = (warp % (BN / WN)) * WN;
    float acc[WN / 8][4] = {};

    // The ring as in 09: STAGES - 1 k-tiles in flight ahead of the one multiplied.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < n_iter)
            load_stage<C, W>(sA + s * C::A_STAGE, sB + s * C::B_STAGE, A, B, M, N, K, m0, n0, (kt_begin + s) * C::BK);
        cp_async_commit();
    }
    for (int it = 0; it < n_iter; ++it) {
        cp_async_wait<STAGES - 2>();  // k-tile `it` has landed (this thread's copies)...
        __syncthreads();              // ...and everyone's; the stage of it - 1 is free again
        const int next = it + STAGES - 1, s = next % STAGES;
        if (next < n_iter)
            load_stage<C, W>(sA + s * C::A_STAGE, sB + s * C::B_STAGE, A, B, M, N, K, m0, n0, (kt_begin + next) * C::BK);
        cp_async_commit();
        warp_mma<C>(acc, sA + (it % STAGES) * C::A_STAGE, sB + (it % STAGES) * C::B_STAGE, wm, wn, lane);
    }
    cp_async_wait<0>();

    // m16n8 accumulators: a lane holds rows g, g + 8 and columns 2t, 2t + 1 of each n-tile.
    const int g = lane >> 2, t = lane & 3;
    if (gridDim.y > 1) {
        float* part = reinterpret_cast<float*>(smem_raw);  // over the stages
        __syncthreads();                                     // every warp is done reading them
#pragma unroll
        for (int j = 0; j < WN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
                *reinterpret_cast<float2*>(part + (wm + g + 8 * h) * C::PITCH + wn + 8 * j + 2 * t) =
                    make_float2(acc[j][2 * h], acc[j][2 * h + 1]);
        cluster_arrive_release();
        cluster_wait_acquire();  // every block's partial tile is written
        cluster_reduce_store(part, C::BM, BN, C::PITCH, m0, n0, M, N, bias, act, out, threadIdx.x, C::THREADS);
        cluster_arrive_relaxed();
        cluster_wait_acquire();  // no block leaves while another still reads its tile
        return;
    }
    const bool pair_ok = N % 2 == 0;  // float2 stores need 8-byte alignment
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm + g + 8 * h;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < WN / 8; ++j) {
            const int col = n0 + wn + 8 * j + 2 * t;
            if (col >= N) continue;
            float* p = out + (size_t)row * N + col;
            const float v0 = epilogue(acc[j][2 * h], bias, col, act);
            if (col + 1 >= N) {
                p[0] = v0;
                continue;
            }
            const float v1 = epilogue(acc[j][2 * h + 1], bias, col + 1, act);
            if (pair_ok) {
                *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
            } else {
                p[0] = v0;
                p[1] = v1;
            }
        }
    }
}

template <class T, int BM, int W>
void run(const GemmProblem& p, cudaStream_t stream, const char* name) {
    using C = Tile<T, BM>;
    constexpr auto kernel = small_kernel<C, W>;
    static bool attribute_set = false;  // per instantiation; one host thread drives the GPU (common.cuh)
    if (!attribute_set) {
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
        attribute_set = true;
    }
    const int tiles = ceil_div(p.M, BM) * ceil_div(p.N, BN), k_tiles = ceil_div(p.K, C::BK);
    const int splits = cluster_splits(reinterpret_cast<const void*>(kernel), C::THREADS, C::SMEM, tiles, k_tiles, 1);
    const int kt_per_split = ceil_div(k_tiles, splits);
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = make_launch_config(dim3(tiles, splits), dim3(C::THREADS), C::SMEM, stream,
                                                      dim3(1, splits), attr);
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<const T*>(p.A), static_cast<const T*>(p.B), p.bias, p.C,
                                  p.M, p.N, p.K, p.act, kt_per_split));
    CUDA_CHECK_LAUNCH(name);
}

// Rows per block tile (measured at the MLP's shapes, NOTES.md): 64 where K is long (8 k-tiles or
// more) and 64-row tiles fill at least half the SMs, so split-K halves at most and each block
// reads half of B; else 32 (split-K only if their tiles leave SMs idle).
int block_rows(int M, int N, int K, int bk) {
    const int fill = device_props().multiProcessorCount * 15 / 16, cols = ceil_div(N, BN);
    return ceil_div(K, bk) >= 8 && 2 * ceil_div(M, 64) * cols >= fill ? 64 : 32;
}

template <class T, int W>
void run_rows(const GemmProblem& p, cudaStream_t stream, const char* name) {
    if (block_rows(p.M, p.N, p.K, ROW_BYTES / sizeof(T)) == 64) run<T, 64, W>(p, stream, name);
    else run<T, 32, W>(p, stream, name);
}

// The rung: small tiles where 16's (13's) tiles cannot fill the SMs and the operands' rows allow
// 4-byte copies; else 16's (13's) path, which also says why a GPU cannot run it.
template <class Op, bool... STEPS>
void launch(const GemmProblem& p, cudaStream_t stream, const char* name) {
    using T = typename Op::T;
    const int big_tiles = ceil_div(p.M, hopper::tile_rows<Op>()) * ceil_div(p.N, hopper::tile_cols<Op>());
    const int align = std::min(hopper::row_alignment(p.A, p.K, sizeof(T)), hopper::row_alignment(p.B, p.N, sizeof(T)));
    if (p.in_type != Op::in_type || !hopper::unavailable().empty() || align < 4 ||
        big_tiles >= device_props().multiProcessorCount)
        return hopper::launch<Op, STEPS...>(p, stream, name);
    if (align == 16) run_rows<T, 16>(p, stream, name);
    else if (align == 8) run_rows<T, 8>(p, stream, name);
    else run_rows<T, 4>(p, stream, name);
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
                         "16 where its tiles fill the GPU; else 32-64 x 128 tiles, mma.sync, all warps load",
                         gemmpad::cuda::small::launch_fp16, gemmpad::cuda::hopper::unavailable);
GEMMPAD_REGISTER_CUDA_IF("cuda.17_small_tiles_bf16", "bf16", gemmpad::InType::BF16,
                         "16 where its tiles fill the GPU; else 32-64 x 128 tiles, mma.sync, all warps load",
                         gemmpad::cuda::small::launch_bf16, gemmpad::cuda::hopper::unavailable);
GEMMPAD_REGISTER_CUDA_IF("cuda.17_small_tiles_tf32", "tf32", gemmpad::InType::F32,
                         "13 where its tiles fill the GPU; else 32-64 x 128 tiles, mma.sync tf32, all warps load",
                         gemmpad::cuda::small::launch_tf32, gemmpad::cuda::hopper::unavailable);
