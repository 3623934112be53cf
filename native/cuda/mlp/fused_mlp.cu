// cuda.mlp_fused, split design (1-64 rows on the H200): the whole MLP in ONE launch, layer 1 split
// by columns over a 7- or 14-block cluster.
// Change from a row split of W1: block s owns hidden units cols*s.. over all 784 k, so its h1 slice is
// complete and goes straight into its share of layer 2; one hand-off (st.async into block 0, counted on
// an mbarrier); block 0 runs layer 3 and the softmax. Weights in fragment order (fused_common.cuh).
// Limit: a chain of dependent steps on top of the ~2.5-3 us event-timed floor (README.md here).
// Run: gemmpad bench mlp --kernels cuda.mlp_fused --batches 1
// Profile: ncu -k regex:split_kernel gemmpad bench mlp --kernels cuda.mlp_fused --batches 1
// Figure (H200 2026-12-01, assets/benchmarks/h200/bench-mlp.json): batch 1, kernel / end to end: cuda.mlp_fused 6.5 / 11.3 us, torch CUDA graph 15.6 / 53.1 us
#include <algorithm>
#include <type_traits>

#include "fused_common.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int kWarps = 14, kThreads = kWarps * 32;
constexpr int kStepsPerWarp = kKSteps1 / kWarps;   // 7
constexpr int kXs = kIn + 4;                       // x tile row stride: 788 = 20 (mod 32)
constexpr int kRowGroups = kThreads / kHiddenPad;  // 4: layer-2 threads per column
static_assert(kStepsPerWarp * kWarps == kKSteps1 && kRowGroups * kHiddenPad == kThreads, "even splits");

bool g_clusters_enabled = true;  // one host thread drives the GPU (common.cuh)
bool g_used_clusters = false;


template <int kCols>
using FragT = std::conditional_t<kCols == 16, float4, float2>;

// Shared memory (floats): W2 rows [C][112] | W3 [112][16] |
// x tile [BM][788] (later layer-3 partial logits [4][BM][16]) | red [14][BM][C] (later h2
// [BM][112]) | h1 [BM][C] | recv [112/C][BM][112] (cluster: block 0's inbox).
template <int BM, int kCols, bool kCluster>
struct SplitSmem {
    static constexpr int kSlices = kHiddenPad / kCols;
    static constexpr size_t w2 = (size_t)kCols * kHiddenPad,
                            w3 = kHiddenPad * kOutPad, xs = (size_t)BM * kXs,
                            red = std::max(kWarps * BM * kCols, BM * kHiddenPad), h1 = (size_t)BM * kCols,
                            recv = kCluster ? (size_t)kSlices * BM * kHiddenPad : 0;
    static constexpr size_t floats = w2 + w3 + xs + red + h1 + recv;
};

template <int BM, Engine E, bool kCluster, int kCols>
__device__ __forceinline__ void split_body(const FusedWeights& w, const float* __restrict__ x,
                                           const uint8_t* __restrict__ x8, float* __restrict__ out, int batch,
                                           float* __restrict__ partials, unsigned* __restrict__ counters,
                                           bool x_slices, FusedHidden hid) {
    static_assert(E == Engine::Fma ? BM <= 4 : BM % 16 == 0, "FMA for up to 4 rows, tensor cores for 16k");
    static_assert(kCols == 16 || (kCols == 8 && E == Engine::Fma), "a column pair, or a single n-tile with FMAs");
    static_assert(BM * kCols <= kThreads, "one thread per h1 value");
    using L = SplitSmem<BM, kCols, kCluster>;
    using Frag = FragT<kCols>;
    constexpr int kSlices = L::kSlices;
    extern __shared__ __align__(16) float smem[];
    float* w2s = smem;
    float* w3s = w2s + L::w2;
    float* xs = w3s + L::w3;
    float* red = xs + L::xs;
    float* h1s = red + L::red;
    float* recv = h1s + L::h1;
    float* h2s = red;
    float* logits = xs;  // [4 k-quarters][BM][16], once the x tile is dead
    __shared__ bool is_last;
    __shared__ __align__(8) uint64_t inbox;  // cluster: block 0's, counts the bytes the others push
    __shared__ __align__(8) uint64_t xbar;   // cluster, x by slices: counts the bytes of the x tile

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int tile = blockIdx.x / kSlices, s = blockIdx.x % kSlices;  // s == cluster rank (clusters run along x)
    const int row0 = tile * BM, rows = min(BM, batch - row0);
    const bool tail_block = !kCluster || s == 0;  // without clusters the tail block is not known yet
    stamp(0);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (kCluster) {  // launched without its cluster (never by this file): fail, do not hang
        if (cluster_size() != kSlices) __trap();
    }
#endif
    // x by slices (clusters, FMA tiles; for x in mapped host memory, so that each byte of it
    // crosses PCIe once, not once per block): block s loads 1/kSlices of the x tile, first of
    // all (the longest wait), and stores it into every block's tile by st.async, counted on
    // each block's xbar. 8-bit x (x8, FusedPlan::x_u8; only by slices) comes as 4 bytes per float4:
    // a quarter of the PCIe reads, made into floats on the way (pixel_floats).
    x_slices = kCluster && E == Engine::Fma && x_slices;
    constexpr int kQuads = kIn / 4;  // float4s per row of x
    constexpr int kSliceQ = BM * kQuads / kSlices;
    static_assert(BM * kQuads % kSlices == 0 && kSliceQ <= kThreads, "one float4 of a slice per thread");
    const int xi = s * kSliceQ + tid, xr = xi / kQuads, xq = xi % kQuads;  // this thread's float4 of the slice
    float4 xv = make_float4(0.f, 0.f, 0.f, 0.f);
    if (x_slices && tid < kSliceQ && xr < rows)
        xv = x8 ? pixel_floats(reinterpret_cast<const unsigned*>(x8 + (size_t)(row0 + xr) * kIn)[xq])
                : reinterpret_cast<const float4*>(x + (size_t)(row0 + xr) * kIn)[xq];
    if constexpr (kCluster) {  // block 0's inbox expects every other block's layer-2 partial
        if (tid == 0) {
            if (s == 0) mbar_init(&inbox, 1);
            if (x_slices) mbar_init(&xbar, 1);
            mbar_init_fence();
        }
        __syncthreads();
        if (tid == 0) {
            if (s == 0) mbar_expect_tx(&inbox, (kSlices - 1) * BM * kHiddenPad * sizeof(float));
            if (x_slices) mbar_expect_tx(&xbar, BM * kIn * sizeof(float));
        }
        cluster_arrive_relaxed();  // phase 0: "this block is running" (and its barriers are set up)
    }

    // ---- 1. every load goes out first: W1 fragments, x tile, W2 rows, W3 (tail block), biases
    const float* w1g = (kCols == 16 ? w.w1f : w.w1f8) + (size_t)s * kIn * kCols;
    const float* w2g = w.w2 + (size_t)s * kCols * kHiddenPad;
    Frag wf[kStepsPerWarp];
    float4 w2r = make_float4(0.f, 0.f, 0.f, 0.f), w3r = w2r;
    {
        const Frag* src = reinterpret_cast<const Frag*>(w1g) + warp * kStepsPerWarp * 32 + lane;
#pragma unroll
        for (int i = 0; i < kStepsPerWarp; ++i) wf[i] = __ldg(src + i * 32);
        static_assert(kCols * kHiddenPad / 4 <= kThreads && kHiddenPad * kOutPad / 4 <= kThreads, "one float4 each");
        if (tid < kCols * kHiddenPad / 4) w2r = __ldg(reinterpret_cast<const float4*>(w2g) + tid);
        if (tail_block && tid < kHiddenPad * kOutPad / 4) w3r = __ldg(reinterpret_cast<const float4*>(w.w3) + tid);
    }
    const float b1v = tid < BM * kCols ? __ldg(w.b1 + kCols * s + tid % kCols) : 0.0f;
    const float b2v = tail_block ? __ldg(w.b2 + tid % kHiddenPad) : 0.0f;
    const float b3v = tail_block && lane % 16 < kOut ? __ldg(w.b3 + lane % 16) : 0.0f;
    if (x_slices) {
        cluster_wait_acquire();  // phase 0 complete: every block is running, its xbar initialised
        if (tid < kSliceQ) {
#pragma unroll
            for (int p = 0; p < kSlices; ++p)
                st_async_v4_f32(cluster_map_u32(xs + xr * kXs + 4 * xq, p), xv, cluster_map_u32(&xbar, p));
        }
        mbar_wait<true>(&xbar, 0);  // acquire at cluster scope: every slice is in
    } else {
        constexpr int kIters = (BM * kQuads + kThreads - 1) / kThreads;
        float4 v[kIters];
#pragma unroll
        for (int it = 0; it < kIters; ++it) {
            const int i = tid + it * kThreads, r = i / kQuads, q = i % kQuads;
            v[it] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (i < BM * kQuads && r < rows) v[it] = reinterpret_cast<const float4*>(x + (size_t)(row0 + r) * kIn)[q];
        }
#pragma unroll
        for (int it = 0; it < kIters; ++it) {
            const int i = tid + it * kThreads, r = i / kQuads, q = i % kQuads;
            if (i < BM * kQuads) *reinterpret_cast<float4*>(xs + r * kXs + 4 * q) = v[it];
        }
        __syncthreads();
    }
    stamp(1);

    // ---- 2. layer 1 over this warp's 7 k-steps; lane (g, t) holds k = 8j + t and 8j + t + 4
    if constexpr (E == Engine::Fma) {
        constexpr int kAcc = kCols / 4;  // chains per row: (columns g, 8 + g) x (k, k + 4)
        float acc[BM][kAcc];
#pragma unroll
        for (int r = 0; r < BM; ++r)
#pragma unroll
            for (int a = 0; a < kAcc; ++a) acc[r][a] = 0.0f;
#pragma unroll
        for (int i = 0; i < kStepsPerWarp; ++i) {
            const int k = 8 * (warp * kStepsPerWarp + i) + t;
#pragma unroll
            for (int r = 0; r < BM; ++r) {
                const float xa = xs[r * kXs + k], xb = xs[r * kXs + k + 4];
                if constexpr (kCols == 16) {
                    acc[r][0] = fmaf(xa, wf[i].x, acc[r][0]);
                    acc[r][1] = fmaf(xb, wf[i].y, acc[r][1]);
                    acc[r][2] = fmaf(xa, wf[i].z, acc[r][2]);
                    acc[r][3] = fmaf(xb, wf[i].w, acc[r][3]);
                } else {
                    acc[r][0] = fmaf(xa, wf[i].x, acc[r][0]);
                    acc[r][1] = fmaf(xb, wf[i].y, acc[r][1]);
                }
            }
        }
#pragma unroll
        for (int r = 0; r < BM; ++r) {
            float c0 = acc[r][0] + acc[r][1];
            c0 += __shfl_xor_sync(0xffffffffu, c0, 1);
            c0 += __shfl_xor_sync(0xffffffffu, c0, 2);
            if constexpr (kCols == 16) {
                float c1 = acc[r][2] + acc[r][3];
                c1 += __shfl_xor_sync(0xffffffffu, c1, 1);
                c1 += __shfl_xor_sync(0xffffffffu, c1, 2);
                if (t == 1) red[(warp * BM + r) * kCols + 8 + g] = c1;
            }
            if (t == 0) red[(warp * BM + r) * kCols + g] = c0;
        }
    } else {
        constexpr int kMt = BM / 16, kNt = kCols / 8;
        float hi[kMt][2][4] = {}, lo[kMt][2][4] = {};
#pragma unroll
        for (int i = 0; i < kStepsPerWarp; ++i) {
            const int k = 8 * (warp * kStepsPerWarp + i) + t;
#pragma unroll
            for (int m = 0; m < kMt; ++m) {
                const float* xr = xs + (16 * m + g) * kXs + k;
                const float a[4] = {xr[0], xr[8 * kXs], xr[4], xr[8 * kXs + 4]};
                mma_pair<E>(hi[m], lo[m], a, wf[i]);
            }
        }
#pragma unroll
        for (int m = 0; m < kMt; ++m)
#pragma unroll
            for (int n = 0; n < kNt; ++n) {
                float* d = red + (warp * BM + 16 * m + g) * kCols + 8 * n + 2 * t;
                d[0] = hi[m][n][0] + lo[m][n][0];
                d[1] = hi[m][n][1] + lo[m][n][1];
                d[8 * kCols] = hi[m][n][2] + lo[m][n][2];
                d[8 * kCols + 1] = hi[m][n][3] + lo[m][n][3];
            }
    }
    // W2 rows and W3 have long landed: into shared memory for layer 2 and the tail
    if (tid < kCols * kHiddenPad / 4) reinterpret_cast<float4*>(w2s)[tid] = w2r;
    if (tail_block && tid < kHiddenPad * kOutPad / 4) reinterpret_cast<float4*>(w3s)[tid] = w3r;
    __syncthreads();

    // ---- 3. this block's h1 columns, complete: bias + ReLU over the 14 warps' sums
    if (tid < BM * kCols) {
        float v = b1v;
#pragma unroll
        for (int wp = 0; wp < kWarps; ++wp) v += red[wp * BM * kCols + tid];
        h1s[tid] = relu(v);
        // asked for: the same value into the caller's h1 (this block's kCols columns of its rows)
        if (const int r = tid / kCols, c = kCols * s + tid % kCols; hid.h1 && r < rows && c < kHidden)
            hid.h1[(size_t)(row0 + r) * kHidden + c] = h1s[tid];
    }
    __syncthreads();
    stamp(3);

    // ---- 4. layer-2 partial: h1[:, slice] @ W2[slice rows, :], pushed to the tail block
    // cluster: blocks 1.. push into block 0's inbox (st.async, counted on its mbarrier), block 0
    // writes its own slice in place; else: global scratch
    float* dst = kCluster ? recv : partials + ((size_t)tile * kSlices + s) * BM * kHiddenPad;
    unsigned remote = 0, remote_bar = 0;
    if constexpr (kCluster) {
        if (!x_slices) cluster_wait_acquire();  // phase 0 complete: block 0 is running, its inbox is initialised
        remote = cluster_map_u32(recv + s * BM * kHiddenPad, 0);
        remote_bar = cluster_map_u32(&inbox, 0);
    }
    const int c2 = tid % kHiddenPad;
    for (int r = tid / kHiddenPad; r < BM; r += kRowGroups) {
        float p0 = 0.0f, p1 = 0.0f;
#pragma unroll
        for (int k = 0; k < kCols; k += 2) {
            p0 = fmaf(h1s[r * kCols + k], w2s[k * kHiddenPad + c2], p0);
            p1 = fmaf(h1s[r * kCols + k + 1], w2s[(k + 1) * kHiddenPad + c2], p1);
        }
        if (kCluster && s != 0) st_async_f32(remote + (r * kHiddenPad + c2) * sizeof(float), p0 + p1, remote_bar);
        else dst[r * kHiddenPad + c2] = p0 + p1;
    }
    stamp(4);

    // ---- 5. hand-off: only the tail block goes on
    if constexpr (kCluster) {
        if (s != 0) return;  // nothing reads this block's shared memory; block 0 waits for the bytes
        __syncthreads();     // block 0's own slice
        mbar_wait<true>(&inbox, 0);  // acquire at cluster scope: the others' stores
    } else {
        __threadfence();  // this block's partials visible device-wide before counting in
        __syncthreads();
        if (tid == 0) is_last = atomicAdd(&counters[tile], 1u) == kSlices - 1;
        __syncthreads();
        if (!is_last) return;
        __threadfence();  // order the reads below after every other block's fence + count
    }
    stamp(5);

    // ---- 6. h2 = relu(b2 + sum of the partials)
    const float* parts = kCluster ? recv : partials + (size_t)tile * kSlices * BM * kHiddenPad;
    for (int i = tid; i < BM * kHiddenPad; i += kThreads) {  // i % 112 == tid % 112 (448 = 4 x 112)
        float v = b2v;
#pragma unroll
        for (int p = 0; p < kSlices; ++p)
            v += kCluster ? parts[p * BM * kHiddenPad + i] : __ldcg(parts + p * BM * kHiddenPad + i);
        h2s[i] = relu(v);
        if (const int r = i / kHiddenPad, c = i % kHiddenPad; hid.h2 && r < rows && c < kHidden)
            hid.h2[(size_t)(row0 + r) * kHidden + c] = h2s[i];
    }
    if (!kCluster && tid == 0) counters[tile] = 0;  // ready for the next launch on this stream
    __syncthreads();

    // ---- 7. layer 3: warp w < 12 takes k-quarter w % 4 of rows w / 4, w / 4 + 3, ...; lane = (k half, output)
    const int o = lane % 16, kh = lane / 16;
    if (warp < 12) {
        const int q = warp % 4;
        const float* w3 = w3s + (28 * q + 14 * kh) * kOutPad + o;
        for (int r = warp / 4; r < rows; r += 3) {
            const float* h = h2s + r * kHiddenPad + 28 * q + 14 * kh;
            float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
            for (int k = 0; k < 14; k += 2) {
                a0 = fmaf(h[k], w3[k * kOutPad], a0);
                a1 = fmaf(h[k + 1], w3[(k + 1) * kOutPad], a1);
            }
            float v = a0 + a1;
            v += __shfl_xor_sync(0xffffffffu, v, 16);
            if (kh == 0) logits[(q * BM + r) * kOutPad + o] = v;
        }
    }
    __syncthreads();
    // ---- softmax, one warp per row (both half-warps hold the same row)
    const bool live = o < kOut;
    for (int r = warp; r < rows; r += kWarps) {  // warp-uniform
        float v = b3v;
#pragma unroll
        for (int q = 0; q < 4; ++q) v += logits[(q * BM + r) * kOutPad + o];
        v = live ? v : -INFINITY;
        const float m = float_unorder(__reduce_max_sync(0xffffffffu, float_order(v)));
        const float e = live ? expf(v - m) : 0.0f;
        float sum = e;
#pragma unroll
        for (int off = 8; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        if (kh == 0 && live) out[(size_t)(row0 + r) * kOut + o] = e / sum;
    }
    stamp(6);
}

template <int BM, Engine E, bool kCluster, int kCols>
__global__ void __launch_bounds__(kThreads)
    split_kernel(FusedWeights w, const float* __restrict__ x, const uint8_t* __restrict__ x8, float* __restrict__ out,
                 int batch, float* __restrict__ partials, unsigned* __restrict__ counters, bool x_slices,
                 FusedHidden hid) {
    split_body<BM, E, kCluster, kCols>(w, x, x8, out, batch, partials, counters, x_slices, hid);
}

template <int BM, Engine E, bool kCluster, int kCols>
struct Split {
    using L = SplitSmem<BM, kCols, kCluster>;
    static constexpr auto kernel = split_kernel<BM, E, kCluster, kCols>;
    static constexpr size_t smem = L::floats * sizeof(float);

    static void configure() {
        static bool configured = false;  // one host thread drives the GPU (common.cuh)
        if (configured) return;
        require_smem(smem, "cuda.mlp_fused (" + std::to_string(BM) + "-row tiles)");
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        if (kCluster && L::kSlices > 8)  // clusters of 14 blocks exceed the portable 8
            CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        configured = true;
    }
    static cudaLaunchConfig_t config(int batch, cudaStream_t stream, cudaLaunchAttribute* attr) {
        return make_launch_config(dim3(ceil_div(batch, BM) * L::kSlices), dim3(kThreads), smem, stream,
                                  kCluster ? L::kSlices : 1, attr);
    }
    static void launch(const FusedWeights& w, const void* x, float* out, int batch, const FusedScratch& s,
                       cudaStream_t stream, bool x_slices, bool x_u8, const FusedHidden& hid) {
        // 8-bit x only where the slices load it (this kernel's one load that converts)
        if (x_u8 && !(kCluster && E == Engine::Fma && x_slices))
            throw std::logic_error("cuda.mlp_fused: 8-bit x only by slices over a cluster of FMA tiles");
        configure();
        cudaLaunchAttribute attr[1];
        const cudaLaunchConfig_t cfg = config(batch, stream, attr);
        const FusedInput in = fused_input(x, x_u8);
        CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, w, in.f32, in.u8, out, batch, s.partials, s.counters,
                                      x_slices, hid));
        CUDA_CHECK_LAUNCH("cuda.mlp_fused (split)");
    }
    static int max_clusters() {
        if (!kCluster) return -1;
        configure();
        cudaLaunchAttribute attr[1];
        const cudaLaunchConfig_t cfg = config(L::kSlices * 64, nullptr, attr);
        int n = 0;
        CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, kernel, &cfg));
        return n;
    }
};

// cols x clusters for one (BM, engine); `query`: report max active clusters instead of launching.
template <int BM, Engine E>
int dispatch(const FusedPlan& p, const FusedWeights& w, const void* x, float* out, int batch, const FusedScratch& s,
             cudaStream_t stream, bool query, const FusedHidden& hid) {
    // Per instantiation: whether this binary can use clusters (sm_90).
    static const bool sm90 = cluster_binary(reinterpret_cast<const void*>(split_kernel<BM, E, true, 16>));
    // _cuda.set_fused_clusters(False) turns clusters off: the sm_80-89 path, testable on Hopper.
    const bool cluster = p.cluster && g_clusters_enabled && sm90;
    if (!query) g_used_clusters = cluster;
    auto run = [&](auto split) {
        using S = decltype(split);
        if (query) return S::max_clusters();
        S::launch(w, x, out, batch, s, stream, p.x_slices, p.x_u8, hid);
        return 0;
    };
    if constexpr (BM <= 2) {  // 8 hidden units per block (14 blocks) pay only for tiles of 1-2 rows
        if (p.cols == 8) return cluster ? run(Split<BM, E, true, 8>{}) : run(Split<BM, E, false, 8>{});
    }
    if (p.cols != 16) throw std::invalid_argument("split kernel: 8 hidden units per block only for 1-2 row tiles");
    return cluster ? run(Split<BM, E, true, 16>{}) : run(Split<BM, E, false, 16>{});
}

int split_any(const FusedPlan& p, const FusedWeights& w, const void* x, float* out, int batch, const FusedScratch& s,
              cudaStream_t stream, bool query, const FusedHidden& hid = {}) {
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    if (p.cols != 8 && p.cols != 16) throw std::invalid_argument("split kernel: 8 or 16 hidden units per block");
    if (p.engine == Engine::Fma) {
        switch (p.bm) {
            case 1: return dispatch<1, Engine::Fma>(p, w, x, out, batch, s, stream, query, hid);
            case 2: return dispatch<2, Engine::Fma>(p, w, x, out, batch, s, stream, query, hid);
            case 4: return dispatch<4, Engine::Fma>(p, w, x, out, batch, s, stream, query, hid);
        }
    } else if (p.bm == 16) {
        if (p.engine == Engine::Tf32x3) return dispatch<16, Engine::Tf32x3>(p, w, x, out, batch, s, stream, query, hid);
        return dispatch<16, Engine::Tf32>(p, w, x, out, batch, s, stream, query, hid);
    }
    throw std::invalid_argument("split kernel: no " + std::to_string(p.bm) + "-row tile for this engine");
}

}  // namespace

bool cluster_binary(const void* kernel) {
    int dev = 0, attr = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&attr, cudaDevAttrClusterLaunch, dev));
    cudaFuncAttributes fa{};
    CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
    return attr != 0 && fa.binaryVersion >= 90;
}

bool set_fused_clusters(bool enabled) {
    const bool before = g_clusters_enabled;
    g_clusters_enabled = enabled;
    return before;
}

bool fused_used_clusters() { return g_used_clusters; }
bool fused_clusters_enabled() { return g_clusters_enabled; }

std::pair<size_t, int> fused_scratch_size(int batch) {
    // Any tile size up to 16 rows (ceil(batch / bm) * bm <= batch + 15 rows), up to 14 slices.
    return {(size_t)(batch + 15) * 14 * kHiddenPad, batch};
}

void launch_fused_split(const FusedPlan& plan, const FusedWeights& w, const void* x, float* out, int batch,
                        const FusedScratch& s, cudaStream_t stream, const FusedHidden& hidden) {
    split_any(plan, w, x, out, batch, s, stream, false, hidden);
}

int fused_split_max_clusters(const FusedPlan& plan) {
    return split_any(plan, FusedWeights{}, nullptr, nullptr, 1, FusedScratch{}, nullptr, true);
}

// The whole-network kernels: each name is a FusedKind, which fused_plan (fused_dispatch.cu) turns
// into a design per batch. Order: the order gemmpad lists them in.
GEMMPAD_REGISTER_FUSED("cuda.mlp_fused_3xtf32", "fp32", FusedKind::Fp32Tc,
                       "whole network in one launch on tensor cores at every batch: 3xTF32 mma.sync, layer 1 split by "
                       "columns over a 7-block cluster (by K from 65 rows, row-block kernel for large batches)");
GEMMPAD_REGISTER_FUSED("cuda.mlp_fused_tf32", "tf32", FusedKind::Tf32,
                       "whole network in one launch, one tf32 pass on tensor cores (FMAs for a few rows)");
GEMMPAD_REGISTER_FUSED("cuda.mlp_fused", "fp32", FusedKind::Fp32,
                       "whole network in one launch: layer 1 split by columns over a 7-block cluster, one DSMEM "
                       "hand-off; fp32 FMAs for a few rows, 3xTF32 tensor cores beyond (layer 1 split by K from 65 rows)");

}  // namespace gemmpad::cuda
