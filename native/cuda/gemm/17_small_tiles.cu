// cuda.17_small_tiles_fp16 / _bf16 / _tf32: the tile sized for the problem (the MLP's layer shapes).
// Change from 16: 64x64 block tiles of mma.sync fed by a cp.async ring every warp fills, in the widest
// chunks the rows allow, each thread's copies worked out once per block; fragments loaded a k-step
// ahead; tf32 computes the tile transposed so each fragment is one 8-byte load; split-K over a cluster.
// Limit: tf32 only a few % past cuBLAS here; 16-bit B rows of 200 bytes in 8-byte chunks; small tiles at
// large shapes (cuda.auto_* route those to 16/13); unavailable for 2-byte-aligned rows. Variants: NOTES.md.
// Run: gemmpad bench gemm --kernels cuda.17_small_tiles_fp16 --sizes 4096x100x784
// Profile: ncu -k regex:small_kernel -c 1 gemmpad bench gemm --kernels cuda.17_small_tiles_fp16 --sizes 4096x100x784
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096x100x784 GFLOP/s (% of cuBLAS at each precision): bf16 50,239 (142.4 %), fp16 48,597 (114.8 %), tf32 43,255 (98.9 %)
#include <algorithm>
#include <type_traits>

#include "../ptx/mma.cuh"
#include "wgmma.cuh"

namespace gemmpad::cuda::small {
namespace {

constexpr int BM = 64, BN = 64;  // block tile: 2 column tiles for the MLP's N = 100
constexpr int WN = 32;           // a warp's columns: four n8 mma tiles
constexpr int ROW_BYTES = 128;   // a k-tile: 64 halves or 32 floats per row of A

// The block tile's layout for operand type T_ (__half, __nv_bfloat16, or float for tf32), A copied
// in WA_-byte cp.async chunks (16, 8 or 4: the widest its rows allow), B in WB_-byte ones; ALONE_:
// the grid fits on the SMs at one block each.
template <class T_, int WA_, int WB_, bool ALONE_>
struct Tile {
    using T = T_;
    static constexpr bool tf32 = std::is_same_v<T, float>;
    static constexpr int WA = WA_, WB = WB_;
    static constexpr int BK = ROW_BYTES / (int)sizeof(T), KSTEP = tf32 ? 8 : 16;
    // Warps of WM x 32 over a ring of STAGES k-tiles. 16-bit: 8 warps of 16 rows, 4 stages (4 warps
    // of 32 rows and 6 or 8 stages were no faster, NOTES.md). tf32: 4 warps of 32 rows as cuBLAS's
    // tf32 kernel at these shapes; 8 stages where a block has its SM to itself, else 6 (113 KB), so
    // that two blocks share an SM (8192 rows: 8 stages there were 13 % slower).
    static constexpr int WM = tf32 ? 32 : 16, STAGES = !tf32 ? 4 : ALONE_ ? 8 : 6;
    static constexpr int THREADS = 32 * (BM / WM) * (BN / WN);
    static constexpr int ACC = WM / 16 * (WN / 8);  // m16n8 accumulator tiles per warp
    static_assert(tf32 || WM == 16, "16-bit fragments: one ldmatrix of A's 16 rows per k-step");
    // Rows padded so that no fragment load meets a bank twice. 16-bit as in 09: A's by 16 bytes and
    // B's by 8 elements (ldmatrix phases on 8 bank groups). tf32 (8-byte loads, 16 lanes a phase):
    // A's by 32 bytes (4 rows 8 banks apart), B's by 4 floats (rows 2t 8 banks apart).
    static constexpr int A_PITCH = ROW_BYTES + (tf32 ? 32 : 16), B_PITCH = (BN + (tf32 ? 4 : 8)) * (int)sizeof(T);
    static constexpr int A_BYTES = BM * A_PITCH, B_BYTES = BK * B_PITCH;  // a stage
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
        static_assert(BM * ROW % C::THREADS == 0, "A's chunks split evenly over the threads");
#pragma unroll
        for (int i = 0; i < BM * ROW / C::THREADS; ++i) {
            const int q = threadIdx.x + i * C::THREADS, r = q / ROW, c = (q % ROW) * E;
            const int gr = m0 + r, gk = k0 + c, valid = max(0, min(E, K - gk));
            if (gr < M)
                cp_async_zfill<C::WA>(smem_u32(sA + r * C::A_PITCH + c * (int)sizeof(T)),
                                      valid ? A + (size_t)gr * K + gk : A, valid * sizeof(T));
        }
    }
    {
        constexpr int E = C::WB / (int)sizeof(T), ROW = BN / E;
        static_assert(C::BK * ROW % C::THREADS == 0, "B's chunks split evenly over the threads");
#pragma unroll
        for (int i = 0; i < C::BK * ROW / C::THREADS; ++i) {
            const int q = threadIdx.x + i * C::THREADS, r = q / ROW, c = (q % ROW) * E;
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
    static constexpr int NA = BM * (C::BK / EA) / C::THREADS, NB = C::BK * (BN / EB) / C::THREADS;
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
            const int q = threadIdx.x + i * C::THREADS, r = q / (C::BK / EA), c = (q % (C::BK / EA)) * EA;
            a[i] = A + (size_t)min(m0 + r, M - 1) * K + k0 + c;
            a_dst[i] = r * C::A_PITCH + c * (int)sizeof(T);
            a_bytes[i] = m0 + r < M ? C::WA : 0;
        }
#pragma unroll
        for (int i = 0; i < NB; ++i) {
            const int q = threadIdx.x + i * C::THREADS, r = q / (BN / EB), c = (q % (BN / EB)) * EB;
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

// One k-step's fragments of the warp's WM x 32 product. 16-bit as in 09: A's by ldmatrix, and b0, b1
// per n-tile by ldmatrix.trans.
template <class C, bool TF32 = C::tf32>
struct Frag {
    unsigned a[4], b[WN / 8][2];
};
// tf32 has no transposing ldmatrix, so the mma computes the tile transposed, D^T = B^T A^T, with
// its rows and k renumbered to make every fragment one 8-byte load from the row-major tiles: mma
// row g of each 16 is column 2g of C, row g + 8 column 2g + 1; mma k t is k 2t, k t + 4 is 2t + 1.
// bt: the 16 x 8 "A" fragments from B (two per 32 columns), at: the 8 x 8 "B" ones from A's rows.
template <class C>
struct Frag<C, true> {
    unsigned bt[WN / 16][4], at[C::WM / 8][2];
};

// Loads k-step kk of the stage at tA, tB into f.
template <class C>
__device__ __forceinline__ void load_frag(Frag<C>& f, const unsigned char* tA, const unsigned char* tB, int kk, int wm,
                                          int wn, int lane) {
    using T = typename C::T;
    const int g = lane >> 2, t = lane & 3;
    if constexpr (C::tf32) {
#pragma unroll
        for (int j = 0; j < WN / 16; ++j) {
            const float* p = reinterpret_cast<const float*>(tB + (kk + 2 * t) * C::B_PITCH) + wn + j * 16 + 2 * g;
            const float2 lo = *reinterpret_cast<const float2*>(p);
            const float2 hi = *reinterpret_cast<const float2*>(p + C::B_PITCH / sizeof(float));
            f.bt[j][0] = __float_as_uint(lo.x), f.bt[j][1] = __float_as_uint(lo.y);
            f.bt[j][2] = __float_as_uint(hi.x), f.bt[j][3] = __float_as_uint(hi.y);
        }
#pragma unroll
        for (int i = 0; i < C::WM / 8; ++i) {
            const float2 v = *reinterpret_cast<const float2*>(tA + (wm + i * 8 + g) * C::A_PITCH + (kk + 2 * t) * 4);
            f.at[i][0] = __float_as_uint(v.x), f.at[i][1] = __float_as_uint(v.y);
        }
    } else {
        constexpr int E = (int)sizeof(T);
        ldmatrix_x4(f.a, tA + (wm + (lane & 15)) * C::A_PITCH + (kk + (lane >> 4) * 8) * E);
#pragma unroll
        for (int j = 0; j < WN / 8; j += 2) {
            unsigned b[4];  // b0, b1 of n-tile j, then of n-tile j + 1
            ldmatrix_x4_trans(b, tB + (kk + (lane & 15)) * C::B_PITCH + (wn + (lane >> 4) * 8 + j * 8) * E);
            f.b[j][0] = b[0], f.b[j][1] = b[1], f.b[j + 1][0] = b[2], f.b[j + 1][1] = b[3];
        }
    }
}

// acc += the k-step in f; tf32's acc[WM / 8 * j + i] holds the transposed n16 x m8 tile (j, i).
template <class C>
__device__ __forceinline__ void mma_frag(float (&acc)[C::ACC][4], const Frag<C>& f) {
    if constexpr (C::tf32) {
#pragma unroll
        for (int j = 0; j < WN / 16; ++j)
#pragma unroll
            for (int i = 0; i < C::WM / 8; ++i)
                mma_m16n8k8_tf32(acc[C::WM / 8 * j + i], f.bt[j], f.at[i][0], f.at[i][1]);
    } else {
#pragma unroll
        for (int j = 0; j < WN / 8; ++j) mma_m16n8k16<typename C::T>(acc[j], f.a, f.b[j][0], f.b[j][1]);
    }
}

// C = act(A @ B + bias) for the tile of block x over k-tiles [y * kt_per_split, +kt_per_split).
// Tiles go a row of tiles at a time, so that the blocks reading the same rows of A run side by side.
// With gridDim.y > 1 the blocks of a tile are one cluster and add up their partial tiles through
// distributed shared memory (cluster_reduce_store, as 10-16 do).
template <class C, class T = typename C::T>
__global__ void __launch_bounds__(C::THREADS)
    small_kernel(const T* __restrict__ A, const T* __restrict__ B, const float* __restrict__ bias,
                 float* __restrict__ out, int M, int N, int K, Act act, int kt_per_split) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* sA = smem_raw;
    unsigned char* sB = sA + C::STAGES * C::A_BYTES;
    const int tiles_n = ceil_div(N, BN);
    const int m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
    const int kt_begin = blockIdx.y * kt_per_split;
    const int n_iter = min(ceil_div(K, C::BK) - kt_begin, kt_per_split);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / (BN / WN)) * C::WM, wn = (warp % (BN / WN)) * WN;
    float acc[C::ACC][4] = {};
    Copies<C> copies(A, B, M, N, K, m0, n0, kt_begin * C::BK);
    auto fill = [&](int i) {  // k-tile kt_begin + i into stage i % STAGES; called for i = 0, 1, ... in turn
        unsigned char *a = sA + (i % C::STAGES) * C::A_BYTES, *b = sB + (i % C::STAGES) * C::B_BYTES;
        const int k0 = (kt_begin + i) * C::BK;
        if (Copies<C>::kept && k0 + C::BK <= K) copies.fill(smem_u32(a), smem_u32(b));
        else load_stage<C>(a, b, A, B, M, N, K, m0, n0, k0);  // the last k-tile of K, zeros past it
    };

    // The ring: STAGES k-tiles in flight. Fragments go a k-step ahead of the mma that uses them,
    // across the barrier too: the last k-step of tile `it` waits for tile it + 1, refills tile it's
    // stage (its fragments are all in registers by then) and loads tile it + 1's first step before
    // it multiplies (CUTLASS's order), so no warp waits on shared memory at the top of a tile.
    constexpr int STEPS = C::BK / C::KSTEP;
    static_assert(STEPS % 2 == 0, "fragments alternate between two buffers, a tile's first step in f[0]");
    auto stage_a = [&](int i) { return sA + (i % C::STAGES) * C::A_BYTES; };
    auto stage_b = [&](int i) { return sB + (i % C::STAGES) * C::B_BYTES; };
#pragma unroll
    for (int s = 0; s < C::STAGES - 1; ++s) {
        if (s < n_iter) fill(s);
        cp_async_commit();
    }
    Frag<C> f[2];
    cp_async_wait<C::STAGES - 2>();  // k-tile 0 has landed (this thread's copies)...
    __syncthreads();                 // ...and everyone's
    if (C::STAGES - 1 < n_iter) fill(C::STAGES - 1);  // into the one stage not yet used
    cp_async_commit();
    if (n_iter > 0) load_frag<C>(f[0], stage_a(0), stage_b(0), 0, wm, wn, lane);
    for (int it = 0; it < n_iter; ++it) {
#pragma unroll
        for (int s = 0; s < STEPS; ++s) {
            if (s + 1 < STEPS) {
                load_frag<C>(f[(s + 1) % 2], stage_a(it), stage_b(it), (s + 1) * C::KSTEP, wm, wn, lane);
            } else {
                cp_async_wait<C::STAGES - 2>();  // k-tile it + 1 has landed...
                __syncthreads();                 // ...everyone's; every warp holds tile it's last fragments
                if (it + C::STAGES < n_iter) fill(it + C::STAGES);  // into tile it's stage
                cp_async_commit();
                if (it + 1 < n_iter) load_frag<C>(f[0], stage_a(it + 1), stage_b(it + 1), 0, wm, wn, lane);
            }
            mma_frag<C>(acc, f[s % 2]);
        }
    }
    cp_async_wait<0>();

    // Where accumulator j's pair h goes: the block tile's row r and columns c, c + 1, from acc[j][e0]
    // and acc[j][e1]. 16-bit as m16n8: rows g, g + 8, columns 2t, 2t + 1 of n-tile j; tf32 (transposed,
    // renumbered): rows 2t, 2t + 1 of m8-tile j % MT, columns 2g, 2g + 1 of n16-tile j / MT.
    struct Pair {
        int r, c, e0, e1;
    };
    const int g = lane >> 2, t = lane & 3;
    auto pair = [&](int j, int h) {
        constexpr int MT = C::WM / 8;  // tf32: m8 tiles per warp
        if constexpr (C::tf32) return Pair{wm + j % MT * 8 + 2 * t + h, wn + j / MT * 16 + 2 * g, h, 2 + h};
        else return Pair{wm + g + 8 * h, wn + 8 * j + 2 * t, 2 * h, 2 * h + 1};
    };
    if (gridDim.y > 1) {
        float* part = reinterpret_cast<float*>(sA);  // over the stages
        __syncthreads();                              // every warp is done reading them
#pragma unroll
        for (int j = 0; j < C::ACC; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const Pair q = pair(j, h);
                *reinterpret_cast<float2*>(part + q.r * C::PITCH + q.c) = make_float2(acc[j][q.e0], acc[j][q.e1]);
            }
        cluster_reduce_store(part, BM, BN, C::PITCH, m0, n0, M, N, bias, act, out, threadIdx.x, C::THREADS);
        return;
    }
    if (N % 2) {  // odd N: pairs not 8-byte aligned, stored one float at a time
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int j = 0; j < C::ACC; ++j) {
                const Pair q = pair(j, h);
                if (m0 + q.r < M && n0 + q.c < N)
                    store_pair(out + (size_t)(m0 + q.r) * N, n0 + q.c, N, acc[j][q.e0], acc[j][q.e1], bias, act);
            }
        return;
    }
    // Even N: straight-line code. A warp runs this once, from an instruction cache that has not
    // seen it, and every branch costs a fetch from L2 (ncu, tf32 at 4096x100x784: a fifth of the
    // warps' time went to the per-store branches and 64-bit address arithmetic this replaces). So
    // no branch per store: the bias of this lane's columns is loaded up front (-0.0 without bias:
    // adding it changes nothing, not even a zero's sign), the activation is a max with `lo` that
    // lets NaN through (as relu()), and addresses step from one pointer by multiples of N.
    float bv[C::ACC][2];
#pragma unroll
    for (int j = 0; j < C::ACC; ++j) {
        const int c = min(n0 + pair(j, 0).c, N - 2);  // a column of C (its pair's value goes unstored past N)
        bv[j][0] = bias ? bias[c] : -0.0f;
        bv[j][1] = bias ? bias[c + 1] : -0.0f;
    }
    const float lo = act == Act::Relu ? 0.0f : -INFINITY;
    const auto value = [lo](float v) {
        float r;
        asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(v), "f"(lo));  // v past -inf as it is, NaN as NaN
        return r;
    };
    const Pair q0 = pair(0, 0);
    float* const p0 = out + (size_t)(m0 + q0.r) * N + n0 + q0.c;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int j = 0; j < C::ACC; ++j) {
            const Pair q = pair(j, h);
            const float2 v = make_float2(value(acc[j][q.e0] + bv[j][0]), value(acc[j][q.e1] + bv[j][1]));
            if (m0 + q.r < M && n0 + q.c < N)
                *reinterpret_cast<float2*>(p0 + (q.r - q0.r) * N + (q.c - q0.c)) = v;
        }
}

// small_kernel<C>, its shared-memory opt-in made (once per instance).
template <class C>
const void* ready_kernel() {
    constexpr auto kernel = small_kernel<C>;
    static const bool set = [] {  // one host thread drives the GPU (common.cuh)
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
        return true;
    }();
    (void)set;
    return reinterpret_cast<const void*>(kernel);
}

// The grid for problem p: (tiles, split-K slices), the slices of a tile one cluster.
template <class C>
dim3 grid_of(const GemmProblem& p) {
    const int tiles = ceil_div(p.M, BM) * ceil_div(p.N, BN), k_tiles = ceil_div(p.K, C::BK);
    return dim3(tiles, cluster_splits(ready_kernel<C>(), C::THREADS, C::SMEM, tiles, k_tiles, 1));
}

template <class C, class T = typename C::T>
void run(const GemmProblem& p, cudaStream_t stream, const char* name) {
    const dim3 grid = grid_of<C>(p);
    const int kt_per_split = ceil_div(ceil_div(p.K, C::BK), grid.y);
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg =
        make_launch_config(grid, dim3(C::THREADS), C::SMEM, stream, dim3(1, grid.y), attr);
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, small_kernel<C>, static_cast<const T*>(p.A), static_cast<const T*>(p.B),
                                  p.bias, p.C, p.M, p.N, p.K, p.act, kt_per_split));
    CUDA_CHECK_LAUNCH(name);
}

// Copy width in bytes (16, 8 or 4) -> template argument.
template <class F>
void with_width(int w, F&& f) {
    if (w == 16) f(std::integral_constant<int, 16>{});
    else if (w == 8) f(std::integral_constant<int, 8>{});
    else f(std::integral_constant<int, 4>{});
}

// "" where the operands' rows allow cp.async's 4-byte copies at least (KernelInfo::rejects).
template <class Op>
std::string rejects(const GemmProblem& p) {
    using T = typename Op::T;
    if (std::min(hopper::row_alignment(p.A, p.K, sizeof(T)), hopper::row_alignment(p.B, p.N, sizeof(T))) < 4)
        return "cp.async needs operand rows 4-byte aligned (K and N even for 16-bit operands)";
    return "";
}

// Calls f(C{}) with the tile the rung runs for p: each operand in the widest copies its rows
// allow; tf32 with 8 stages where the tiles fit on the SMs at one block each.
template <class Op, class F>
void with_tile(const GemmProblem& p, F&& f) {
    using T = typename Op::T;
    const bool alone = ceil_div(p.M, BM) * ceil_div(p.N, BN) <= device_props().multiProcessorCount;
    with_width(hopper::row_alignment(p.A, p.K, sizeof(T)), [&](auto a) {
        with_width(hopper::row_alignment(p.B, p.N, sizeof(T)), [&](auto b) {
            constexpr int WA = decltype(a)::value, WB = decltype(b)::value;
            if constexpr (std::is_same_v<T, float>) {
                if (alone) return f(Tile<T, WA, WB, true>{});
            }
            f(Tile<T, WA, WB, false>{});
        });
    });
}

// The rung at every shape: small tiles, split-K over a cluster where they cannot fill the SMs.
template <class Op>
void launch(const GemmProblem& p, cudaStream_t stream, const char* name) {
    if (p.in_type != Op::in_type) throw std::invalid_argument(std::string(name) + " expects " + Op::type_name + " operands");
    std::string why = hopper::unavailable();
    if (why.empty()) why = rejects<Op>(p);
    if (!why.empty()) throw Unavailable(name, why);
    with_tile<Op>(p, [&](auto c) { run<decltype(c)>(p, stream, name); });
}

template <class Op>
Anatomy anatomy(const GemmProblem& p) {
    Anatomy a;
    with_tile<Op>(p, [&](auto c) {
        using C = decltype(c);
        a.kernel = ready_kernel<C>();
        a.bm = BM, a.bn = BN, a.bk = C::BK, a.wm = C::WM, a.wn = WN;
        a.block = dim3(C::THREADS);
        a.grid = grid_of<C>(p);
        a.cluster = dim3(1, a.grid.y);
        a.dynamic_smem = C::SMEM;
        a.note = std::to_string(C::STAGES) + " stages; A in " + std::to_string(C::WA) + "-byte, B in " +
                 std::to_string(C::WB) + "-byte cp.async copies" +
                 (a.grid.y > 1 ? "; split-K " + std::to_string(a.grid.y) + " ways over a cluster" : "");
    });
    return a;
}

void launch_fp16(const GemmProblem& p, cudaStream_t s) { launch<hopper::Fp16>(p, s, "cuda.17_small_tiles_fp16"); }
void launch_bf16(const GemmProblem& p, cudaStream_t s) { launch<hopper::Bf16>(p, s, "cuda.17_small_tiles_bf16"); }
void launch_tf32(const GemmProblem& p, cudaStream_t s) { launch<hopper::Tf32Swap>(p, s, "cuda.17_small_tiles_tf32"); }

}  // namespace
}  // namespace gemmpad::cuda::small

GEMMPAD_REGISTER_CUDA_RUNG("cuda.17_small_tiles_fp16", "fp16", gemmpad::InType::F16,
                           "64 x 64 tiles at every shape, mma.sync fed by a cp.async ring all warps fill",
                           gemmpad::cuda::small::launch_fp16, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::small::rejects<gemmpad::cuda::hopper::Fp16>,
                           gemmpad::cuda::small::anatomy<gemmpad::cuda::hopper::Fp16>);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.17_small_tiles_bf16", "bf16", gemmpad::InType::BF16,
                           "64 x 64 tiles at every shape, mma.sync fed by a cp.async ring all warps fill",
                           gemmpad::cuda::small::launch_bf16, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::small::rejects<gemmpad::cuda::hopper::Bf16>,
                           gemmpad::cuda::small::anatomy<gemmpad::cuda::hopper::Bf16>);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.17_small_tiles_tf32", "tf32", gemmpad::InType::F32,
                           "64 x 64 tiles at every shape, mma.sync tf32 fed by a cp.async ring all warps fill",
                           gemmpad::cuda::small::launch_tf32, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::small::rejects<gemmpad::cuda::hopper::Tf32Swap>,
                           gemmpad::cuda::small::anatomy<gemmpad::cuda::hopper::Tf32Swap>);
