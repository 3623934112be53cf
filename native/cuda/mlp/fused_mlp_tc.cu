// The large-batch path of the fused kernels (cuda.mlp_fused, cuda.mlp_fused_tf32,
// cuda.mlp_fused_3xtf32 from batch 961 on the H200, from 1024 / 384 rows where the
// k-split kernel cannot run): one block per 16- or 32-row tile runs all three
// layers on tensor cores, with no hand-off between blocks.
//
// What changed (from the split-K WMMA kernel that lived here: 7 blocks per
// 16/32-row tile, each staging a 112x112 W1 slice in shared memory, global
// partials + last block, WMMA fragments converted to tf32 hi/lo in registers):
//   * No split of K: a block owns whole rows, so layers 2 and 3 follow layer 1
//     in the same block, from shared memory; nothing goes through global
//     scratch, no fence, no counter, no last block. The grid is batch / 32
//     blocks (128 at batch 4096, one per SM).
//   * mma.sync.m16n8k8 (PTX) instead of WMMA; warp w owns hidden units
//     16w..16w+15 for all rows of the tile, and its B fragments come from L2
//     in fragment order (fused_common.cuh): one float4 per lane per k-step,
//     14 k-steps in flight in a register ring, W2's fragments requested while
//     the last W1 chunk is multiplied. W1 is never staged in shared memory.
//   * x tile: all 7 chunks of 112 columns requested at once with cp.async,
//     each waited for in turn (compute chunk c while c+1.. land). On sm_90
//     (since 2026-11-23, see below): one TMA box of BM rows x 116 columns
//     per chunk instead, each on its own mbarrier.
//   * tf32 split with integer ops (round: add 0x1000, mask) instead of
//     cvt.rna; 3xTF32 accumulates the two small products first, one
//     accumulator per tile. The tf32 variant feeds rounded operands once.
// Why it should be faster: at 4096 rows the old kernel launched 896 blocks
// that each re-staged W1 slices and round-tripped partials through L2; here
// each SM streams W1 once (351 KB from L2) for 32 rows, and the tensor work
// (3 x 0.42 G FMA for 3xTF32) is spread over 128 SMs with nothing serial after it.
//
// History (this file's earlier kernel, H200, driver 580.159.04, CUDA 13.0,
// 2026-11-22, kernel / end-to-end us, launched from mlp.cu's CUDA graph):
//   first version, B fragments straight from L2 inside the k loop: batch 1
//   28.9 / 37.4 (torch CUDA graph 14.9 / 47.5), batch 4096 103 us; with W1/W2
//   slices staged by cp.async: 3xtf32 batch 1 16.9 / 25.6, batch 256 22.1,
//   batch 4096 73.7; tf32 14.2 / 22.9, 19.8, 56.2 (torch graph at 4096: 50.4).
//
// Measured (H200, driver 580.159.04, CUDA 13.0, 2026-11-23; native/tools/mlp_probe.cu,
// CUDA events around one graph-launched kernel, x in device memory, median of 300):
//   batch 4096, 32-row tiles: tf32 16.99 us, 3xTF32 26.40 us (24.54 before the per-chunk
//   promotion below); 16-row tiles: 17.38 / 28.45. Batch 1024: tf32 11.90 (16-row tiles).
//   Through `gemmpad bench mlp` (shipped model, x copied in by the graph first): batch 4096
//   cuda.mlp_fused 30.5 us, cuda.mlp_fused_tf32 21.8 us; torch CUDA graph 51.1 us.
//   Accuracy: 3xTF32 gave a relative error of 1.55e-5 on the probabilities at batch 4096
//   (over the 1e-5 of an fp32 path). Rounding the low half to tf32 (instead of letting the
//   tensor core truncate it) and promoting the accumulators into an fp32 total every 112
//   k (the tensor core adds with fewer bits than an FMA) brought the worst error over every
//   batch from 1 to 4096 to 1.8e-7.
// Short of the issue's 15 us at batch 4096 in fp32; tf32 is 2 us off.
//
// Tried and dropped (H200, 2026-11-23, `STEPS=probe PROBE_MODE=rows bash
// native/tools/mlp_probe.sh`, kernel us at batch 256 / 4096, x in L2; this kernel in the
// same runs: tf32 15.2-15.5 / 16.7-17.1, 3xTF32 24.5-24.9 / 25.9-26.4). Every variant
// was checked against float64 first, the first five also under memcheck and racecheck:
//   * W1 staged in shared memory by bulk copies (4 stages of 25 KB, one mbarrier each)
//     instead of each warp's register ring: tf32 18.1 / 19.6, 3xTF32 27.7 / 29.2. The
//     fragments then cross shared memory twice.
//   * the x tile by bulk copies (one per row and chunk, 448 B each): tf32 18.7 / 19.3.
//   * 14 warps, two per column pair splitting K, summed through shared memory: 15.9 / 16.6.
//   * warp tiles of 32 rows x 56 units (K split over 4 warp pairs, W1 in a k-pair order
//     that makes each A fragment one 16-byte load: ~4x fewer instructions per mma),
//     x by four bulk copies of 25 KB: tf32 16.5-16.8 / 19.2-20.2. Its globaltimer trace:
//     2.8 us before the x tile was in, 6.4-7.6 us of layer 1, 3 us to sum the warps'
//     partials, 2 us for layers 2-3: nothing left to overlap the x load with.
//   * W1 as fp16 for the tf32 kernel (tf32-rounded weights are exact in fp16), half the
//     bytes, two chunks in flight: 16.6 / 17.8.
//   * tf32 operands left for the tensor core to truncate (no rounding): 1.3 us faster,
//     but the error grew from 1.7e-4 to 7.8e-4.
// Rates measured the same day (probe mode "loads"): 16-byte loads 20-44 GB/s per SM,
// bulk copies 29-108 GB/s per SM, mma.sync tf32 311 TFLOP/s over the device. In
// Mlp::forward the x tile is copied in just before the kernel, which added 3-8 us at
// batch 4096 (probe: tf32 24.7, 3xTF32 34.0): the copy engine handing over to the compute
// queue inside the timed span (an empty kernel measured 4.2-8.9 us that way); mlp.cu's
// copy_in now puts an empty kernel between the copy and the start event (probe, same day:
// tf32 15.97, 3xTF32 25.76 at 4096 after a copy, as with x already in L2). A wgmma kernel
// fed by TMA (as gemm/10) is the next thing to try; 3xTF32 through mma.sync alone needs
// ~7 us of tensor work per SM.
// The x tile by TMA (later the same day): the warps' W1 stream and the x tile shared the
// load path (16-byte loads from L2 measured 20-44 GB/s per SM, bulk copies up to 108). One
// TMA box per chunk (BM rows x 116 columns, 116 = 20 mod 32 banks for ldmatrix; the 4 extra
// columns overlap the next chunk, past column 784 TMA fills zeros, as past the batch) moves
// the x tile off that path. Probe, x copied in + an empty kernel before the start event
// (as Mlp::forward), us at batch 1024 / 4096: tf32 32-row tiles 14.14 / 16.00 -> 11.62 /
// 14.08, 16-row tiles 10.85 / 16.61 -> 10.50 / 15.97; 3xTF32 32-row 23.81 / 25.63 -> 21.86 /
// 23.10, 16-row 16.93 / 28.19 -> 15.36 / 25.50. Checked against float64, memcheck and
// racecheck clean. (The 1-D bulk copies tried earlier were one per row and chunk: 224 per block.)
#include "fused_common.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int kXs = kIn + 4;                           // x tile row stride: 788 = 20 (mod 32)
constexpr int kHs = kHiddenPad + 4;                    // h1 / h2 row stride: 116 = 20 (mod 32)
constexpr int kChunkK = 112, kChunks = kIn / kChunkK;  // 7 chunks of 14 k-steps
constexpr int kRing = kChunkK / 8;                     // 14: B fragments in flight per warp
static_assert(kChunks * kChunkK == kIn && kRing == kKSteps2, "the ring also holds W2's 14 k-steps");

constexpr int kXt = kChunkK + 4;  // TMA x tile: per chunk [BM][116] (= 20 mod 32 banks), 4 columns of overlap

template <int BM, int kWarps, bool kTma = false>
constexpr size_t smem_floats() {
    return (kTma ? (size_t)kChunks * BM * kXt + 32 : (size_t)BM * kXs) + (size_t)kWarps * BM * kOutPad;  // +32: alignment
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
// NaN as quiet_nan: the next layer's tf32_round must not turn it into -0.
template <int kMt>
__device__ __forceinline__ void store_relu(const float (&hi)[kMt][2][4], const float (&lo)[kMt][2][4],
                                           const float* __restrict__ bias, float* dst, int ld, int pair, int m0) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int n = 0; n < 2; ++n) {
        const int c = 16 * pair + 8 * n + 2 * t;
        const float b0 = __ldg(bias + c), b1 = __ldg(bias + c + 1);
#pragma unroll
        for (int m = 0; m < kMt; ++m) {
            float* d = dst + (16 * (m0 + m) + g) * ld + c;
            d[0] = quiet_nan(relu(hi[m][n][0] + lo[m][n][0] + b0));
            d[1] = quiet_nan(relu(hi[m][n][1] + lo[m][n][1] + b1));
            d[8 * ld] = quiet_nan(relu(hi[m][n][2] + lo[m][n][2] + b0));
            d[8 * ld + 1] = quiet_nan(relu(hi[m][n][3] + lo[m][n][3] + b1));
        }
    }
}

// kWarpsPerPair = 1: warp w owns column pair w for all BM rows; 2: warps w and w + 7
// split the rows (twice the warps for the same work: more in flight per SM).
// kTma (sm_90): the x tile comes by TMA, one box of BM rows x 116 columns per chunk (tensor map
// `xmap` over x [batch, 784]; rows past the batch and columns past 784 arrive as zeros).
template <int BM, Engine E, int kWarpsPerPair, bool kRotate, bool kTma>
__global__ void __launch_bounds__(kPairs * kWarpsPerPair * 32)
    rows_kernel(FusedWeights w, const float* __restrict__ x, float* __restrict__ out, int batch,
                const __grid_constant__ CUtensorMap xmap) {
    constexpr int kWarps = kPairs * kWarpsPerPair, kThreads = kWarps * 32;
    constexpr int kMt = BM / 16 / kWarpsPerPair;  // m-tiles per warp
    static_assert(kMt >= 1 && kMt * 16 * kWarpsPerPair == BM, "whole m-tiles per warp");
    extern __shared__ __align__(16) float smem_raw[];
    // TMA boxes land on 128-byte boundaries
    float* smem = kTma ? reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(smem_raw) + 127) & ~uintptr_t(127)) : smem_raw;
    float* xs = smem;                  // [BM][788] (TMA: [7][BM][116]); after layer 1: h1 [BM][116], h2 [BM][116]
    float* h1s = smem;
    float* h2s = smem + BM * kHs;
    float* red = smem + (kTma ? kChunks * BM * kXt : BM * kXs);  // [warps][BM][16]: layer-3 partial logits
    __shared__ __align__(8) uint64_t xbar[kChunks];             // TMA: one per chunk
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, t = lane % 4;
    const int pair = warp % kPairs, m0 = (warp / kPairs) * kMt;
    const int row0 = blockIdx.x * BM, rows = min(BM, batch - row0);
    const int rot = kRotate ? blockIdx.x % kChunks : 0;  // K chunk order: rot, rot + 1, ... (mod 7)

    // ---- x tile: 7 chunks of 112 columns, all requested now in this block's order (rows past the batch read as 0)
    if constexpr (kTma) {
        if (tid == 0) {
            for (int c = 0; c < kChunks; ++c) mbar_init(&xbar[c], 1);
            mbar_init_fence();
            for (int c = 0; c < kChunks; ++c) {
                const int cc = (c + rot) % kChunks;
                mbar_expect_tx(&xbar[cc], BM * kXt * sizeof(float));
                tma_load_2d(xs + cc * BM * kXt, &xmap, cc * kChunkK, row0, &xbar[cc]);
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
    store_relu(tot, lo, w.b1, h1s, kHs, pair, m0);
    __syncthreads();

    // ---- layer 2 (W2's fragments already in the ring); W3's k-steps for this warp requested first
    constexpr int kSteps3 = kKSteps2 / kWarps;  // 2 (7 warps) or 1 (14 warps)
    float4 b3f[kSteps3];
#pragma unroll
    for (int i = 0; i < kSteps3; ++i) b3f[i] = __ldg(reinterpret_cast<const float4*>(w.w3f) + (size_t)(kSteps3 * warp + i) * 32 + lane);
    zero(hi);
    zero(lo);
#pragma unroll
    for (int i = 0; i < kRing; ++i) mma_rows<kMt, E>(hi, lo, h1s, kHs, m0, 8 * i, ring[i]);
    store_relu(hi, lo, w.b2, h2s, kHs, pair, m0);
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

template <int BM, Engine E, int kWarpsPerPair, bool kRotate, bool kTma>
void launch_config(const FusedWeights& w, const float* x, float* out, int batch, cudaStream_t stream) {
    constexpr int kThreads = kPairs * kWarpsPerPair * 32;
    constexpr size_t smem = smem_floats<BM, kPairs * kWarpsPerPair, kTma>() * sizeof(float);
    constexpr auto kernel = rows_kernel<BM, E, kWarpsPerPair, kRotate, kTma>;
    static bool configured = false;  // one host thread drives the GPU (common.cuh)
    if (!configured) {
        require_smem(smem, "cuda.mlp_fused row-block kernel");
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        configured = true;
    }
    CUtensorMap map{};
    if constexpr (kTma)  // boxes of BM rows x 116 columns
        map = tensor_map_2d(x, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, sizeof(float), batch, kIn, BM, kXt,
                            CU_TENSOR_MAP_SWIZZLE_NONE, "x (fp32)");
    kernel<<<ceil_div(batch, BM), kThreads, smem, stream>>>(w, x, out, batch, map);
    CUDA_CHECK_LAUNCH(E == Engine::Tf32 ? "cuda.mlp_fused_tf32 (rows)" : "cuda.mlp_fused (rows, 3xTF32)");
}

template <Engine E, int BM, int kWarpsPerPair>
void launch_rot(const FusedPlan& p, const FusedWeights& w, const float* x, float* out, int batch, cudaStream_t stream) {
    if constexpr (kWarpsPerPair == 1) {
        if (p.tma_x) {
            static const bool ok = cluster_binary(reinterpret_cast<const void*>(rows_kernel<BM, E, 1, true, true>));
            if (!ok) throw std::invalid_argument("row-block kernel: the x tile by TMA needs sm_90");
            if (!p.rotate) throw std::invalid_argument("row-block kernel: TMA x tiles with rotated chunks only");
            return launch_config<BM, E, 1, true, true>(w, x, out, batch, stream);
        }
    }
    if (p.tma_x) throw std::invalid_argument("row-block kernel: TMA x tiles with 7 warps only");
    if (p.rotate) launch_config<BM, E, kWarpsPerPair, true, false>(w, x, out, batch, stream);
    else launch_config<BM, E, kWarpsPerPair, false, false>(w, x, out, batch, stream);
}

template <Engine E>
void launch_engine(const FusedPlan& p, const FusedWeights& w, const float* x, float* out, int batch,
                   cudaStream_t stream) {
    int bm = p.bm;
    // 32-row tiles need 115 KB of shared memory: Hopper and A100, not the 99 KB of sm_86/89.
    if (bm == 32 && smem_floats<32, 14>() * sizeof(float) > max_smem_per_block_optin()) bm = 16;
    if (bm == 32 && p.warps == 14) return launch_rot<E, 32, 2>(p, w, x, out, batch, stream);
    if (bm == 32) return launch_rot<E, 32, 1>(p, w, x, out, batch, stream);
    if (bm == 16) return launch_rot<E, 16, 1>(p, w, x, out, batch, stream);
    throw std::invalid_argument("row-block kernel: tiles of 16 or 32 rows");
}

}  // namespace

void launch_fused_rows(const FusedPlan& p, const FusedWeights& w, const float* x, float* out, int batch,
                       cudaStream_t stream) {
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    if (p.engine == Engine::Tf32x3) return launch_engine<Engine::Tf32x3>(p, w, x, out, batch, stream);
    if (p.engine == Engine::Tf32) return launch_engine<Engine::Tf32>(p, w, x, out, batch, stream);
    throw std::invalid_argument("the row-block kernel runs on tensor cores only");
}

}  // namespace gemmpad::cuda
