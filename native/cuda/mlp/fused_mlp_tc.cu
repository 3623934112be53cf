// cuda.mlp_fused / _tf32 / _3xtf32, row-block design (from 961 rows on the H200): one block per 16-
// or 32-row tile runs all three layers on tensor cores, no hand-off between blocks.
// Change from a split-K WMMA kernel: no split of K, so layers 2-3 follow layer 1 from shared memory (no
// global scratch, fence or counter); mma.sync.m16n8k8 with B fragments streamed from L2 in fragment
// order, 14 k-steps in flight; x by cp.async (a TMA box per chunk on sm_90, 8-bit x too); 3xTF32 for fp32 accuracy.
// Limit: W1's 351 KB per block at 16-byte loads; 3xTF32 issues three products where tf32 issues one.
// Run: gemmpad bench mlp --kernels cuda.mlp_fused --batches 4096
// Profile: ncu -k regex:rows_kernel gemmpad bench mlp --kernels cuda.mlp_fused --batches 4096
// Figure (H200 2026-12-01, assets/benchmarks/h200/bench-mlp.json): batch 4096, kernel / end to end: cuda.mlp_fused 23.8 / 365.5 us, torch CUDA graph 46.5 / 1434.1 us
#include "fused_common.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int kXs = kIn + 4;                           // x tile row stride: 788 = 20 (mod 32)
constexpr int kHs = kHiddenPad + 4;                    // h1 / h2 row stride: 116 = 20 (mod 32)
constexpr int kChunkK = 112, kChunks = kIn / kChunkK;  // 7 chunks of 14 k-steps
constexpr int kRing = kChunkK / 8;                     // 14: B fragments in flight per warp
static_assert(kChunks * kChunkK == kIn && kRing == kKSteps2, "the ring also holds W2's 14 k-steps");

constexpr int kXt = kChunkK + 4;  // TMA x tile: per chunk [BM][116] (= 20 mod 32 banks), 4 columns of overlap

template <int BM, int kWarps, bool kTma = false, bool kU8 = false>
constexpr size_t smem_floats() {
    return (kTma ? (size_t)kChunks * BM * kXt + 32 : (size_t)BM * kXs) + (size_t)kWarps * BM * kOutPad +  // +32: alignment
           (kU8 ? (size_t)BM * kIn / 4 : 0);  // the bytes TMA lands, [7][BM][112]
}

// Wait until at most `pending` (0-6) cp.async groups are still in flight (an immediate operand, hence the switch).
__device__ __forceinline__ void cp_async_wait_dyn(int pending) {
    switch (pending) {
        case 0: cp_async_wait<0>(); break;
        case 1: cp_async_wait<1>(); break;
        case 2: cp_async_wait<2>(); break;
        case 3: cp_async_wait<3>(); break;
        case 4: cp_async_wait<4>(); break;
        case 5: cp_async_wait<5>(); break;
        default: cp_async_wait<6>(); break;
    }
}

// dst[row][16p + col] = relu(hi + lo + bias) for this warp's accumulators (C fragment layout),
// NaN as quiet_nan: the next layer's tf32_round must not turn it into -0. `hout` (the caller's
// [batch][100] array, or nullptr): the same values for rows < `rows` and columns < 100, at row
// row0 + row (c is even and so is 100: c < 100 covers c + 1 too).
template <int kMt>
__device__ __forceinline__ void store_relu(const float (&hi)[kMt][2][4], const float (&lo)[kMt][2][4],
                                           const float* __restrict__ bias, float* dst, int ld, int pair, int m0,
                                           float* hout, int row0, int rows) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int n = 0; n < 2; ++n) {
        const int c = 16 * pair + 8 * n + 2 * t;
        const float b0 = __ldg(bias + c), b1 = __ldg(bias + c + 1);
#pragma unroll
        for (int m = 0; m < kMt; ++m) {
            const int r = 16 * (m0 + m) + g;
            float* d = dst + r * ld + c;
            d[0] = quiet_nan(relu(hi[m][n][0] + lo[m][n][0] + b0));
            d[1] = quiet_nan(relu(hi[m][n][1] + lo[m][n][1] + b1));
            d[8 * ld] = quiet_nan(relu(hi[m][n][2] + lo[m][n][2] + b0));
            d[8 * ld + 1] = quiet_nan(relu(hi[m][n][3] + lo[m][n][3] + b1));
            if (hout && c < kHidden) {
                if (r < rows) {
                    hout[(size_t)(row0 + r) * kHidden + c] = d[0];
                    hout[(size_t)(row0 + r) * kHidden + c + 1] = d[1];
                }
                if (r + 8 < rows) {
                    hout[(size_t)(row0 + r + 8) * kHidden + c] = d[8 * ld];
                    hout[(size_t)(row0 + r + 8) * kHidden + c + 1] = d[8 * ld + 1];
                }
            }
        }
    }
}

// Warp w owns column pair w for all BM rows, and block b starts at K chunk b % 7 (spreads W1's
// L2 reads); 14 warps splitting the rows, and every block starting at chunk 0, measured slower
// (NOTES.md).
// kTma (sm_90): the x tile comes by TMA, one box of BM rows x 116 columns per chunk (tensor map
// `xmap` over x [batch, 784]; rows past the batch and columns past 784 arrive as zeros).
// kHid: a build that also stores the hidden layers (FusedHidden); separate because the stores
// alone took the tf32 16-row cp.async tile from 92 to 98 registers, 3 blocks per SM to 2.
// kU8 (with kTma; FusedPlan::x_u8): `xmap` is over 8-bit pixels [batch, 784]; each chunk lands as
// BM x 112 bytes and is made floats (pixel_floats) in the tile before the warps read it, instead of
// a conversion kernel writing 4 bytes per pixel to global memory that this kernel reads back.
template <int BM, Engine E, bool kTma, bool kHid, bool kU8 = false>
__global__ void __launch_bounds__(kPairs * 32)
    rows_kernel(FusedWeights w, const float* __restrict__ x, float* __restrict__ out, int batch,
                const __grid_constant__ CUtensorMap xmap, FusedHidden hid) {
    constexpr int kWarps = kPairs, kThreads = kWarps * 32;
    constexpr int kMt = BM / 16;  // m-tiles per warp
    static_assert(kMt >= 1 && kMt * 16 == BM, "whole m-tiles per warp");
    extern __shared__ __align__(16) float smem_raw[];
    // TMA boxes land on 128-byte boundaries
    float* smem = kTma ? reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(smem_raw) + 127) & ~uintptr_t(127)) : smem_raw;
    float* xs = smem;                  // [BM][788] (TMA: [7][BM][116]); after layer 1: h1 [BM][116], h2 [BM][116]
    float* h1s = smem;
    float* h2s = smem + BM * kHs;
    float* red = smem + (kTma ? kChunks * BM * kXt : BM * kXs);  // [warps][BM][16]: layer-3 partial logits
    uint8_t* x8s = reinterpret_cast<uint8_t*>(red + kWarps * BM * kOutPad);  // kU8: [7][BM][112] (128-byte aligned)
    static_assert(!kU8 || kTma, "8-bit x comes by TMA only");
    __shared__ __align__(8) uint64_t xbar[kChunks];             // TMA: one per chunk
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, t = lane % 4;
    const int pair = warp % kPairs, m0 = (warp / kPairs) * kMt;
    const int row0 = blockIdx.x * BM, rows = min(BM, batch - row0);
    const int rot = blockIdx.x % kChunks;  // K chunk order: rot, rot + 1, ... (mod 7)

    // ---- x tile: 7 chunks of 112 columns, all requested now in this block's order (rows past the batch read as 0)
    if constexpr (kTma) {
        if (tid == 0) {
            for (int c = 0; c < kChunks; ++c) mbar_init(&xbar[c], 1);
            mbar_init_fence();
            for (int c = 0; c < kChunks; ++c) {
                const int cc = (c + rot) % kChunks;
                if constexpr (kU8) {
                    mbar_expect_tx(&xbar[cc], BM * kChunkK);
                    tma_load_2d(x8s + cc * BM * kChunkK, &xmap, cc * kChunkK, row0, &xbar[cc]);
                } else {
                    mbar_expect_tx(&xbar[cc], BM * kXt * sizeof(float));
                    tma_load_2d(xs + cc * BM * kXt, &xmap, cc * kChunkK, row0, &xbar[cc]);
                }
            }
        }
        __syncthreads();  // the barriers are initialised before anyone waits on them
    } else {
        for (int c = 0; c < kChunks; ++c) {
            const int cc = (c + rot) % kChunks;
            for (int i = tid; i < BM * (kChunkK / 4); i += kThreads) {
                const int r = i / (kChunkK / 4), q = i % (kChunkK / 4);
                const bool valid = r < rows;
                cp_async16(xs + r * kXs + cc * kChunkK + 4 * q,
                           x + (size_t)(row0 + (valid ? r : 0)) * kIn + cc * kChunkK + 4 * q, valid ? 16 : 0);
            }
            cp_async_commit();
        }
    }
    // ---- B fragments: this warp's column pair, one chunk (14 k-steps) ahead
    const float4* w1src = reinterpret_cast<const float4*>(w.w1f) + (size_t)pair * kKSteps1 * 32 + lane;
    const float4* w2src = reinterpret_cast<const float4*>(w.w2f) + (size_t)pair * kKSteps2 * 32 + lane;
    float4 ring[kRing];
#pragma unroll
    for (int i = 0; i < kRing; ++i) ring[i] = __ldg(w1src + (size_t)(rot * kRing + i) * 32);

    // ---- layer 1. The tensor core's fp32 accumulation keeps fewer bits than an
    // FMA: hi/lo restart from zero every chunk (14 k-steps) and are promoted into
    // `tot` with ordinary fp32 adds, so no accumulator carries all 784 terms.
    float hi[kMt][2][4], lo[kMt][2][4], tot[kMt][2][4];
    zero(tot);
    for (int c = 0; c < kChunks; ++c) {
        zero(hi);
        zero(lo);
        const int cc = (c + rot) % kChunks;
        if constexpr (kTma) {
            mbar_wait(&xbar[cc], 0);
            if constexpr (kU8) {  // this chunk's bytes into the float tile, 16 pixels a thread, then all warps read it
                const uint4* src8 = reinterpret_cast<const uint4*>(x8s + cc * BM * kChunkK);
                float* dst = xs + cc * BM * kXt;
                for (int i = tid; i < BM * (kChunkK / 16); i += kThreads) {
                    const uint4 v = src8[i];
                    float4* d = reinterpret_cast<float4*>(dst + (i / (kChunkK / 16)) * kXt + 16 * (i % (kChunkK / 16)));
                    d[0] = pixel_floats(v.x);
                    d[1] = pixel_floats(v.y);
                    d[2] = pixel_floats(v.z);
                    d[3] = pixel_floats(v.w);
                }
                __syncthreads();
            }
        } else {
            cp_async_wait_dyn(kChunks - 1 - c);
            __syncthreads();
        }
        // next chunk's W1 fragments, or, during the last chunk, W2's
        const float4* next = c + 1 < kChunks ? w1src + (size_t)((cc + 1) % kChunks) * kRing * 32 : w2src;
#pragma unroll
        for (int i = 0; i < kRing; ++i) {
            if constexpr (kTma) mma_rows<kMt, E>(hi, lo, xs + cc * BM * kXt, kXt, m0, 8 * i, ring[i]);
            else mma_rows<kMt, E>(hi, lo, xs, kXs, m0, cc * kChunkK + 8 * i, ring[i]);
            ring[i] = __ldg(next + i * 32);
        }
#pragma unroll
        for (int m = 0; m < kMt; ++m)
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) tot[m][n][e] += lo[m][n][e] + hi[m][n][e];
    }
    __syncthreads();  // every warp is done with the x tile
    zero(lo);
    store_relu(tot, lo, w.b1, h1s, kHs, pair, m0, kHid ? hid.h1 : nullptr, row0, rows);
    __syncthreads();

    // ---- layer 2 (W2's fragments already in the ring); W3's k-steps for this warp requested first
    constexpr int kSteps3 = kKSteps2 / kWarps;  // 2: 14 k-steps over 7 warps
    float4 b3f[kSteps3];
#pragma unroll
    for (int i = 0; i < kSteps3; ++i) b3f[i] = __ldg(reinterpret_cast<const float4*>(w.w3f) + (size_t)(kSteps3 * warp + i) * 32 + lane);
    zero(hi);
    zero(lo);
#pragma unroll
    for (int i = 0; i < kRing; ++i) mma_rows<kMt, E>(hi, lo, h1s, kHs, m0, 8 * i, ring[i]);
    store_relu(hi, lo, w.b2, h2s, kHs, pair, m0, kHid ? hid.h2 : nullptr, row0, rows);
    __syncthreads();

    // ---- layer 3: every warp takes its k-steps of all rows and all 16 (10 live) outputs; partials summed below
    {
        constexpr int kMtAll = BM / 16;
        float h3[kMtAll][2][4], l3[kMtAll][2][4];
        zero(h3);
        zero(l3);
#pragma unroll
        for (int i = 0; i < kSteps3; ++i) mma_rows<kMtAll, E>(h3, l3, h2s, kHs, 0, 8 * (kSteps3 * warp + i), b3f[i]);
        const int g = lane / 4;
#pragma unroll
        for (int m = 0; m < kMtAll; ++m)
#pragma unroll
            for (int n = 0; n < 2; ++n) {
                float* d = red + (warp * BM + 16 * m + g) * kOutPad + 8 * n + 2 * t;
                d[0] = h3[m][n][0] + l3[m][n][0];
                d[1] = h3[m][n][1] + l3[m][n][1];
                d[8 * kOutPad] = h3[m][n][2] + l3[m][n][2];
                d[8 * kOutPad + 1] = h3[m][n][3] + l3[m][n][3];
            }
    }
    __syncthreads();

    // ---- softmax: one thread per row
    if (tid < rows) {
        float z[kOut];
        float m = -INFINITY;
#pragma unroll
        for (int o = 0; o < kOut; ++o) {
            float v = __ldg(w.b3 + o);
#pragma unroll
            for (int wp = 0; wp < kWarps; ++wp) v += red[(wp * BM + tid) * kOutPad + o];
            z[o] = v;
            m = fmaxf(m, v);
        }
        float sum = 0.0f;
#pragma unroll
        for (int o = 0; o < kOut; ++o) sum += (z[o] = expf(z[o] - m));
        float* dst = out + (size_t)(row0 + tid) * kOut;
#pragma unroll
        for (int o = 0; o < kOut; ++o) dst[o] = z[o] / sum;
    }
}

template <int BM, Engine E, bool kTma, bool kU8 = false>
void launch_config(const FusedWeights& w, const void* x, float* out, int batch, cudaStream_t stream,
                   const FusedHidden& hid) {
    constexpr int kThreads = kPairs * 32;
    constexpr size_t smem = smem_floats<BM, kPairs, kTma, kU8>() * sizeof(float);
    constexpr auto plain = rows_kernel<BM, E, kTma, false, kU8>, hidden = rows_kernel<BM, E, kTma, true, kU8>;
    static bool configured = false;  // one host thread drives the GPU (common.cuh)
    if (!configured) {
        require_smem(smem, "cuda.mlp_fused row-block kernel");
        for (auto k : {plain, hidden})
            CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        configured = true;
    }
    const auto kernel = hid.h1 || hid.h2 ? hidden : plain;
    CUtensorMap map{};
    if constexpr (kU8)  // boxes of BM rows x 112 pixels (x points at bytes: FusedPlan::x_u8)
        map = tensor_map_2d(x, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, batch, kIn, BM, kChunkK, CU_TENSOR_MAP_SWIZZLE_NONE,
                            "x (uint8)");
    else if constexpr (kTma)  // boxes of BM rows x 116 columns
        map = tensor_map_2d(x, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, sizeof(float), batch, kIn, BM, kXt,
                            CU_TENSOR_MAP_SWIZZLE_NONE, "x (fp32)");
    // (x as floats for the cp.async tile; TMA tiles come through `map`)
    kernel<<<ceil_div(batch, BM), kThreads, smem, stream>>>(w, static_cast<const float*>(x), out, batch, map, hid);
    CUDA_CHECK_LAUNCH(E == Engine::Tf32 ? "cuda.mlp_fused_tf32 (rows)" : "cuda.mlp_fused (rows, 3xTF32)");
}

// The launch of one tile size: the x tile by TMA where the plan asks for it (sm_90; 8-bit x only so),
// else by cp.async.
template <Engine E, int BM>
void launch_tile(const FusedPlan& p, const FusedWeights& w, const void* x, float* out, int batch, cudaStream_t stream,
                 const FusedHidden& hid) {
    if (p.x_u8 && !p.tma_x) throw std::logic_error("row-block kernel: 8-bit x comes by TMA only (sm_90)");
    if (p.tma_x) {
        static const bool ok = cluster_binary(reinterpret_cast<const void*>(rows_kernel<BM, E, true, false>));
        if (!ok) throw std::invalid_argument("row-block kernel: the x tile by TMA needs sm_90");
        if (p.x_u8) return launch_config<BM, E, true, true>(w, x, out, batch, stream, hid);
        return launch_config<BM, E, true>(w, x, out, batch, stream, hid);
    }
    launch_config<BM, E, false>(w, x, out, batch, stream, hid);
}

template <Engine E>
void launch_engine(const FusedPlan& p, const FusedWeights& w, const void* x, float* out, int batch,
                   cudaStream_t stream, const FusedHidden& hid) {
    int bm = p.bm;
    // 32-row tiles need 115 KB of shared memory (118 KB with TMA, 143 KB from bytes): Hopper and A100, not the 99 KB of sm_86/89.
    const size_t smem32 = p.x_u8 ? smem_floats<32, kPairs, true, true>()
                          : p.tma_x ? smem_floats<32, kPairs, true>()
                                    : smem_floats<32, kPairs>();
    if (bm == 32 && smem32 * sizeof(float) > max_smem_per_block_optin()) bm = 16;
    if (bm == 32) return launch_tile<E, 32>(p, w, x, out, batch, stream, hid);
    if (bm == 16) return launch_tile<E, 16>(p, w, x, out, batch, stream, hid);
    throw std::invalid_argument("row-block kernel: tiles of 16 or 32 rows");
}

}  // namespace

void launch_fused_rows(const FusedPlan& p, const FusedWeights& w, const void* x, float* out, int batch,
                       cudaStream_t stream, const FusedHidden& hid) {
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    if (p.engine == Engine::Tf32x3) return launch_engine<Engine::Tf32x3>(p, w, x, out, batch, stream, hid);
    if (p.engine == Engine::Tf32) return launch_engine<Engine::Tf32>(p, w, x, out, batch, stream, hid);
    throw std::invalid_argument("the row-block kernel runs on tensor cores only");
}

}  // namespace gemmpad::cuda
