// cuda.07_warptile: warp tiling, conflict-free shared memory and double-buffered tiles: fp32 SIMT near cuBLAS.
// Change from 06: a thread's outputs are 4x4 sub-blocks spread over its warp's tile, so each shared read
// is one wavefront; A's transposed rows padded to BM + 4; tile t+1's global loads in flight while tile t
// is multiplied (one __syncthreads a tile); 128x256, 128x128 or 64x32 tiles chosen to fill the SMs;
// split-K over a cluster (sm_90) adding partial tiles through distributed shared memory, one launch.
// Limit: CUDA cores only (no tensor cores); on the MLP's shapes few blocks per tile and N = 100 filling
// 100 of 128 columns (19 takes those). Variants tried: NOTES.md.
// Run: gemmpad bench gemm --kernels cuda.07_warptile --sizes 4096x4096x4096
// Profile: ncu -k regex:warptile_kernel -c 1 gemmpad bench gemm --kernels cuda.07_warptile --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 46,302 GFLOP/s = 90.2 % of cuBLAS fp32
#include "../support/registry.cuh"
#include "epilogue.cuh"
#include "splitk.cuh"

namespace gemmpad::cuda {
namespace {

// One configuration of the kernel. Lanes sit in an 8 (down) x 4 (across)
// grid inside their warp and own 4x4 sub-blocks, so a warp covers 32x16 per
// sub-block step; kIterM x kIterN steps make the warp tile.
template <int BM_, int BN_, int BK_, int kIterM_, int kIterN_, int kMinBlocks_>
struct Config {
    static constexpr int BM = BM_, BN = BN_, BK = BK_;
    static constexpr int kIterM = kIterM_, kIterN = kIterN_;
    static constexpr int WM = 32 * kIterM, WN = 16 * kIterN;  // warp tile
    static constexpr int kWarpsN = BN / WN;
    static constexpr int kThreads = 32 * (BM / WM) * kWarpsN;
    static constexpr int kMinBlocks = kMinBlocks_;               // per SM, for __launch_bounds__
    static constexpr int kPadA = 4;  // keeps float4 alignment; moves k and k+4 16 banks apart
    static constexpr int kLoadsA = BM * BK / 4 / kThreads;     // float4 copies per thread per tile
    static constexpr int kLoadsB = BK * BN / 4 / kThreads;
    static constexpr int kSmemBytes = 2 * (BK * (BM + kPadA) + BK * BN) * (int)sizeof(float);
    static_assert(BM % WM == 0 && BN % WN == 0 && BK % 4 == 0, "tiles nest");
    static_assert(kLoadsA >= 1 && kLoadsB >= 1 && kLoadsA * 4 * kThreads == BM * BK &&
                      kLoadsB * 4 * kThreads == BK * BN, "tile copies split evenly over the threads");
    static_assert(kSmemBytes <= 48 * 1024, "static shared memory must fit the 48 KB available without opt-in");
};

// Split-K's partial tile, [BM][partial_pitch] floats in dynamic shared memory: the 4 floats of
// padding put the rows 4 apart that a quarter-warp's float4 stores reach 16 banks apart.
template <class Cfg>
constexpr int partial_pitch() { return Cfg::BN + 4; }
template <class Cfg>
constexpr int partial_bytes() { return Cfg::BM * partial_pitch<Cfg>() * (int)sizeof(float); }

// Four consecutive elements X[r][c..c+3] of a rows x cols row-major matrix, zeros outside it
// (a tile copy of A, r = row and c = k, or of B, r = k and c = column).
template <bool kVec>
__device__ __forceinline__ float4 load4(const float* __restrict__ X, int rows, int cols, int r, int c) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r >= rows) return v;
    const float* src = X + (size_t)r * cols;
    if constexpr (kVec) {
        if (c < cols) v = *reinterpret_cast<const float4*>(src + c);  // cols % 4 == 0: all 4 in or all out
    } else {
        if (c + 0 < cols) v.x = src[c + 0];
        if (c + 1 < cols) v.y = src[c + 1];
        if (c + 2 < cols) v.z = src[c + 2];
        if (c + 3 < cols) v.w = src[c + 3];
    }
    return v;
}

// C = act(A @ B + bias). kSplit: this block multiplies k-tiles [blockIdx.z * kt_per_split, +
// kt_per_split) only; the gridDim.z blocks of one tile form a cluster and add their partial
// tiles up through distributed shared memory (cluster_reduce_store): one launch, no workspace.
template <class Cfg, bool kVec, bool kSplit>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    warptile_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                    const float* __restrict__ bias, float* __restrict__ C, Act act, int kt_per_split) {
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, IM = Cfg::kIterM, IN = Cfg::kIterN;
    constexpr int kThreads = Cfg::kThreads, kLoadsA = Cfg::kLoadsA, kLoadsB = Cfg::kLoadsB;
    __shared__ __align__(16) float As[2][BK][BM + Cfg::kPadA];  // transposed: As[buf][k][m]
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int t = threadIdx.x;
    const int warp = t / 32, lane = t % 32;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // This thread's place: its warp's tile inside the block tile, its lane inside the warp tile.
    const int am = (warp / Cfg::kWarpsN) * Cfg::WM + (lane / 4) * 4;  // As columns read: am + 32*i + 0..3
    const int bn = (warp % Cfg::kWarpsN) * Cfg::WN + (lane % 4) * 4;  // Bs columns read: bn + 16*j + 0..3

    // Tile copies: copy s of this thread is float4 number t + s*kThreads of
    // the tile. They travel through registers so that A can be transposed.
    float4 av[kLoadsA], bv[kLoadsB];
    auto load_tile = [&](int k0) {
#pragma unroll
        for (int s = 0; s < kLoadsA; ++s) {
            const int i = t + s * kThreads;
            av[s] = load4<kVec>(A, M, K, row0 + i / (BK / 4), k0 + (i % (BK / 4)) * 4);
        }
#pragma unroll
        for (int s = 0; s < kLoadsB; ++s) {
            const int i = t + s * kThreads;
            bv[s] = load4<kVec>(B, K, N, k0 + i / (BN / 4), col0 + (i % (BN / 4)) * 4);
        }
    };
    auto store_tile = [&](int buf) {
#pragma unroll
        for (int s = 0; s < kLoadsA; ++s) {
            const int i = t + s * kThreads, r = i / (BK / 4), c = (i % (BK / 4)) * 4;
            As[buf][c + 0][r] = av[s].x;
            As[buf][c + 1][r] = av[s].y;
            As[buf][c + 2][r] = av[s].z;
            As[buf][c + 3][r] = av[s].w;
        }
#pragma unroll
        for (int s = 0; s < kLoadsB; ++s) {
            const int i = t + s * kThreads;
            *reinterpret_cast<float4*>(&Bs[buf][i / (BN / 4)][(i % (BN / 4)) * 4]) = bv[s];
        }
    };

    // acc[4*i + r][4*j + q] is C[row0 + am + 32*i + r][col0 + bn + 16*j + q].
    float acc[4 * IM][4 * IN] = {};
    float a_reg[4 * IM], b_reg[4 * IN];  // the A column and B row of one k
    auto load_frag = [&](int buf, int k) {
#pragma unroll
        for (int i = 0; i < IM; ++i)
            *reinterpret_cast<float4*>(&a_reg[4 * i]) = *reinterpret_cast<const float4*>(&As[buf][k][am + 32 * i]);
#pragma unroll
        for (int j = 0; j < IN; ++j)
            *reinterpret_cast<float4*>(&b_reg[4 * j]) = *reinterpret_cast<const float4*>(&Bs[buf][k][bn + 16 * j]);
    };
    auto fma_frag = [&]() {  // the outer product: (4*IM) x (4*IN) FMAs
#pragma unroll
        for (int i = 0; i < 4 * IM; ++i)
#pragma unroll
            for (int j = 0; j < 4 * IN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    };

    // k-tiles [first, tiles): all of K, or this block's slice of it (kSplit).
    const int first = kSplit ? blockIdx.z * kt_per_split : 0;
    const int tiles = kSplit ? min(ceil_div(K, BK), first + kt_per_split) : ceil_div(K, BK);
    load_tile(first * BK);
    store_tile(first & 1);
    __syncthreads();

    for (int tile = first; tile < tiles; ++tile) {
        const int cur = tile & 1;
        const bool more = tile + 1 < tiles;
        // Issue the next tile's global loads now; they land while we compute.
        if (more) load_tile((tile + 1) * BK);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            load_frag(cur, k);
            fma_frag();
        }
        // The other copy was last read in the previous iteration, which every
        // thread finished before the barrier that ended it: safe to overwrite.
        if (more) store_tile(cur ^ 1);
        __syncthreads();
    }

    if constexpr (kSplit) {
        // The partial tile into this block's shared memory, then each block of the cluster adds
        // up a share of the tile's rows from all of them (applying bias and act as it stores).
        constexpr int kPitch = partial_pitch<Cfg>();
        extern __shared__ __align__(16) float part[];  // [BM][kPitch]
#pragma unroll
        for (int i = 0; i < 4 * IM; ++i)
#pragma unroll
            for (int j = 0; j < IN; ++j)
                *reinterpret_cast<float4*>(&part[(am + 32 * (i / 4) + i % 4) * kPitch + bn + 16 * j]) =
                    make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
        cluster_reduce_store(part, BM, BN, kPitch, row0, col0, M, N, bias, act, C, t, kThreads);
    } else {
#pragma unroll
        for (int i = 0; i < 4 * IM; ++i) {
            const int row = row0 + am + 32 * (i / 4) + i % 4;
            if (row >= M) continue;
            float* c_row = C + (size_t)row * N;
#pragma unroll
            for (int j = 0; j < IN; ++j) {
                const int col = col0 + bn + 16 * j;
                const float* v = &acc[i][4 * j];
                if constexpr (kVec) {
                    if (col < N)  // N % 4 == 0: the 4 columns are all inside or all outside
                        *reinterpret_cast<float4*>(c_row + col) =
                            make_float4(epilogue(v[0], bias, col + 0, act), epilogue(v[1], bias, col + 1, act),
                                        epilogue(v[2], bias, col + 2, act), epilogue(v[3], bias, col + 3, act));
                } else {
#pragma unroll
                    for (int q = 0; q < 4; ++q)
                        if (col + q < N) c_row[col + q] = epilogue(v[q], bias, col + q, act);
                }
            }
        }
    }
}

// How many slices of K the split variant runs for p (1: no split): cluster_splits for one wave of
// Cfg::kMinBlocks blocks per SM, the occupancy the config was built for.
template <class Cfg, bool kVec>
int splits_of(const GemmProblem& p) {
    const auto kernel = warptile_kernel<Cfg, kVec, true>;
    static const bool opted_in = [&] {  // the partial tile is over the 48 KB granted without an opt-in
        if (device_props().major >= 9)
            CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, partial_bytes<Cfg>()));
        return true;
    }();
    (void)opted_in;
    return cluster_splits(reinterpret_cast<const void*>(kernel), Cfg::kThreads, partial_bytes<Cfg>(),
                          ceil_div(p.N, Cfg::BN) * ceil_div(p.M, Cfg::BM), ceil_div(p.K, Cfg::BK), Cfg::kMinBlocks);
}

// One variant of the kernel; with kMaySplit, split over K when splits_of says so.
template <class Cfg, bool kVec, bool kMaySplit>
void launch_variant(const GemmProblem& p, const float* A, const float* B, cudaStream_t stream) {
    const dim3 grid(ceil_div(p.N, Cfg::BN), ceil_div(p.M, Cfg::BM));
    const int k_tiles = ceil_div(p.K, Cfg::BK);
    if constexpr (kMaySplit) {
        const int splits = splits_of<Cfg, kVec>(p);
        if (splits > 1) {
            cudaLaunchAttribute attr[1];
            const cudaLaunchConfig_t cfg = make_launch_config(dim3(grid.x, grid.y, splits), dim3(Cfg::kThreads),
                                                              partial_bytes<Cfg>(), stream, dim3(1, 1, splits), attr);
            CUDA_CHECK(cudaLaunchKernelEx(&cfg, warptile_kernel<Cfg, kVec, true>, p.M, p.N, p.K, A, B, p.bias, p.C,
                                          p.act, ceil_div(k_tiles, splits)));
            return;
        }
    }
    warptile_kernel<Cfg, kVec, false><<<grid, Cfg::kThreads, 0, stream>>>(p.M, p.N, p.K, A, B, p.bias, p.C, p.act,
                                                                         k_tiles);
}

template <class Cfg, bool kMaySplit>
void launch_config(const GemmProblem& p, cudaStream_t stream) {
    const auto* A = static_cast<const float*>(p.A);
    const auto* B = static_cast<const float*>(p.B);
    if (float4_rows(p))
        launch_variant<Cfg, true, kMaySplit>(p, A, B, stream);
    else
        launch_variant<Cfg, false, kMaySplit>(p, A, B, stream);
    CUDA_CHECK_LAUNCH("cuda.07_warptile");
}

// Big problems: 128x256 block tile, warp tile 64x64, 8x16 outputs per thread, 256 threads, 1 block per SM.
using Large = Config<128, 256, 8, 2, 4, 1>;
// Problems with fewer 128x256 tiles than SMs: 128x128, warp tile 64x32, 8x8 per thread, 2 blocks
// per SM; K split over a cluster when even these tiles leave SMs idle.
using Small = Config<128, 128, 8, 2, 2, 2>;
// Problems too small for 128x128 tiles even split 8 ways (256x100: 16 blocks), and short-K ones
// whose 64x32 tiles fill the SMs unsplit (4096x100x100: 256 blocks, no reduction; cuBLAS runs the
// same tile there): 64x32, warp tile 32x32, 4x8 per thread, 64 threads, BK = 16 so that a tile's
// FMAs still cover a global load (the price: A's transposed store is 2-way conflicted, k and k + 8
// sharing banks).
using Tiny = Config<64, 32, 16, 1, 2, 8>;

// Calls f(Cfg{}, std::bool_constant<may split>{}) with the configuration p gets.
template <class F>
void with_config(const GemmProblem& p, F&& f) {
    const int sms = device_props().multiProcessorCount;
    const long long large_tiles = (long long)ceil_div(p.M, Large::BM) * ceil_div(p.N, Large::BN);
    const long long small_tiles = (long long)ceil_div(p.M, Small::BM) * ceil_div(p.N, Small::BN);
    const long long tiny_tiles = (long long)ceil_div(p.M, Tiny::BM) * ceil_div(p.N, Tiny::BN);
    if (large_tiles >= sms)
        f(Large{}, std::false_type{});
    else if (tiny_tiles >= sms && ceil_div(p.K, Tiny::BK) <= 8)
        f(Tiny{}, std::false_type{});
    else if (8 * small_tiles >= sms)
        f(Small{}, std::true_type{});
    else
        f(Tiny{}, std::true_type{});
}

void launch(const GemmProblem& p, cudaStream_t stream) {
    with_config(p, [&](auto cfg, auto may_split) { launch_config<decltype(cfg), decltype(may_split)::value>(p, stream); });
}

// What launch() launches for p (kernel_anatomy).
Anatomy anatomy(const GemmProblem& p) {
    Anatomy a;
    with_config(p, [&](auto cfg, auto may_split) {
        using Cfg = decltype(cfg);
        const bool vec = float4_rows(p);
        int splits = 1;
        a.kernel = vec ? reinterpret_cast<const void*>(warptile_kernel<Cfg, true, false>)
                       : reinterpret_cast<const void*>(warptile_kernel<Cfg, false, false>);
        if constexpr (decltype(may_split)::value) {
            splits = vec ? splits_of<Cfg, true>(p) : splits_of<Cfg, false>(p);
            if (splits > 1)
                a.kernel = vec ? reinterpret_cast<const void*>(warptile_kernel<Cfg, true, true>)
                               : reinterpret_cast<const void*>(warptile_kernel<Cfg, false, true>);
        }
        a.bm = Cfg::BM, a.bn = Cfg::BN, a.bk = Cfg::BK, a.wm = Cfg::WM, a.wn = Cfg::WN, a.tm = 4 * Cfg::kIterM,
        a.tn = 4 * Cfg::kIterN;
        a.block = dim3(Cfg::kThreads);
        a.grid = dim3(ceil_div(p.N, Cfg::BN), ceil_div(p.M, Cfg::BM), splits);
        a.cluster = dim3(1, 1, splits);
        a.dynamic_smem = splits > 1 ? partial_bytes<Cfg>() : 0;
        a.note = std::string(vec ? "float4 loads" : "scalar loads") +
                 (splits > 1 ? "; split-K " + std::to_string(splits) + " ways over a cluster" : "");
    });
    return a;
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.07_warptile", "fp32", gemmpad::InType::F32,
                           "warp tiling, conflict-free float4 shared reads, double buffering, split-K in a cluster",
                           gemmpad::cuda::launch, nullptr, nullptr, gemmpad::cuda::anatomy);
