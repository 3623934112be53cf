// cuda.mlp_fused: the whole 784-100-100-10 network in ONE launch, on CUDA cores
// (batches up to 512; larger ones run the 3xTF32 tensor-core kernel of
// fused_mlp_tc.cu, which measured faster there).
//
// What changed (from the tensor-core fused kernel of fused_mlp_tc.cu, which was
// cuda.mlp_fused until now and stays as cuda.mlp_fused_3xtf32): no weight
// staging into shared memory and no tensor cores. Every block of the old kernel
// copied a 112x112 slice of W1 (50 KB) into shared memory and waited for it
// before multiplying; the last block then waited again for W2, and the split-K
// hand-off cost two global round trips (fence + atomic, then the partials).
// Here:
//   * Row tiles of BM rows (1 for batch 1, 4 up to 32, 16 up to 512); each tile
//     is 8 blocks, block `rank` owning 98 rows of W1 (K = 784 = 8 x 98).
//   * At the start every thread issues ALL its loads at once, straight from L2
//     into registers (coalesced float4 along W1's rows): its 14 rows x 4 columns
//     of W1, its 8 values of W2's column slice, and its part of the x slice.
//     Latency, not bandwidth, decides at small batches. (Skipping W1 rows whose
//     pixel is zero would make those loads wait for x: the input's sparsity buys
//     nothing here, unlike on the CPU.)
//   * Plain fp32 FMAs: exact fp32 without 3xTF32's tripled work, and at <= 16
//     rows per block tensor cores would idle anyway.
//   * sm_90: the 8 blocks of a tile form a thread-block CLUSTER. Layer-1 partials
//     stay in each block's shared memory; after cluster.sync() every block sums
//     all 8 through distributed shared memory (DSMEM) into the full h1, computes
//     ITS 14 columns of layer 2 (W2 already in registers) and writes them into
//     block 0's shared memory; after a second cluster.sync() block 0 runs layer 3
//     (W3 prefetched into its shared memory at the start) and the softmax. No
//     global scratch, no atomics, layer 2 spread over 8 SMs.
//   * sm_80-89 (or clusters turned off, _cuda.set_fused_clusters(False)):
//     partials go to global scratch, the last block to arrive (fence + atomic
//     counter, reset by that block) runs layers 2-3 + softmax alone.
// Input and output live in mapped pinned host memory up to batch 64 (the kernel
// reads x over PCIe and writes the probabilities back itself); mlp.cu replays
// the launch from a captured CUDA graph (see Mlp::graph_).
//
// Measured (H200, driver 580.159.04, CUDA 13.0, 2026-11-22, median of 300 calls
// of _cuda.Mlp.forward; kernel = CUDA events, end to end = host clock in C++):
//   first version (same kernels, one launch per call, the start event recorded
//   before the launch call, x loaded in a load-store loop):
//     batch 1: 11.1 / 17.7 us (old cuda.mlp_fused 19.4 / 27.4); batch 16: 13.9;
//     batch 256: 24.5; batch 4096 (a 64-row register-tiled variant): 100 us.
//   + all x loads issued before the first store (one round trip instead of one
//     per iteration) and the launch replayed from a CUDA graph (the events no
//     longer time the host's launch call); both together, not separated:
//     batch 1: 7.2 / 14.4 us; batch 2: 7.9; batch 16: 10.8 / 20.1; batch 32: 12.7;
//     batch 64: 21.3 (mapped input); batch 128: 16.6; batch 256: 21.7 / 97.
//     ncu gpu__time_duration (cold caches): batch 1 8.2-9.0 us, batch 16 9.2-9.9,
//     batch 256 21.6 us: the event figures are the kernel's own duration now.
//   In the same bench run: torch CUDA graph 15.1 / 44.7 (batch 1), 25.2 / 55.9
//   (16), 30.3 / 122.7 (256), 50.4 (4096); cuda.mlp_fused_3xtf32 16.9 / 25.6 (1),
//   22.1 (256), 73.7 (4096).
//   Clusters vs the last-block fallback on the same H200: batch 1 7.2 vs 11.5,
//   batch 16 10.8 vs 15.2, batch 256 21.7 vs 21.5 us.
//   The 64-row variant for large batches (x transposed in shared memory, 4x8
//   register tiles, W2 staged by cp.async) measured 94 us at 4096 vs 73 us for
//   the 3xTF32 kernel: removed, large batches go to the tensor-core kernel.
// Short of the issue's goals (batch 1: 4 us kernel / 12 us end to end; 5 us at
// 256; 15 us at 4096). Not yet understood: why 8 blocks of 224 threads need
// ~7 us at batch 1 and 16-row tiles ~20 us at 256 (load-to-use chains look like
// ~3 us); next steps: ncu source-level stall reasons, copying x with a graph
// memcpy node instead of mapped PCIe reads, one cluster.sync instead of two.
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

// Rows per tile: 1 for batch 1 (no wasted FMAs), 4 up to 32 rows (more tiles,
// so more SMs, for small batches), 16 up to 512. Larger batches go to the
// 3xTF32 tensor-core kernel (see the header: it measured faster there).
constexpr int kSmallTileMax = 32, kFmaBatchMax = 512;
int tile_rows(int batch) { return batch == 1 ? 1 : batch <= kSmallTileMax ? 4 : 16; }

using KernelFn = void (*)(FusedWeights, const float*, float*, int, float*, unsigned*);

template <int BM, bool kCluster>
void launch_config(const FusedWeights& w, const float* x, float* out, int batch, const FusedScratch& s,
                   cudaStream_t stream) {
    const KernelFn kernel = fused_fma_kernel<BM, kCluster>;
    constexpr size_t smem = smem_floats<BM>() * sizeof(float);
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
        CUDA_CHECK(cudaFuncGetAttributes(&fa, fused_fma_kernel<BM, true>));
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
    const auto tc = fused_tc_scratch_size(batch);
    if (batch > kFmaBatchMax) return tc;  // every fused kernel runs the tensor-core kernel there
    const int bm = tile_rows(batch), tiles = ceil_div(batch, bm);
    return {std::max(tc.first, (size_t)tiles * kRanks * bm * kHiddenPad), std::max(tc.second, tiles)};
}

void launch_fused_mlp(const FusedWeights& w, const float* x, float* out, int batch, const FusedScratch& scratch,
                      cudaStream_t stream) {
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    if (batch > kFmaBatchMax) return launch_fused_mlp_tc(w, x, out, batch, true, scratch, stream);
    switch (tile_rows(batch)) {
        case 1: launch_tile<1>(w, x, out, batch, scratch, stream); break;
        case 4: launch_tile<4>(w, x, out, batch, scratch, stream); break;
        default: launch_tile<16>(w, x, out, batch, scratch, stream); break;
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
         "a cluster of 8 blocks (DSMEM all-gather on sm_90), layer 2 by column slices, fp32 FMAs; "
         "batches over 512 run the 3xTF32 kernel",
         repo_path(__FILE__)},
    };
    return list;
}

}  // namespace gemmpad::cuda
