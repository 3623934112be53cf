// cuda.mlp_fused / _tf32 / _3xtf32, k-split design (65-960 rows on the H200, sm_90): layer 1 split
// by K over a 7-block thread-block cluster that loops over row tiles.
// Change from fused_mlp_tc.cu (each block reads all 351 KB of W1 per 32 rows): block s keeps its K slice
// of W1 (50 KB) in registers for every tile and reads only its 112 columns of x; three st.async
// hand-offs per tile into owners' inboxes counted on mbarriers, no cluster barrier.
// Limit: the three hand-offs, their sums and the softmax (~2.7 us after x is in).
// Run: gemmpad bench mlp --kernels cuda.mlp_fused --batches 256
// Profile: ncu -k regex:ksplit_kernel gemmpad bench mlp --kernels cuda.mlp_fused --batches 256
// Figure (H200 2026-12-01, assets/benchmarks/h200/bench-mlp.json): batch 256, kernel / end to end: cuda.mlp_fused 10.3 / 55.8 us, torch CUDA graph 28.0 / 133.9 us
#include <algorithm>
#include <type_traits>

#include "fused_common.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int kC = kPairs;                 // 7 blocks per cluster = K slices = owners of 16 hidden units
constexpr int kSliceK = kIn / kC;          // 112 columns of x per block
constexpr int kSliceSteps = kSliceK / 8;   // 14 k-steps
constexpr int kXs = kSliceK + 4;           // x slice row stride: 116 = 20 (mod 32), conflict-free A fragments
constexpr int kPs = 16 + 4;                // h1 / h2 slice row stride: 20 (mod 32), likewise
constexpr int kThreads = kPairs * 32;      // warp p serves column pair p
static_assert(kC * kSliceK == kIn, "K splits evenly");

// Shared memory (floats): x slice [2][BM][116] (double buffer) | three inboxes [7 senders][BM][16] |
// h1 and h2 slices [BM][20] | 8-bit x slice [2][BM][112 bytes] (FusedPlan::x_u8; the same occupancy
// with or without it, so always there).
template <int BM>
struct KSmem {
    static constexpr size_t xs = (size_t)BM * kXs, inbox = (size_t)kC * BM * 16, h = (size_t)BM * kPs,
                            x8 = (size_t)BM * kSliceK / 4;
    static constexpr size_t floats = 2 * xs + 3 * inbox + 2 * h + 2 * x8;
    static constexpr unsigned inbox_bytes = (unsigned)(inbox * sizeof(float));
};

// This warp's accumulators (m-tiles m0.. of a [BM,16] piece) as hi + lo into `dst` (a shared::cluster
// address of a [BM][16] block), counted on `bar` there.
template <int kMt>
__device__ __forceinline__ void push(const float (&hi)[kMt][2][4], const float (&lo)[kMt][2][4], unsigned dst, int m0,
                                     unsigned bar) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int m = 0; m < kMt; ++m)
#pragma unroll
        for (int n = 0; n < 2; ++n) {
            const unsigned d = dst + ((16 * (m0 + m) + g) * 16 + 8 * n + 2 * t) * sizeof(float);
            st_async_v2_f32(d, hi[m][n][0] + lo[m][n][0], hi[m][n][1] + lo[m][n][1], bar);
            st_async_v2_f32(d + 8 * 16 * sizeof(float), hi[m][n][2] + lo[m][n][2], hi[m][n][3] + lo[m][n][3], bar);
        }
}

// dst[r][c] = relu(bias[c] + the senders' inbox[.][r][c]) for a [BM,16] slice, NaN kept as quiet_nan.
// A thread sums V adjacent columns, one vector load per sender: V = 2 lets one pass cover a 16-row
// tile, 4 a 32-row one (64-row tiles: 3 passes).
template <int BM, int kSenders>
__device__ __forceinline__ void sum_inbox(const float* inbox, const float* bias, float* dst) {
    constexpr int V = BM == 16 ? 2 : 4;
    using Vec = std::conditional_t<V == 2, float2, float4>;
    static_assert(kThreads * V % 16 == 0, "the same columns in every pass");
    for (int i = threadIdx.x * V; i < BM * 16; i += kThreads * V) {
        float v[V];
#pragma unroll
        for (int c = 0; c < V; ++c) v[c] = bias[i % 16 + c];
#pragma unroll
        for (int p = 0; p < kSenders; ++p) {
            const Vec a = *reinterpret_cast<const Vec*>(inbox + p * BM * 16 + i);
            const float* f = reinterpret_cast<const float*>(&a);
#pragma unroll
            for (int c = 0; c < V; ++c) v[c] += f[c];
        }
#pragma unroll
        for (int c = 0; c < V; ++c) dst[(i / 16) * kPs + i % 16 + c] = quiet_nan(relu(v[c]));
    }
}

// The caller's hidden layer (FusedHidden: [batch][100], or nullptr) gets this block's [rows,16]
// slice `src` (a sum_inbox result, after the barrier behind it), hidden units col0.. below 100.
// Read back from shared memory once layer 3 is out rather than stored inside sum_inbox or right
// after it: there the extra addresses made the tf32 64-row tile spill 4 bytes (it holds W1's
// fragments in registers across tiles).
template <int BM>
__device__ __forceinline__ void store_slice(const float* src, float* hout, int tile, int batch, int col0) {
    if (!hout) return;
    const int row0 = tile * BM, rows = min(BM, batch - row0);
    for (int i = threadIdx.x; i < rows * 16; i += kThreads)
        if (col0 + i % 16 < kHidden) hout[(size_t)(row0 + i / 16) * kHidden + col0 + i % 16] = src[(i / 16) * kPs + i % 16];
}

// A k-step of B fragments as fp32: as loaded (float4), or four fp16 values times `scale` (uint2).
__device__ __forceinline__ float4 fragment(const float4 b, float) { return b; }
__device__ __forceinline__ float4 fragment(const uint2 b, float scale) {
    const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&b.x)),
                 hi = __half22float2(*reinterpret_cast<const __half2*>(&b.y));
    return make_float4(lo.x * scale, lo.y * scale, hi.x * scale, hi.y * scale);
}

// hi/lo += m-tiles m0.. of the k-step at column k0 of `src` times b, step i of a chain. tf32 on one
// m-tile (which writes only `hi` otherwise): odd steps into `lo`, so that four chains of dependent
// mma run side by side, not two (push() and the caller add hi and lo). More m-tiles have chains
// enough, and their `lo` would cost registers (tf32 keeps to 128); 3xTF32 keeps its two chains
// (fused_common.cuh's mma_pair).
template <int kMt, Engine E>
__device__ __forceinline__ void mma_step(float (&hi)[kMt][2][4], float (&lo)[kMt][2][4], const float* src, int ld,
                                         int m0, int k0, const float4 b, int i) {
    if (E == Engine::Tf32 && kMt == 1 && i % 2) mma_rows<kMt, E>(lo, hi, src, ld, m0, k0, b);
    else mma_rows<kMt, E>(hi, lo, src, ld, m0, k0, b);
}

// tf32: two blocks per SM (ptxas keeps it to 128 registers without spilling; 134 before), so twice
// the clusters fit in one wave. 3xTF32 needs ~240 registers: one block per SM.
// kHid: a build that also stores the hidden layers (FusedHidden) when asked; a separate
// instantiation, because in the tf32 64-row tile the stores alone cost a 4-byte spill.
template <int BM, Engine E, bool kHid>
__global__ void __launch_bounds__(kThreads, E == Engine::Tf32 ? 2 : 1)
    ksplit_kernel(FusedWeights w, const float* __restrict__ x, const uint8_t* __restrict__ x8, float* __restrict__ out,
                  int batch, FusedHidden hid) {
    constexpr int kMt = BM / 16;  // m-tiles
    using L = KSmem<BM>;
    extern __shared__ __align__(16) float smem[];
    float* xbuf = smem;
    float* in1 = smem + 2 * L::xs;
    float* in2 = in1 + L::inbox;
    float* in3 = in2 + L::inbox;
    float* h1s = in3 + L::inbox;
    float* h2s = h1s + L::h;
    uint8_t* bytes = reinterpret_cast<uint8_t*>(h2s + L::h);  // [2][BM][112], 8-bit x only
    __shared__ __align__(8) uint64_t bar[3];  // the three inboxes' arrivals, one phase per tile
    __shared__ float bias[48];                // b1 and b2 of this block's 16 hidden units, b3 (padded to 16)

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int pair = warp;
    const int s = blockIdx.x % kC;  // cluster rank (clusters run along x)
    const int first = blockIdx.x / kC, stride = gridDim.x / kC, tiles = (batch + BM - 1) / BM;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    {  // launched without its cluster (never by this file): fail, do not hang
        if (cluster_size() != kC) __trap();
    }
#endif
    stamp(0);
    if (tid == 0) {
        for (auto& b : bar) mbar_init(&b, 1);
        mbar_init_fence();
    }
    __syncthreads();
    cluster_arrive_relaxed();  // "this block runs and its inboxes are set up"; waited for before the first push

    // this block's 112 columns of x for the rows of `tile` into buffer `buf` (rows past the batch
    // read as 0). 8-bit x (x8: FusedPlan::x_u8, copied to the device) lands as bytes and to_floats
    // makes the x slice of them once it is in: no conversion kernel ahead of this one.
    auto load_x = [&](int tile, int buf) {
        const int row0 = tile * BM, rows = min(BM, batch - row0);
        if (x8) {
            for (int i = tid; i < BM * (kSliceK / 16); i += kThreads) {
                const int r = i / (kSliceK / 16), q = i % (kSliceK / 16);
                const bool valid = r < rows;
                cp_async16(bytes + (buf * BM + r) * kSliceK + 16 * q,
                           x8 + (size_t)(row0 + (valid ? r : 0)) * kIn + s * kSliceK + 16 * q, valid ? 16 : 0);
            }
        } else {
            float* dst = xbuf + buf * L::xs;
            for (int i = tid; i < BM * (kSliceK / 4); i += kThreads) {
                const int r = i / (kSliceK / 4), q = i % (kSliceK / 4);
                const bool valid = r < rows;
                cp_async16(dst + r * kXs + 4 * q, x + (size_t)(row0 + (valid ? r : 0)) * kIn + s * kSliceK + 4 * q,
                           valid ? 16 : 0);
            }
        }
        cp_async_commit();
    };
    auto to_floats = [&](int buf) {  // 8-bit x slice -> x slice (pixel_floats), then a barrier
        const unsigned* src = reinterpret_cast<const unsigned*>(bytes + buf * BM * kSliceK);
        float* dst = xbuf + buf * L::xs;
        for (int i = tid; i < BM * (kSliceK / 4); i += kThreads) {
            const int r = i / (kSliceK / 4), q = i % (kSliceK / 4);
            *reinterpret_cast<float4*>(dst + r * kXs + 4 * q) = pixel_floats(src[i]);
        }
        __syncthreads();
    };
    load_x(first, 0);
    if (tid < 48)
        bias[tid] = __ldg(tid < 16 ? w.b1 + 16 * s + tid : tid < 32 ? w.b2 + 16 * s + tid - 16 : w.b3 + tid - 32);
    // B fragments, kept in registers for every tile: W1 (this pair, this block's 14 k-steps; tf32 in
    // 16- and 32-row tiles: as fp16, 8 bytes per lane and k-step; with 64 rows ptxas then spilled),
    // W2 (pair `pair`, k-steps 2s and 2s + 1: this block's 16 hidden units), W3 (k-steps 2s, 2s + 1)
    constexpr bool kHalfW1 = E == Engine::Tf32 && BM <= 32;
    using W1Frag = std::conditional_t<kHalfW1, uint2, float4>;
    W1Frag w1r[kSliceSteps];
    float4 w2r[2], w3r[2];
    {
        const W1Frag* w1 = static_cast<const W1Frag*>(kHalfW1 ? w.w1h : static_cast<const void*>(w.w1f)) +
                           ((size_t)pair * kKSteps1 + s * kSliceSteps) * 32 + lane;
#pragma unroll
        for (int i = 0; i < kSliceSteps; ++i) w1r[i] = __ldg(w1 + i * 32);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            w2r[j] = __ldg(reinterpret_cast<const float4*>(w.w2f) + ((size_t)pair * kKSteps2 + 2 * s + j) * 32 + lane);
            w3r[j] = __ldg(reinterpret_cast<const float4*>(w.w3f) + (size_t)(2 * s + j) * 32 + lane);
        }
    }
    // softmax: kLanes lanes per row, as few as let one pass cover 16- and 32-row tiles
    constexpr int kLanes = BM <= 16 ? 8 : 4, kPerLane = 16 / kLanes;
    const unsigned bar1_to = cluster_map_u32(&bar[0], pair);
    const unsigned in1_to = cluster_map_u32(in1 + s * BM * 16, pair);
    const unsigned bar2_to = cluster_map_u32(&bar[1], pair), in2_to = cluster_map_u32(in2 + s * BM * 16, pair);

    int it = 0;
    for (int tile = first; tile < tiles; tile += stride, ++it) {
        const int row0 = tile * BM, rows = min(BM, batch - row0), tail = it % kC;
        const float* xs = xbuf + (it & 1) * L::xs;
        if (tid == 0) {  // this tile's phase of each inbox this block owns: 7 senders x [BM,16]
            mbar_expect_tx(&bar[0], L::inbox_bytes);
            mbar_expect_tx(&bar[1], L::inbox_bytes);
            if (s == tail) mbar_expect_tx(&bar[2], L::inbox_bytes);
        }
        cp_async_wait<0>();
        __syncthreads();  // the x slice is in; the other buffer is free
        if (it == 0) stamp(1);
        if (tile + stride < tiles) load_x(tile + stride, (it + 1) & 1);
        if (x8) to_floats(it & 1);

        // ---- layer 1: this block's K slice for pair `pair`, pushed to block `pair`
        float hi[kMt][2][4], lo[kMt][2][4];
        zero(hi);
        zero(lo);
#pragma unroll
        for (int i = 0; i < kSliceSteps; ++i) mma_step<kMt, E>(hi, lo, xs, kXs, 0, 8 * i, fragment(w1r[i], w.w1h_scale), i);
        if (it == 0) {  // every block of the cluster runs, inboxes initialised
            stamp(2);
            cluster_wait_acquire();
            stamp(3);
        }
        push(hi, lo, in1_to, 0, bar1_to);
        mbar_wait<true>(&bar[0], it & 1);
        if (it == 0) stamp(4);
        sum_inbox<BM, kC>(in1, bias, h1s);
        __syncthreads();

        // ---- layer 2: h1[:, 16s..] x W2[16s.., pair], pushed to block `pair`
        zero(hi);
        zero(lo);
#pragma unroll
        for (int j = 0; j < 2; ++j) mma_step<kMt, E>(hi, lo, h1s, kPs, 0, 8 * j, w2r[j], j);
        push(hi, lo, in2_to, 0, bar2_to);
        mbar_wait<true>(&bar[1], it & 1);
        if (it == 0) stamp(5);
        sum_inbox<BM, kC>(in2, bias + 16, h2s);
        __syncthreads();

        // ---- layer 3: h2[:, 16s..] x W3[16s.., :] for m-tile `warp`, pushed to the tail block
        if (warp < BM / 16) {
            float h3[1][2][4], l3[1][2][4];
            zero(h3);
            zero(l3);
#pragma unroll
            for (int j = 0; j < 2; ++j) mma_step<1, E>(h3, l3, h2s, kPs, warp, 8 * j, w3r[j], j);
            push(h3, l3, cluster_map_u32(in3 + s * BM * 16, tail), warp, cluster_map_u32(&bar[2], tail));
        }
        // asked for: this block's slices of both hidden layers, read back from shared memory (the
        // next writes to h1s / h2s come after the next tile's first barrier)
        if constexpr (kHid) {
            store_slice<BM>(h1s, hid.h1, tile, batch, 16 * s);
            store_slice<BM>(h2s, hid.h2, tile, batch, 16 * s);
        }
        if (s != tail) continue;
        // ---- tail: logits = b3 + the 7 partials; softmax, kLanes lanes per row (lane i: outputs i, i + kLanes, ..)
        mbar_wait<true>(&bar[2], (it / kC) & 1);
        if (it == 0) stamp(6);
        for (int r0 = 0; r0 < BM; r0 += kThreads / kLanes) {  // the same trip count for every lane: whole-warp shuffles
            const int r = r0 + tid / kLanes;
            float v[kPerLane], m = -INFINITY;
#pragma unroll
            for (int k = 0; k < kPerLane; ++k) {
                const int o = tid % kLanes + kLanes * k;
                v[k] = -INFINITY;
                if (r < rows && o < kOut) {
                    v[k] = bias[32 + o];
#pragma unroll
                    for (int p = 0; p < kC; ++p) v[k] += in3[(p * BM + r) * 16 + o];
                }
                m = fmaxf(m, v[k]);
            }
#pragma unroll
            for (int off = kLanes / 2; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
            float e[kPerLane], sum = 0.0f;
#pragma unroll
            for (int k = 0; k < kPerLane; ++k) sum += e[k] = v[k] == -INFINITY ? 0.0f : expf(v[k] - m);
#pragma unroll
            for (int off = kLanes / 2; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
#pragma unroll
            for (int k = 0; k < kPerLane; ++k)
                if (const int o = tid % kLanes + kLanes * k; r < rows && o < kOut)
                    out[(size_t)(row0 + r) * kOut + o] = e[k] / sum;
        }
    }
    stamp(7);
}

using KernelFn = void (*)(FusedWeights, const float*, const uint8_t*, float*, int, FusedHidden);

template <int BM, Engine E>
struct KSplit {
    static constexpr KernelFn kernel = ksplit_kernel<BM, E, false>;
    static constexpr KernelFn kernel_hidden = ksplit_kernel<BM, E, true>;
    static constexpr size_t smem = KSmem<BM>::floats * sizeof(float);

    static void configure() {
        static bool configured = false;  // one host thread drives the GPU (common.cuh)
        if (configured) return;
        require_smem(smem, "cuda.mlp_fused (k-split, " + std::to_string(BM) + "-row tiles)");
        for (KernelFn k : {kernel, kernel_hidden})
            CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        configured = true;
    }
    static int max_clusters() {
        static int n = -1;
        if (n < 0) {
            configure();
            cudaLaunchAttribute attr[1];
            const cudaLaunchConfig_t cfg = make_launch_config(dim3(kC * 64), dim3(kThreads), smem, nullptr, kC, attr);
            CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, kernel, &cfg));
        }
        return n;
    }
    static int launch(const FusedWeights& w, const void* x, bool x_u8, float* out, int batch, cudaStream_t stream,
                      bool query, const FusedHidden& hid) {
        if (query) return max_clusters();
        const int fit = max_clusters();
        if (fit < 1) throw std::runtime_error("cuda.mlp_fused (k-split): no cluster of 7 blocks fits on this device");
        const int n = std::min((batch + BM - 1) / BM, fit);
        cudaLaunchAttribute attr[1];
        const cudaLaunchConfig_t cfg = make_launch_config(dim3(kC * n), dim3(kThreads), smem, stream, kC, attr);
        // (the clusters loop over the tiles: any grid is correct, and the hidden build fits as many)
        const FusedInput in = fused_input(x, x_u8);
        CUDA_CHECK(cudaLaunchKernelEx(&cfg, hid.h1 || hid.h2 ? kernel_hidden : kernel, w, in.f32, in.u8, out,
                                      batch, hid));
        CUDA_CHECK_LAUNCH(E == Engine::Tf32 ? "cuda.mlp_fused_tf32 (k-split)" : "cuda.mlp_fused (k-split, 3xTF32)");
        return 0;
    }
};

template <Engine E>
int ksplit_engine(const FusedPlan& p, const FusedWeights& w, const void* x, float* out, int batch,
                  cudaStream_t stream, bool query, const FusedHidden& hid) {
    if (p.bm == 16) return KSplit<16, E>::launch(w, x, p.x_u8, out, batch, stream, query, hid);
    if (p.bm == 32) return KSplit<32, E>::launch(w, x, p.x_u8, out, batch, stream, query, hid);
    if (p.bm == 64) return KSplit<64, E>::launch(w, x, p.x_u8, out, batch, stream, query, hid);
    throw std::invalid_argument("k-split kernel: tiles of 16, 32 or 64 rows");
}

int ksplit_any(const FusedPlan& p, const FusedWeights& w, const void* x, float* out, int batch, cudaStream_t stream,
               bool query, const FusedHidden& hid = {}) {
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    if (p.engine == Engine::Tf32x3) return ksplit_engine<Engine::Tf32x3>(p, w, x, out, batch, stream, query, hid);
    if (p.engine == Engine::Tf32) return ksplit_engine<Engine::Tf32>(p, w, x, out, batch, stream, query, hid);
    throw std::invalid_argument("the k-split kernel runs on tensor cores only");
}

}  // namespace

void launch_fused_ksplit(const FusedPlan& plan, const FusedWeights& w, const void* x, float* out, int batch,
                         cudaStream_t stream, const FusedHidden& hidden) {
    ksplit_any(plan, w, x, out, batch, stream, false, hidden);
}

bool fused_ksplit_available() {
    static const bool ok = cluster_binary(reinterpret_cast<const void*>(KSplit<16, Engine::Tf32>::kernel)) &&
                           KSplit<16, Engine::Tf32>::max_clusters() > 0;
    return ok;
}

int fused_ksplit_max_clusters(const FusedPlan& plan) {
    return ksplit_any(plan, FusedWeights{}, nullptr, nullptr, 1, nullptr, true);
}

}  // namespace gemmpad::cuda
