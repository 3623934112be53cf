// cuda.mlp_fused: the whole 784-100-100-10 network in ONE launch, on CUDA cores.
//
// What changed (from the tensor-core fused kernels of fused_mlp_tc.cu): no
// weight staging into shared memory and no tensor cores. Every block of the
// old kernel copied a 112x112 slice of W1 (50 KB) into shared memory, waited
// for it, and only then multiplied: at batch 1 that wait, a second one for W2
// in the last block and two global round trips for the split-K hand-off were
// the whole cost (19.4 us kernel for ~90 KFLOP). Here:
//
//   * Row tiles of BM rows (1 for batch 1, 4 up to 32, 16 beyond); each tile is
//     8 blocks, block `rank` owning 98 rows of W1 (K = 784 = 8 x 98).
//   * At the start every thread issues ALL its weight loads at once, straight
//     from L2 into registers (coalesced float4 along W1's rows): its 14 rows x 4
//     columns of W1 and its 8 values of W2's column slice, together with the x
//     slice. Latency, not bandwidth, decides at small batches, so every load is
//     in flight before the first one is needed. (Skipping W1 rows whose pixel is
//     zero would make those loads wait for x: the input's sparsity buys nothing
//     here, unlike on the CPU.)
//   * Plain fp32 FMAs: exact fp32, and at <= 16 rows per block tensor cores
//     would idle anyway (3xTF32 tripled their work for the same accuracy).
//   * sm_90: the 8 blocks of a tile form a thread-block CLUSTER. Partials of
//     layer 1 stay in each block's shared memory; after cluster.sync() every
//     block sums all 8 through distributed shared memory (DSMEM) into the full
//     h1, computes ITS 14 columns of layer 2 (W2 already in registers) and
//     writes them into block 0's shared memory; after a second cluster.sync()
//     block 0 runs layer 3 (W3 prefetched into its shared memory at the start)
//     and the softmax. No global scratch, no atomics, no fences, layer 2 spread
//     over 8 SMs.
//   * sm_80-89 (or clusters turned off): partials go to global scratch, the
//     last block to arrive (fence + atomic counter, reset by that block) runs
//     layers 2-3 + softmax alone.
// Input and output may live in mapped pinned host memory (batch <= 64): the
// kernel reads x over PCIe and writes probabilities back itself.
// Measured: see the section at the end of this comment block.
// Measured: see README benchmarks (filled in from the GPU run below).
#include <algorithm>

#include "mlp.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cooperative_groups.h>
#define GEMMPAD_HAS_CLUSTERS 1
namespace cg = cooperative_groups;
#endif

namespace gemmpad::cuda {
namespace {

constexpr int kRanks = 8;                            // blocks per row tile (cluster size on sm_90; portable max)
constexpr int kSlice = kIn / kRanks;                 // 98 rows of W1 per block
constexpr int kQuads = kHiddenPad / 4;               // 28 float4 columns of W1
constexpr int kPer1 = 14;                            // W1 rows per thread
constexpr int kGroups1 = kSlice / kPer1;             // 7 k-groups
constexpr int kWorkers = kQuads * kGroups1;          // 196 threads do layers 1 and 2
constexpr int kThreads = 224;                        // whole warps (softmax shuffles need full warps)
constexpr int kCols2 = kHiddenPad / kRanks;          // 14 columns of layer 2 per block
constexpr int kGroups2 = kWorkers / kCols2;          // 14 k-groups
constexpr int kPer2 = kHiddenPad / kGroups2;         // 8 k per thread
constexpr int kWarpsN = kThreads / 32;
static_assert(kSlice * kRanks == kIn && kPer1 * kGroups1 == kSlice, "K must split evenly");
static_assert(kCols2 * kRanks == kHiddenPad && kPer2 * kGroups2 == kHiddenPad, "layer 2 must split evenly");
static_assert(kWorkers <= kThreads && kThreads % 32 == 0, "workers fit the block");
static_assert(kSlice % 2 == 0, "x slices are read as float2");

bool g_clusters_enabled = true;  // one host thread drives the GPU (common.cuh)
bool g_used_clusters = false;

__device__ __forceinline__ float relu(float v) { return v > 0.0f ? v : (v != v ? v : 0.0f); }  // NaN stays NaN

// Shared memory (floats), in this order so that every float4 access is aligned:
//   part [BM][112]     this block's layer-1 partial (read by the cluster)
//   work [7][BM][112]  layer-1 k-group partials; later h1 [BM][112], the layer-2
//                      k-group partials [14][BM][14] and h2 [BM][112]
//   w3s  [112][16]     W3 (cluster block 0)
//   xs   [BM][98]      this block's slice of x
template <int BM>
constexpr size_t smem_floats() {
    return (size_t)BM * kHiddenPad + (size_t)kGroups1 * BM * kHiddenPad + kHiddenPad * kOutPad + (size_t)BM * kSlice;
}
template <int BM>
struct Smem {
    float *part, *work, *w3s, *xs, *h1, *red2, *h2;
    __device__ explicit Smem(float* base) {
        part = base;
        work = part + BM * kHiddenPad;
        w3s = work + kGroups1 * BM * kHiddenPad;
        xs = w3s + kHiddenPad * kOutPad;
        h1 = work;
        red2 = h1 + BM * kHiddenPad;
        h2 = red2 + kGroups2 * BM * kCols2;
        static_assert(BM * kHiddenPad * 2 + kGroups2 * BM * kCols2 <= kGroups1 * BM * kHiddenPad,
                      "h1, layer-2 partials and h2 must fit where the layer-1 partials were");
    }
};

// Columns [slice*14, slice*14 + 14) of h2 = relu(h1 @ W2 + b2) into dst [BM][112]
// (local or another block's shared memory). w2r: this thread's 8 values of the slice.
template <int BM>
__device__ __forceinline__ void layer2_slice(const float* h1, const float (&w2r)[kPer2], float* red2, int slice,
                                             const float* __restrict__ b2, float* dst) {
    const int tid = threadIdx.x;
    if (tid < kWorkers) {
        const int c = tid % kCols2, g = tid / kCols2;
        float acc[BM];
#pragma unroll
        for (int r = 0; r < BM; ++r) acc[r] = 0.0f;
#pragma unroll
        for (int j = 0; j < kPer2; ++j) {
            const int k = g * kPer2 + j;
#pragma unroll
            for (int r = 0; r < BM; ++r) acc[r] = fmaf(h1[r * kHiddenPad + k], w2r[j], acc[r]);
        }
#pragma unroll
        for (int r = 0; r < BM; ++r) red2[(g * BM + r) * kCols2 + c] = acc[r];
    }
    __syncthreads();
    for (int i = tid; i < BM * kCols2; i += kThreads) {
        const int r = i / kCols2, c = i % kCols2;
        float s = 0.0f;
#pragma unroll
        for (int g = 0; g < kGroups2; ++g) s += red2[(g * BM + r) * kCols2 + c];
        dst[r * kHiddenPad + slice * kCols2 + c] = relu(s + b2[slice * kCols2 + c]);
    }
}

// This thread's 8 values of W2's column slice, from global or shared memory ([112][112] either way).
__device__ __forceinline__ void load_w2_slice(float (&w2r)[kPer2], const float* __restrict__ w2, int slice) {
    const int tid = threadIdx.x;
    if (tid >= kWorkers) return;
    const int c = tid % kCols2, g = tid / kCols2;
#pragma unroll
    for (int j = 0; j < kPer2; ++j) w2r[j] = w2[(g * kPer2 + j) * kHiddenPad + slice * kCols2 + c];
}

// x[row0 .. row0 + BM, k0 .. k0 + 98] as float2 (rows past the batch read as 0),
// handed to `store(r, p, value)` for columns 2p, 2p + 1. ALL loads are issued
// before the first store: a load-store loop waits one full round trip (L2, or
// PCIe for mapped host memory) per iteration.
template <int BM, typename Store>
__device__ __forceinline__ void load_x_slice(const float* __restrict__ x, int batch, int row0, int k0, Store store) {
    constexpr int kPairs = kSlice / 2, kIters = (BM * kPairs + kThreads - 1) / kThreads;
    float2 v[kIters];
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
        const int i = threadIdx.x + it * kThreads, r = i / kPairs, p = i % kPairs;
        v[it] = make_float2(0.0f, 0.0f);
        if (i < BM * kPairs && row0 + r < batch)
            v[it] = *reinterpret_cast<const float2*>(x + (size_t)(row0 + r) * kIn + k0 + 2 * p);
    }
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
        const int i = threadIdx.x + it * kThreads;
        if (i < BM * kPairs) store(i / kPairs, i % kPairs, v[it]);
    }
}

// Layer 3 + softmax for the tile's rows: one warp per row; lane = (k parity, output).
template <int BM>
__device__ __forceinline__ void layer3_softmax(const float* h2, const float* w3, const float* __restrict__ b3,
                                               float* __restrict__ out, int row0, int rows) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int o = lane % kOutPad, half = lane / kOutPad;
    for (int r = warp; r < rows; r += kWarpsN) {  // warp-uniform
        float a0 = 0.0f, a1 = 0.0f;  // two chains: half the dependent FMAs
#pragma unroll
        for (int k = half; k < kHiddenPad; k += 4) {
            a0 = fmaf(h2[r * kHiddenPad + k], w3[k * kOutPad + o], a0);
            a1 = fmaf(h2[r * kHiddenPad + k + 2], w3[(k + 2) * kOutPad + o], a1);
        }
        float v = a0 + a1;
        v += __shfl_xor_sync(0xffffffffu, v, kOutPad);  // both halves now hold the full dot product
        const bool live = half == 0 && o < kOut;
        v = live ? v + b3[o] : -INFINITY;
        float m = v;
#pragma unroll
        for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
        const float e = live ? expf(v - m) : 0.0f;
        float sum = e;
#pragma unroll
        for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        if (live) out[(size_t)(row0 + r) * kOut + o] = e / sum;
    }
}

template <int BM, bool kCluster>
__global__ void __launch_bounds__(kThreads)
    fused_fma_kernel(FusedWeights w, const float* __restrict__ x, float* __restrict__ out, int batch,
                     float* __restrict__ partials, unsigned* __restrict__ counters) {
    extern __shared__ __align__(16) float smem_raw[];
    const Smem<BM> sm(smem_raw);
    __shared__ bool is_last;
    const int tid = threadIdx.x;
    const int tile = blockIdx.x / kRanks, rank = blockIdx.x % kRanks;  // == cluster rank (clusters run along x)
    const int row0 = tile * BM, rows = min(BM, batch - row0);
    const int k0 = rank * kSlice;
    const int q = tid % kQuads, g = tid / kQuads;  // layer-1 worker: float4 column, k-group

    // ---- 1. every independent load goes out first: W1 rows, W2 slice, W3, x
    float4 w1r[kPer1];
    if (tid < kWorkers) {
        const float4* src = reinterpret_cast<const float4*>(w.w1 + (size_t)(k0 + g * kPer1) * kHiddenPad) + q;
#pragma unroll
        for (int j = 0; j < kPer1; ++j) w1r[j] = __ldg(src + j * kQuads);
    }
    float w2r[kPer2];
    if constexpr (kCluster) {
        load_w2_slice(w2r, w.w2, rank);
        if (rank == 0)
            for (int i = tid; i < kHiddenPad * kOutPad / 4; i += kThreads)
                reinterpret_cast<float4*>(sm.w3s)[i] = __ldg(reinterpret_cast<const float4*>(w.w3) + i);
    }
    load_x_slice<BM>(x, batch, row0, k0, [&](int r, int p, float2 v) {
        *reinterpret_cast<float2*>(sm.xs + r * kSlice + 2 * p) = v;
    });
    __syncthreads();

    // ---- 2. layer 1 over this block's 98 k: per-thread [BM][4] partials, then summed over the 7 k-groups
    if (tid < kWorkers) {
        float acc[BM][4];
#pragma unroll
        for (int r = 0; r < BM; ++r) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = 0.0f;
#pragma unroll
        for (int j = 0; j < kPer1; ++j) {
            const int k = g * kPer1 + j;
#pragma unroll
            for (int r = 0; r < BM; ++r) {
                const float xv = sm.xs[r * kSlice + k];
                acc[r][0] = fmaf(xv, w1r[j].x, acc[r][0]);
                acc[r][1] = fmaf(xv, w1r[j].y, acc[r][1]);
                acc[r][2] = fmaf(xv, w1r[j].z, acc[r][2]);
                acc[r][3] = fmaf(xv, w1r[j].w, acc[r][3]);
            }
        }
#pragma unroll
        for (int r = 0; r < BM; ++r)
            reinterpret_cast<float4*>(sm.work + (g * BM + r) * kHiddenPad)[q] =
                make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    }
    __syncthreads();
    float* my_part = kCluster ? sm.part : partials + ((size_t)tile * kRanks + rank) * BM * kHiddenPad;
    for (int i = tid; i < BM * kHiddenPad / 4; i += kThreads) {
        float4 s = reinterpret_cast<const float4*>(sm.work)[i];
#pragma unroll
        for (int gg = 1; gg < kGroups1; ++gg) {
            const float4 v = reinterpret_cast<const float4*>(sm.work + gg * BM * kHiddenPad)[i];
            s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
        }
        reinterpret_cast<float4*>(my_part)[i] = s;
    }

    if constexpr (kCluster) {
#ifdef GEMMPAD_HAS_CLUSTERS
        // ---- 3a. cluster: all-gather h1 through DSMEM, layer 2 by column slices, layer 3 in block 0
        cg::cluster_group cluster = cg::this_cluster();
        cluster.sync();  // every block's partial is complete (and its layer-1 scratch is dead)
        for (int i = tid; i < BM * kHiddenPad / 4; i += kThreads) {
            float4 s = reinterpret_cast<const float4*>(w.b1)[i % kQuads];
#pragma unroll
            for (int p = 0; p < kRanks; ++p) {
                const float4 v = reinterpret_cast<const float4*>(cluster.map_shared_rank(sm.part, p))[i];
                s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
            }
            reinterpret_cast<float4*>(sm.h1)[i] = make_float4(relu(s.x), relu(s.y), relu(s.z), relu(s.w));
        }
        __syncthreads();
        layer2_slice<BM>(sm.h1, w2r, sm.red2, rank, w.b2, cluster.map_shared_rank(sm.h2, 0));
        cluster.sync();  // h2 complete in block 0; no block reads another's memory after this
        if (rank == 0) layer3_softmax<BM>(sm.h2, sm.w3s, w.b3, out, row0, rows);
#else
        __trap();  // never launched: the host launches clusters only for sm_90 binaries
#endif
    } else {
        // ---- 3b. no clusters: the last block of the tile to arrive runs layers 2-3
        __threadfence();  // this block's partials visible device-wide before counting in
        __syncthreads();
        if (tid == 0) is_last = atomicAdd(&counters[tile], 1u) == kRanks - 1;
        __syncthreads();
        if (!is_last) return;
        __threadfence();  // order the reads below after every other block's fence + count
        const float* tile_parts = partials + (size_t)tile * kRanks * BM * kHiddenPad;
        for (int i = tid; i < BM * kHiddenPad / 4; i += kThreads) {
            float4 s = reinterpret_cast<const float4*>(w.b1)[i % kQuads];
#pragma unroll
            for (int p = 0; p < kRanks; ++p) {
                const float4 v = __ldcg(reinterpret_cast<const float4*>(tile_parts + (size_t)p * BM * kHiddenPad) + i);
                s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
            }
            reinterpret_cast<float4*>(sm.h1)[i] = make_float4(relu(s.x), relu(s.y), relu(s.z), relu(s.w));
        }
        if (tid == 0) counters[tile] = 0;  // ready for the next launch on this stream
        __syncthreads();
        for (int slice = 0; slice < kRanks; ++slice) {
            load_w2_slice(w2r, w.w2, slice);
            layer2_slice<BM>(sm.h1, w2r, sm.red2, slice, w.b2, sm.h2);
            __syncthreads();  // red2 is reused by the next slice; h2 complete after the last
        }
        layer3_softmax<BM>(sm.h2, w.w3, w.b3, out, row0, rows);
    }
}

// ---------------------------------------------------------------------------
// Large batches (> 512 rows): 64-row tiles, so W1 is read from L2 a quarter as
// often as with 16-row tiles, and a classic shared-memory register-tiled product
// (each thread 4 rows x 8 columns over all 98 k: 3 shared loads per 32 FMAs)
// instead of the small-batch per-thread k-groups (whose accumulators would not
// fit 64 rows). The cluster hand-off splits layers 2-3 by ROWS: block `rank`
// gathers h1 for rows [8 rank, 8 rank + 8) only (the least DSMEM traffic),
// then runs layers 2, 3 and the softmax for them; no second gather.
constexpr int kBigRows = 64;
constexpr int kRowQuads = kBigRows / 4;           // 16
constexpr int kColOcts = kHiddenPad / 8;          // 14
constexpr int kGroupRows = kBigRows / kRanks;     // 8 rows of layers 2-3 per block
constexpr int kLdx = kBigRows + 4;                // x^T row stride: float4-aligned, fewer bank conflicts
static_assert(kRowQuads * kColOcts == kThreads, "one 4x8 output tile per thread");
static_assert(kGroupRows * kQuads == kThreads, "one float4 of h1 per thread in the gather");

constexpr size_t big_smem_floats() {
    return (size_t)kSlice * kHiddenPad + (size_t)kSlice * kLdx + (size_t)kBigRows * kHiddenPad;
}
static_assert(2 * kBigRows * kHiddenPad + kGroups2 * kGroupRows * kCols2 <= kSlice * (kHiddenPad + kLdx),
              "the fallback's h1, h2 and layer-2 partials must fit over W1 and x");

__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gmem_src) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src));
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

#ifdef GEMMPAD_HAS_CLUSTERS
// Layers 2-3 + softmax for rows [row_base, row_base + 8) of the tile, h1 given,
// W2 already staged in shared memory (w2s).
__device__ __forceinline__ void big_tail(float* h1, float* red2, float* h2, const float* w2s, const FusedWeights& w,
                                         float* __restrict__ out, int row_base, int batch) {
#pragma unroll 1
    for (int slice = 0; slice < kRanks; ++slice) {
        float w2r[kPer2];
        load_w2_slice(w2r, w2s, slice);
        layer2_slice<kGroupRows>(h1, w2r, red2, slice, w.b2, h2);
        __syncthreads();  // red2 is reused by the next slice; h2 complete after the last
    }
    layer3_softmax<kGroupRows>(h2, w.w3, w.b3, out, row_base, min(kGroupRows, batch - row_base));
}
#endif

// Two blocks per SM (128 registers) where two fit: with clusters (sm_90, 227 KB
// of shared memory). Without, one (sm_80: 164 KB, sm_86/89: 99 KB per SM).
template <bool kCluster>
__global__ void __launch_bounds__(kThreads, kCluster ? 2 : 1)
    fused_fma_big_kernel(FusedWeights w, const float* __restrict__ x, float* __restrict__ out, int batch,
                         float* __restrict__ partials, unsigned* __restrict__ counters) {
    extern __shared__ __align__(16) float smem_raw[];
    float* ws = smem_raw;                       // [98][112] this block's rows of W1
    float* xt = ws + kSlice * kHiddenPad;       // [98][kLdx] x slice, transposed (k-major)
    float* part = xt + kSlice * kLdx;           // [64][112] layer-1 partial (read by the cluster)
    __shared__ bool is_last;
    const int tid = threadIdx.x;
    const int tile = blockIdx.x / kRanks, rank = blockIdx.x % kRanks;
    const int row0 = tile * kBigRows, rows = min(kBigRows, batch - row0);
    const int k0 = rank * kSlice;

    // ---- 1. W1 rows by cp.async, x slice transposed through registers
    const float* w1src = w.w1 + (size_t)k0 * kHiddenPad;
    for (int i = tid; i < kSlice * kQuads; i += kThreads) cp_async16(ws + 4 * i, w1src + 4 * i);
    load_x_slice<kBigRows>(x, batch, row0, k0, [&](int r, int p, float2 v) {
        xt[(2 * p) * kLdx + r] = v.x;
        xt[(2 * p + 1) * kLdx + r] = v.y;
    });
    cp_async_wait_all();
    __syncthreads();

    // ---- 2. layer 1: part[4 rows, 8 cols] per thread over all 98 k
    const int rq = tid / kColOcts, co = tid % kColOcts;
    float acc[4][8];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
#pragma unroll 7
    for (int k = 0; k < kSlice; ++k) {
        const float4 xa = *reinterpret_cast<const float4*>(xt + k * kLdx + 4 * rq);
        const float4 wa = *reinterpret_cast<const float4*>(ws + k * kHiddenPad + 8 * co);
        const float4 wb = *reinterpret_cast<const float4*>(ws + k * kHiddenPad + 8 * co + 4);
        const float xv[4] = {xa.x, xa.y, xa.z, xa.w};
        const float wv[8] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(xv[i], wv[j], acc[i][j]);
    }
    float* my_part = kCluster ? part : partials + ((size_t)tile * kRanks + rank) * kBigRows * kHiddenPad;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        float4* dst = reinterpret_cast<float4*>(my_part + (4 * rq + i) * kHiddenPad + 8 * co);
        dst[0] = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        dst[1] = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
    __syncthreads();  // everyone is done with ws and xt before they are reused

    if constexpr (kCluster) {
#ifdef GEMMPAD_HAS_CLUSTERS
        // Over ws now: [8][112] h1 of this block's row group, layer-2 partials, [8][112] h2.
        float* h1 = ws;
        float* red2 = h1 + kGroupRows * kHiddenPad;
        float* h2 = red2 + kGroups2 * kGroupRows * kCols2;
        float* w2s = h2 + kGroupRows * kHiddenPad;  // [112][112]: W2 streams in during the hand-off
        static_assert((2 * kGroupRows * kHiddenPad + kGroups2 * kGroupRows * kCols2) % 4 == 0 &&
                          (2 * kGroupRows * kHiddenPad + kGroups2 * kGroupRows * kCols2 + kHiddenPad * kHiddenPad) <=
                              kSlice * (kHiddenPad + kLdx),
                      "h1, layer-2 partials, h2 and W2 must fit over W1 and x");
        for (int i = tid; i < kHiddenPad * kQuads; i += kThreads) cp_async16(w2s + 4 * i, w.w2 + 4 * i);
        const int q = tid % kQuads, r8 = tid / kQuads;  // gather: row r8 of the group, float4 column q
        cg::cluster_group cluster = cg::this_cluster();
        cluster.sync();  // every block's partial is complete
        float4 s = reinterpret_cast<const float4*>(w.b1)[q];
#pragma unroll
        for (int p = 0; p < kRanks; ++p) {
            const float4 v = reinterpret_cast<const float4*>(
                cluster.map_shared_rank(part, p) + (rank * kGroupRows + r8) * kHiddenPad)[q];
            s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
        }
        reinterpret_cast<float4*>(h1 + r8 * kHiddenPad)[q] = make_float4(relu(s.x), relu(s.y), relu(s.z), relu(s.w));
        cluster.sync();  // no block reads another's shared memory after this
        cp_async_wait_all();
        __syncthreads();
        big_tail(h1, red2, h2, w2s, w, out, row0 + rank * kGroupRows, batch);
#else
        __trap();  // never launched: the host launches clusters only for sm_90 binaries
#endif
    } else {
        __threadfence();
        __syncthreads();
        if (tid == 0) is_last = atomicAdd(&counters[tile], 1u) == kRanks - 1;
        __syncthreads();
        if (!is_last) return;
        __threadfence();
        // The whole tile here: h1 [64][112], layer-2 partials, h2 [64][112] over ws and xt.
        const float* tile_parts = partials + (size_t)tile * kRanks * kBigRows * kHiddenPad;
        float* h1_all = ws;
        float* red2_all = h1_all + kBigRows * kHiddenPad;
        float* h2_all = red2_all + kGroups2 * kGroupRows * kCols2;
        for (int i = tid; i < kBigRows * kQuads; i += kThreads) {
            float4 s = reinterpret_cast<const float4*>(w.b1)[i % kQuads];
#pragma unroll
            for (int p = 0; p < kRanks; ++p) {
                const float4 v = __ldcg(reinterpret_cast<const float4*>(tile_parts + (size_t)p * kBigRows * kHiddenPad) + i);
                s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
            }
            reinterpret_cast<float4*>(h1_all)[i] = make_float4(relu(s.x), relu(s.y), relu(s.z), relu(s.w));
        }
        __syncthreads();
#pragma unroll 1
        for (int slice = 0; slice < kRanks; ++slice) {
            float w2r[kPer2];
            load_w2_slice(w2r, w.w2, slice);
#pragma unroll 1
            for (int grp = 0; grp < kRanks; ++grp) {
                layer2_slice<kGroupRows>(h1_all + grp * kGroupRows * kHiddenPad, w2r, red2_all, slice, w.b2,
                                         h2_all + grp * kGroupRows * kHiddenPad);
                __syncthreads();  // red2 is reused next
            }
        }
        layer3_softmax<kBigRows>(h2_all, w.w3, w.b3, out, row0, rows);
        if (tid == 0) counters[tile] = 0;  // ready for the next launch on this stream
    }
}

// Rows per tile: 1 for batch 1 (no wasted FMAs), 4 up to 32 rows (more tiles,
// so more SMs, for small batches), 16 up to 512, then the 64-row kernel above
// (W1 is re-read from L2 once per tile: 351 KB x tiles).
constexpr int kSmallTileMax = 32, kMidTileMax = 512;
int tile_rows(int batch) {
    return batch == 1 ? 1 : batch <= kSmallTileMax ? 4 : batch <= kMidTileMax ? 16 : kBigRows;
}

using KernelFn = void (*)(FusedWeights, const float*, float*, int, float*, unsigned*);

template <int BM, bool kCluster>
KernelFn kernel_for() {
    if constexpr (BM == kBigRows) return fused_fma_big_kernel<kCluster>;
    else return fused_fma_kernel<BM, kCluster>;
}
template <int BM>
constexpr size_t smem_bytes_for() {
    return (BM == kBigRows ? big_smem_floats() : smem_floats<BM>()) * sizeof(float);
}

template <int BM, bool kCluster>
void launch_config(const FusedWeights& w, const float* x, float* out, int batch, const FusedScratch& s,
                   cudaStream_t stream) {
    const KernelFn kernel = kernel_for<BM, kCluster>();
    constexpr size_t smem = smem_bytes_for<BM>();
    static bool configured = false;  // one host thread drives the GPU (common.cuh)
    if (!configured) {
        if (smem > max_smem_per_block_optin())
            throw std::runtime_error("cuda.mlp_fused needs " + std::to_string(smem) +
                                     " bytes of shared memory per block; this device allows " +
                                     std::to_string(max_smem_per_block_optin()));
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        configured = true;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(ceil_div(batch, BM) * kRanks);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    if (kCluster) {
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = kRanks;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, w, x, out, batch, s.partials, s.counters));
    CUDA_CHECK_LAUNCH("cuda.mlp_fused");
}

// Clusters need a device that launches them AND a kernel binary built for
// sm_90+ (an sm_80 binary running on Hopper has the trap branch instead).
template <int BM>
bool cluster_binary() {
    static const int ok = [] {
        int dev = 0, attr = 0;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&attr, cudaDevAttrClusterLaunch, dev));
        cudaFuncAttributes fa{};
        CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel_for<BM, true>()));
        return attr != 0 && fa.binaryVersion >= 90 ? 1 : 0;
    }();
    return ok != 0;
}

template <int BM>
void launch_tile(const FusedWeights& w, const float* x, float* out, int batch, const FusedScratch& s,
                 cudaStream_t stream) {
    g_used_clusters = g_clusters_enabled && cluster_binary<BM>();
    if (g_used_clusters) launch_config<BM, true>(w, x, out, batch, s, stream);
    else launch_config<BM, false>(w, x, out, batch, s, stream);
}

}  // namespace

bool set_fused_clusters(bool enabled) {
    const bool before = g_clusters_enabled;
    g_clusters_enabled = enabled;
    return before;
}

bool fused_used_clusters() { return g_used_clusters; }
bool fused_clusters_enabled() { return g_clusters_enabled; }

std::pair<size_t, int> fused_scratch_size(int batch) {
    const int bm = tile_rows(batch), tiles = ceil_div(batch, bm);
    const auto [tc_floats, tc_counters] = fused_tc_scratch_size(batch);
    return {std::max(tc_floats, (size_t)tiles * kRanks * bm * kHiddenPad), std::max(tc_counters, tiles)};
}

void launch_fused_mlp(const FusedWeights& w, const float* x, float* out, int batch, const FusedScratch& scratch,
                      cudaStream_t stream) {
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    switch (tile_rows(batch)) {
        case 1: launch_tile<1>(w, x, out, batch, scratch, stream); break;
        case 4: launch_tile<4>(w, x, out, batch, scratch, stream); break;
        case 16: launch_tile<16>(w, x, out, batch, scratch, stream); break;
        default: launch_tile<kBigRows>(w, x, out, batch, scratch, stream); break;
    }
}

const std::vector<MlpKernelInfo>& mlp_kernel_list() {
    static const std::vector<MlpKernelInfo> list = {
        {"cuda.mlp_fused_3xtf32", "fp32",
         "whole network in one launch on tensor cores: 3xTF32 WMMA, W1 slices staged in shared memory, "
         "split-K layer 1 over 7 blocks, last block runs layers 2-3 + softmax",
         fused_tc_source()},
        {"cuda.mlp_fused_tf32", "tf32", "the tensor-core fused network with one tf32 pass (3x less tensor work)",
         fused_tc_source()},
        {"cuda.mlp_fused", "fp32",
         "whole network in one launch on CUDA cores: weights straight from L2 into registers, layer 1 split over "
         "a cluster of 8 blocks (DSMEM all-gather on sm_90), layer 2 by column slices, fp32 FMAs",
         repo_path(__FILE__)},
    };
    return list;
}

}  // namespace gemmpad::cuda
