// cuda.19_simt_ring: fp32 on CUDA cores, 07's warp tiles fed by a cp.async ring, for the MLP's shapes.
// Change from 07: A stays row-major in shared memory (read as float4 along k), so cp.async copies both
// operands without registers and a ring of 4 k-tiles keeps 3 in flight; operands loaded four k-steps
// ahead; 64x64 tiles of 4 warps, at every shape (cuda.auto_fp32 sends large ones to 07).
// Limit: one warp per scheduler waits on fixed latencies (~55 % of issue slots used, ncu); N = 100 fills
// 100 of 128 columns. Variants tried: NOTES.md.
// Run: gemmpad bench gemm --kernels cuda.19_simt_ring --sizes 4096x100x784
// Profile: ncu -k regex:ring_kernel -c 1 gemmpad bench gemm --kernels cuda.19_simt_ring --sizes 4096x100x784
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096x100x784 20,101 GFLOP/s = 101.6 % of cuBLAS fp32
#include <algorithm>

#include "../ptx/cp_async.cuh"
#include "../support/registry.cuh"
#include "epilogue.cuh"
#include "splitk.cuh"

namespace gemmpad::cuda::ring {
namespace {

// One configuration. Lanes sit 8 (down) x 4 (across) in their warp: the lane in row group lm and column
// group ln (ring_kernel says which lane that is) owns rows lm + 8 * r (r < 4 * IM) and columns 4 * ln +
// 16 * j + q (j < IN, q < 4) of the warp's 32 IM x 16 IN tile.
template <int BM_, int BN_, int BK_, int IM_, int IN_, int STAGES_, int MIN_BLOCKS_>
struct Config {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, IM = IM_, IN = IN_, STAGES = STAGES_;
    static constexpr int MIN_BLOCKS = MIN_BLOCKS_;  // per SM, for __launch_bounds__ and the split
    static constexpr int WM = 32 * IM, WN = 16 * IN, WARPS_N = BN / WN;
    static constexpr int THREADS = 32 * (BM / WM) * WARPS_N;
    static constexpr int A_PITCH = BK + 4;                          // floats; an odd number of float4s
    static constexpr int A_FLOATS = BM * A_PITCH, B_FLOATS = BK * BN;  // one stage
    static constexpr int PITCH = BN + 4;                            // split-K's partial tile row
    static constexpr int SMEM = (int)sizeof(float) * std::max(STAGES * (A_FLOATS + B_FLOATS), BM * PITCH);
    static constexpr int A_CHUNKS = BM * BK / 4, B_CHUNKS = BK * BN / 4;  // 16-byte copies per stage
    static constexpr int NA = (A_CHUNKS + THREADS - 1) / THREADS, NB = (B_CHUNKS + THREADS - 1) / THREADS;
    static_assert(BM % WM == 0 && BN % WN == 0 && BK % 4 == 0 && STAGES >= 2, "tiles nest");
    static_assert(A_PITCH / 4 % 2 == 1, "rows 8 apart land in different bank groups");
};

// This thread's copies of a stage, worked out once per block: source of each 16-byte chunk (advanced
// a k-tile per fill), place in the stage, and whether the chunk lies inside the matrix at all (rows
// of A past M and columns of B past N are skipped: they reach only outputs never stored). K is a
// multiple of 4, so a chunk is wholly inside K or wholly past it (zeros there, in both operands).
template <class Cfg>
struct Copies {
    const float* a[Cfg::NA];
    const float* b[Cfg::NB];
    int a_dst[Cfg::NA], b_dst[Cfg::NB], a_k[Cfg::NA], b_k[Cfg::NB];  // a_k, b_k: k offset in the tile
    bool a_in[Cfg::NA], b_in[Cfg::NB];
    size_t b_step;

    __device__ __forceinline__ Copies(const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K,
                                      int m0, int n0, int k0)
        : b_step((size_t)Cfg::BK * N) {
#pragma unroll
        for (int i = 0; i < Cfg::NA; ++i) {
            const int q = threadIdx.x + i * Cfg::THREADS, r = q / (Cfg::BK / 4), c = q % (Cfg::BK / 4) * 4;
            a_in[i] = q < Cfg::A_CHUNKS && m0 + r < M;
            a[i] = A + (size_t)min(m0 + r, M - 1) * K + k0 + c;
            a_dst[i] = r * Cfg::A_PITCH + c;
            a_k[i] = c;
        }
#pragma unroll
        for (int i = 0; i < Cfg::NB; ++i) {
            const int q = threadIdx.x + i * Cfg::THREADS, r = q / (Cfg::BN / 4), c = q % (Cfg::BN / 4) * 4;
            b_in[i] = q < Cfg::B_CHUNKS && n0 + c < N;
            b[i] = B + (size_t)(k0 + r) * N + min(n0 + c, N - 4);
            b_dst[i] = r * Cfg::BN + c;
            b_k[i] = r;
        }
    }
    // The next k-tile, which starts at k0, into the stage at sA, sB (chunks past K read nothing and
    // are given A's or B's first element as their address).
    __device__ __forceinline__ void fill(float* sA, float* sB, int k0, int K, const float* A, const float* B) {
        const bool whole = k0 + Cfg::BK <= K;
#pragma unroll
        for (int i = 0; i < Cfg::NA; ++i) {
            const bool inside = whole || k0 + a_k[i] < K;
            if (a_in[i]) cp_async_zfill<16>(smem_u32(sA + a_dst[i]), inside ? a[i] : A, inside ? 16 : 0);
            a[i] += Cfg::BK;
        }
#pragma unroll
        for (int i = 0; i < Cfg::NB; ++i) {
            const bool inside = whole || k0 + b_k[i] < K;
            if (b_in[i]) cp_async_zfill<16>(smem_u32(sB + b_dst[i]), inside ? b[i] : B, inside ? 16 : 0);
            b[i] += b_step;
        }
    }
};

__device__ __forceinline__ float part(const float4& v, int e) { return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w; }

// Four k-steps of a thread's operands: a[r] holds k4..k4 + 3 of its row r, b[e][j] k-step k4 + e of
// its column group j.
template <class Cfg>
struct Group {
    float4 a[4 * Cfg::IM], b[4][Cfg::IN];
};

// Loads k-steps k4..k4 + 3 from the stage whose rows (A) and k-row (B) of this thread start at tA, tB.
template <class Cfg>
__device__ __forceinline__ void load_group(Group<Cfg>& g, const float* tA, const float* tB, int k4) {
#pragma unroll
    for (int r = 0; r < 4 * Cfg::IM; ++r) g.a[r] = *reinterpret_cast<const float4*>(tA + 8 * r * Cfg::A_PITCH + k4);
#pragma unroll
    for (int e = 0; e < 4; ++e)
#pragma unroll
        for (int j = 0; j < Cfg::IN; ++j) g.b[e][j] = *reinterpret_cast<const float4*>(tB + (k4 + e) * Cfg::BN + 16 * j);
}

// acc += the group's four outer products.
template <class Cfg>
__device__ __forceinline__ void fma_group(float (&acc)[4 * Cfg::IM][4 * Cfg::IN], const Group<Cfg>& g) {
#pragma unroll
    for (int e = 0; e < 4; ++e)
#pragma unroll
        for (int r = 0; r < 4 * Cfg::IM; ++r) {
            const float x = part(g.a[r], e);
#pragma unroll
            for (int j = 0; j < Cfg::IN; ++j) {
                acc[r][4 * j + 0] += x * g.b[e][j].x;
                acc[r][4 * j + 1] += x * g.b[e][j].y;
                acc[r][4 * j + 2] += x * g.b[e][j].z;
                acc[r][4 * j + 3] += x * g.b[e][j].w;
            }
        }
}

// C = act(A @ B + bias) for output tile blockIdx.x over k-tiles [blockIdx.y * kt_per_split, +
// kt_per_split); with gridDim.y > 1 a tile's blocks form a cluster and add their partial tiles up
// through distributed shared memory (cluster_reduce_store, as 07).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    ring_kernel(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
                float* __restrict__ C, int M, int N, int K, Act act, int kt_per_split) {
    constexpr int BK = Cfg::BK, IM = Cfg::IM, IN = Cfg::IN, STAGES = Cfg::STAGES, GROUPS = BK / 4;
    static_assert(GROUPS % 2 == 0, "groups alternate between two buffers, a tile's first in g[0]");
    extern __shared__ __align__(16) float smem[];
    float* sA = smem;
    float* sB = smem + STAGES * Cfg::A_FLOATS;
    const int tiles_n = ceil_div(N, Cfg::BN);
    const int m0 = blockIdx.x / tiles_n * Cfg::BM, n0 = blockIdx.x % tiles_n * Cfg::BN;
    const int kt_begin = blockIdx.y * kt_per_split;
    const int n_iter = min(ceil_div(K, BK) - kt_begin, kt_per_split);
    // Lane bits 0, 2, 3 pick the row group lm, bits 1, 4 the column group ln: lanes n and n ^ 2 read
    // the same A address, n and n ^ 1 the same B address, and a warp's LDS.128 then returns its 16
    // bytes a lane in two passes instead of four (for both operands).
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int lm = (lane & 1) | (lane >> 1 & 6), ln = (lane >> 1 & 1) | (lane >> 3 & 2);
    const int wr = warp / Cfg::WARPS_N * Cfg::WM + lm;  // this thread's first row in the block tile
    const int wc = warp % Cfg::WARPS_N * Cfg::WN + 4 * ln;  // and first column

    Copies<Cfg> copies(A, B, M, N, K, m0, n0, kt_begin * BK);
    auto fill = [&](int i) {  // k-tile kt_begin + i into stage i % STAGES; called for i = 0, 1, ... in turn
        copies.fill(sA + i % STAGES * Cfg::A_FLOATS, sB + i % STAGES * Cfg::B_FLOATS, (kt_begin + i) * BK, K, A, B);
    };
    auto stage_a = [&](int i) { return sA + i % STAGES * Cfg::A_FLOATS + wr * Cfg::A_PITCH; };
    auto stage_b = [&](int i) { return sB + i % STAGES * Cfg::B_FLOATS + wc; };

    // acc[r][4 * j + q]: row wr + 8 * r, column wc + 16 * j + q.
    float acc[4 * IM][4 * IN] = {};
    // The ring, with operands loaded a group (four k-steps) ahead of the FMAs that use them, across
    // the barrier too, as 17 does: the last group of tile `it` waits for tile it + 1, refills tile
    // it's stage (every warp holds its last group by then) and loads tile it + 1's first group
    // before it multiplies.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < n_iter) fill(s);
        cp_async_commit();
    }
    Group<Cfg> g[2];
    cp_async_wait<STAGES - 2>();  // k-tile 0 has landed (this thread's copies)...
    __syncthreads();              // ...and everyone's
    if (STAGES - 1 < n_iter) fill(STAGES - 1);  // into the one stage not yet used
    cp_async_commit();
    if (n_iter > 0) load_group(g[0], stage_a(0), stage_b(0), 0);
    for (int it = 0; it < n_iter; ++it) {
#pragma unroll
        for (int q = 0; q < GROUPS; ++q) {
            if (q + 1 < GROUPS) {
                load_group(g[(q + 1) % 2], stage_a(it), stage_b(it), 4 * (q + 1));
            } else {
                cp_async_wait<STAGES - 2>();  // k-tile it + 1 has landed...
                __syncthreads();              // ...everyone's; every warp holds tile it's last group
                if (it + STAGES < n_iter) fill(it + STAGES);  // into tile it's stage
                cp_async_commit();
                if (it + 1 < n_iter) load_group(g[0], stage_a(it + 1), stage_b(it + 1), 0);
            }
            fma_group(acc, g[q % 2]);
        }
    }
    cp_async_wait<0>();

    if (gridDim.y > 1) {
        float* tile = smem;  // the partial tile, over the stages
        __syncthreads();     // every warp is done reading them
#pragma unroll
        for (int r = 0; r < 4 * IM; ++r)
#pragma unroll
            for (int j = 0; j < IN; ++j)
                *reinterpret_cast<float4*>(tile + (wr + 8 * r) * Cfg::PITCH + wc + 16 * j) =
                    make_float4(acc[r][4 * j], acc[r][4 * j + 1], acc[r][4 * j + 2], acc[r][4 * j + 3]);
        cluster_reduce_store(tile, Cfg::BM, Cfg::BN, Cfg::PITCH, m0, n0, M, N, bias, act, C, threadIdx.x,
                             Cfg::THREADS);
        return;
    }
#pragma unroll
    for (int r = 0; r < 4 * IM; ++r) {
        const int row = m0 + wr + 8 * r;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < IN; ++j) {
            const int col = n0 + wc + 16 * j;
            if (col < N)  // N % 4 == 0: the 4 columns are all inside or all outside
                *reinterpret_cast<float4*>(C + (size_t)row * N + col) =
                    make_float4(epilogue(acc[r][4 * j], bias, col, act), epilogue(acc[r][4 * j + 1], bias, col + 1, act),
                                epilogue(acc[r][4 * j + 2], bias, col + 2, act),
                                epilogue(acc[r][4 * j + 3], bias, col + 3, act));
        }
    }
}

// ring_kernel<Cfg>, its shared-memory opt-in made (once per instance).
template <class Cfg>
const void* ready_kernel() {
    constexpr auto kernel = ring_kernel<Cfg>;
    static const bool set = [] {  // one host thread drives the GPU (common.cuh)
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SMEM));
        return true;
    }();
    (void)set;
    return reinterpret_cast<const void*>(kernel);
}

// The grid for problem p: (tiles, split-K slices), the slices of a tile one cluster.
template <class Cfg>
dim3 grid_of(const GemmProblem& p) {
    const int tiles = ceil_div(p.M, Cfg::BM) * ceil_div(p.N, Cfg::BN), k_tiles = ceil_div(p.K, Cfg::BK);
    // A short K whose tiles already give half the SMs a block is not split: the reduction costs more
    // than a second block an SM gains (4096 x 100 x 100: 9.1 us whole, 10.9 split in two; NOTES.md).
    const bool short_k = k_tiles <= 8 && 2 * tiles >= device_props().multiProcessorCount;
    return dim3(tiles, short_k ? 1 : cluster_splits(ready_kernel<Cfg>(), Cfg::THREADS, Cfg::SMEM, tiles, k_tiles,
                                                      Cfg::MIN_BLOCKS));
}

template <class Cfg>
void run(const GemmProblem& p, cudaStream_t stream) {
    const dim3 grid = grid_of<Cfg>(p);
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg =
        make_launch_config(grid, dim3(Cfg::THREADS), Cfg::SMEM, stream, dim3(1, grid.y), attr);
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, ring_kernel<Cfg>, static_cast<const float*>(p.A),
                                  static_cast<const float*>(p.B), p.bias, p.C, p.M, p.N, p.K, p.act,
                                  ceil_div(ceil_div(p.K, Cfg::BK), grid.y)));
    CUDA_CHECK_LAUNCH("cuda.19_simt_ring");
}

// 64 x 64 tiles (two column tiles for N = 100), 4 warps of 32 x 32, 4 x 8 outputs a thread, 4 stages,
// two blocks an SM (so split-K halves 4096 x 100 x 784: 256 blocks).
using Tile64 = Config<64, 64, 16, 1, 2, 4, 2>;

// "" where the ring can copy both operands (KernelInfo::rejects).
std::string rejects(const GemmProblem& p) {
    if (device_props().major < 8) return "cp.async needs compute capability 8.0 or later";
    if (!float4_rows(p)) return "its 16-byte copies need K and N multiples of 4 and 16-byte aligned operands";
    return "";
}

// The rung at every shape: its small tiles (cuda.auto_fp32 sends problems whose 128 x 256 tiles
// fill the GPU to 07).
void launch(const GemmProblem& p, cudaStream_t stream) {
    if (const std::string why = rejects(p); !why.empty()) throw Unavailable("cuda.19_simt_ring", why);
    run<Tile64>(p, stream);
}

Anatomy anatomy(const GemmProblem& p) {
    using C = Tile64;
    Anatomy a;
    a.kernel = ready_kernel<C>();
    a.bm = C::BM, a.bn = C::BN, a.bk = C::BK, a.wm = C::WM, a.wn = C::WN, a.tm = 4 * C::IM, a.tn = 4 * C::IN;
    a.block = dim3(C::THREADS);
    a.grid = grid_of<C>(p);
    a.cluster = dim3(1, a.grid.y);
    a.dynamic_smem = C::SMEM;
    a.note = std::to_string(C::STAGES) + "-stage cp.async ring" +
             (a.grid.y > 1 ? "; split-K " + std::to_string(a.grid.y) + " ways over a cluster" : "");
    return a;
}

}  // namespace
}  // namespace gemmpad::cuda::ring

GEMMPAD_REGISTER_CUDA_RUNG("cuda.19_simt_ring", "fp32", gemmpad::InType::F32,
                           "07's warp tiles at 64 x 64, fed by a cp.async ring, at every shape",
                           gemmpad::cuda::ring::launch, nullptr, gemmpad::cuda::ring::rejects,
                           gemmpad::cuda::ring::anatomy);
