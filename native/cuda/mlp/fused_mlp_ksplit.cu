// The medium and large batches of the fused kernels (cuda.mlp_fused,
// cuda.mlp_fused_tf32, cuda.mlp_fused_3xtf32; sm_90 with clusters): layer 1
// split by K over a 7-block thread-block cluster, every layer's partial sums
// handed across the cluster by st.async, the clusters looping over row tiles.
//
// What changed (from fused_mlp_tc.cu, where one block owns whole rows and so
// reads all of W1, 351 KB, for every 32 rows, and from fused_mlp.cu's split
// kernel, whose 7 blocks each read the whole x tile):
//   * Block s of a cluster owns K slice 112s..112s+111 of layer 1: its warps'
//     B fragments (W1, 50 KB per block; 25 KB as fp16 for tf32, see below) are
//     loaded into registers ONCE and serve every row tile the cluster takes;
//     per tile a block reads only its 112 columns of x (BM x 448 bytes).
//   * Three hand-offs per tile, each by st.async into an inbox of the owner,
//     counted on the owner's mbarrier (no cluster barrier): block p owns
//     hidden units 16p..16p+15. Layer 1: warp p of every block pushes its
//     [BM,16] partial to block p, which sums the 7, adds the bias, ReLU.
//     Layer 2: block p multiplies its 16 columns of h1 by W2's rows 16p.., and
//     pushes the [BM,16] piece of pair q to block q. Layer 3: each block's
//     [BM,16] partial logits go to the tile's tail block (tiles take turns),
//     which runs the softmax.
//   * Inboxes are reused tile after tile without a barrier: a block can only
//     send tile i+1's partials after it has received tile i's layer-2 pieces
//     from every block, and each block sends those only after it has read its
//     layer-1 inbox of tile i (the same holds one stage later). So an mbarrier
//     phase per tile is enough; a phase's bytes may arrive before its owner
//     announces them (the transaction count may go negative meanwhile).
//   * The next tile's x slice is requested (cp.async) while this one's hand-offs run.
// Why it should be faster: per SM, the bytes to bring in drop from 351 KB (W1)
// + x rows to 50 KB + a slice of x, and the SMs that hold a cluster run it in
// parallel; the hand-offs move BM x 16 floats per warp.
//
// Measured (H200, driver 580.159.04, CUDA 13.0, 2026-11-23; native/tools/mlp_probe.cu "rows"
// mode: CUDA events around one graph-launched kernel, x in device memory, median of 200; an
// empty kernel 2.5 us the same way), kernel us at batch 16 / 128 / 256 / 512 / 1024 / 4096:
//   bm16 3xTF32  7.30 /  7.52 / 10.69 / 14.08 / 20.19 / 60.06   tf32  6.37 /  6.62 /  9.41 / 11.84 / 16.96 / 49.06
//   bm32 3xTF32  8.96 /  9.31 /  9.38 / 14.46 / 19.78 / 50.05   tf32  7.65 /  7.97 /  7.94 / 12.13 / 16.51 / 41.28
//   bm64 3xTF32 12.86 / 13.66 / 13.73 / 13.76 / 23.39 / 52.83   tf32 10.02 / 10.62 / 10.85 / 10.85 / 17.63 / 39.30
//   same run, fused_mlp_tc.cu's row-block kernel, 16-row tiles: 3xTF32 16.42 at 128, 16.48 at 256,
//   16.64 at 512, 16.99 at 1024; tf32 10.40, 10.46, 10.69, 10.78; at 4096 (32-row tiles) 25.22 / 15.49.
//   The earlier probe of the split kernel (fused_mlp.cu, 16-row 3xTF32 tiles) at 256: 10.88.
// So fused_plan takes the smallest tile whose tiles all fit in one wave of clusters (15 clusters
// of 7 at once on the H200: 16 rows up to 240, 32 to 480, 64 to 960) and the row-block kernel
// beyond: every extra wave costs ~3-10 us, three hand-offs in a row per tile.
// Then tf32 two blocks per SM (__launch_bounds__(224, 2): 134-172 -> 122-126 registers, no spills;
// at 134, four warps of a sub-partition needed more than its 16K registers): 32 clusters of 16- and
// 32-row tiles at once (64-row tiles stay at 15, shared memory). Same probe, 2026-11-23 (later run),
// tf32 at 16 / 64 / 128 / 256 / 512 / 1024 / 2048 / 4096:
//   bm16  6.43 / 6.66 / 6.62 /  7.33 /  7.87 / 10.85 / 16.86 / 28.32  (at 256: 9.41 before)
//   bm32  7.84 / 8.03 / 8.19 /  8.32 /  9.82 / 10.72 / 15.81 / 26.11
// so batch 256 runs 16-row tiles in one wave (bench: tf32 8.1 -> 7.4 us kernel); 3xTF32 needs ~240
// registers and keeps one block per SM.
// globaltimer trace (latest block, ns after the first block starts; tf32):
//   bm16, batch 16:  x in 1056, layer 1 done 1472, h1 in 1856, h2 in 2464, logits in 2848, end 3616
//   bm32, batch 256: x in 1344, layer 1 done 2080, h1 in 2688, h2 in 3552, logits in 4128, end 5216
//   bm64, batch 512: x in 1504, layer 1 done 2784, h1 in 3840, h2 in 5472, logits in 6304, end 8064
//   (3xTF32 bm64: layer 1 done 5984.) Each hand-off with its sums costs 0.4-1.7 us, and the
//   first bytes of x take ~1 us to arrive while W1's 50 KB per block stream in beside them.
// First version: biases read from global memory inside each sum and a one-thread-per-row
// softmax; loading them into registers first, a half-warp per row, and ldmatrix for the A
// fragments (fused_common.cuh, also used by the row-block kernel: tf32 17.1 -> 15.9 us there
// at 4096) took bm32 tf32 at batch 256 from 8.51 to 7.94 us. Two warps per column pair (14 warps,
// splitting layer 1's k-steps) measured slower at every batch (bm32 tf32 at 256: 8.70 vs 8.42)
// and were dropped.
// Short of the inference issue's 5 us at batch 256: ~5.4 us of the 7.9 are the chain above,
// on top of the empty-kernel floor.
// Then (2026-11-23, later): the tail's softmax with 8 lanes per row for 16-row tiles and 4 for
// 32- and 64-row ones (16 lanes before: two passes over a 16-row tile, its shuffles in series),
// sum_inbox by float2 / float4 (one pass over 16- and 32-row tiles), and the biases in shared
// memory (the wider sums' biases in registers made tf32 spill). A/B in one device call, probe
// "rows" mode, x copied in + an empty kernel, two rounds each, us at batch 16 / 128 / 256 /
// 1024 / 4096 (old in brackets):
//   bm16 tf32: 6.11-6.30 / 6.30-6.50 / 7.30-7.39 / 10.72 / 26.2
//              (6.46-6.53 / 6.75-6.78 / 7.42-7.49 / 11.17-11.23 / 28.6)
//   bm32 3xTF32 at 256: 8.96-9.06 (9.41-9.50); bm32 tf32 at 256: 7.55-7.78 (8.32-8.45);
//   bm64 3xTF32 at 512: 13.38-13.50 (13.92-14.02). Trace, bm16 tf32 at batch 16: logits in -> end
//   512 ns (768).
// Tried and dropped the same day: ONE hand-off instead of three. Tiles of 14 rows per m-tile (mma
// rows 7 and 15 padding), so that lane group g of every warp holds two rows of block g alone; after
// layer 1 each block receives its rows' partials from the 7 and finishes layers 2 and 3 by itself,
// W2 and W3 in its shared memory (multicast over the cluster, 1/7 of them per block from L2).
// Layers 2-3 on CUDA cores: layer 2 alone took ~1 us in the trace, tf32 at 256 9.15 us (this
// kernel 7.39 in the same run); on tensor cores (each warp a 14-k-step chain for its column pair):
// 770 ns, 8.93 us (7.36); 3xTF32 in 28-row tiles at 256: 10.11 (32-row tiles 9.25). The owner's
// chain of 14 dependent mma costs more than the two hand-offs it saves (2 k-steps each).
// Also tried and dropped: W1's slice by 7 bulk copies into shared memory for 16-row tiles (B
// fragments from there by LDS.128; bulk copies measured up to 2.5x the per-SM rate of 16-byte
// loads). Same A/B method, two rounds: tf32 at 16 / 256 / 512 6.27-6.53 / 7.74-7.87 / 8.90-8.93
// (registers: 6.05-6.27 / 7.14-7.39 / 7.87-7.94); trace at 16: layer 1 done 640 ns after x is in
// (416 from registers), x no sooner. Freed of W1's 56 registers, 3xTF32 fit in 124 and ran two
// blocks per SM, its 16-row tiles at 256 in one wave: 8.90-8.96, no better than 32-row tiles with
// W1 in registers (8.90-8.93).
// What the loads cost, and what is left without them (H200, 2026-11-23, evening): the probe built
// three more times, with W1's loads replaced by register constants, with x's loads dropped, and
// with both (results wrong, timing only); kernel us, x in device memory, medians of 300, two rounds
// (the second with a slower clock: empty kernel 2.59 / 2.69 us):
//   bm16 tf32 at 256  as built 7.20 / 7.68, no W1 loads 6.66 / 6.78-6.82, no x loads 7.30-7.33 / 6.98-7.10
//   bm16 tf32 at 16   6.11 / 6.75, 5.82 / 6.14, 6.30-6.43 / 6.08
//   bm32 3xTF32 at 256  8.96-8.99 / 9.41-9.44, 8.58 / 8.74-8.77, 8.90-9.22 / 8.74-8.77
// (neither: bm16 tf32 at 256 7.07-7.71 / 6.69-7.26, empty kernel 3.20 / 2.72: no less than "no W1
// loads"). Trace, bm16 tf32 at 256 (latest block, ns): x in 1536, layer 1 done 2080, h1 in 2560,
// h2 in 3264, logits in 3648, end 4224. So W1's 50 KB per block hold up layer 1 by ~0.5 us at 256
// (x's 7 KB stream beside them), and without any loads the kernel still measures ~6.7 us: the
// three hand-offs, their sums and the softmax (~2.7 us after x is in) on top of the launch floor
// leave the inference issue's 5 us out of reach for this design, whatever the loads.
// Then (same evening): for tf32 tiles of 16 and 32 rows W1 comes as fp16 (mlp.cu's tf32_as_half:
// tf32-rounded weights are exact in fp16 after a power-of-two scale), 25 KB per block, widened at
// use; 64-row tiles keep fp32 (ptxas spilled 136 bytes). On one m-tile, tf32's odd k-steps go to a
// second accumulator: four chains of dependent mma per warp, not two. A/B in one device call (HEAD
// and this file, probe "rows" mode, x copied in + an empty kernel, two rounds), us at 128 / 256 /
// 512 / 1024:
//   bm16 tf32  6.24 / 7.04-7.10 / 7.74-7.78 / 10.66-10.72   (before: 6.37-6.43 / 7.23-7.36 / 7.90-8.00 / 10.82-10.91)
//   bm32 tf32  7.39-7.49 / 7.52-7.58 / 9.12-9.15 / 9.98     (before: 7.46-7.68 / 7.52-7.68 / 9.41-9.57 / 10.30-10.43)
//   bm32 3xTF32, code unchanged, at 256: 8.83-8.90 (before: 8.96-9.06): the drift between builds.
// Worst error of the tf32 paths over the probe's batches unchanged (1.69e-4); memcheck and
// racecheck clean over every k-split variant.
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
// h1 and h2 slices [BM][20].
template <int BM>
struct KSmem {
    static constexpr size_t xs = (size_t)BM * kXs, inbox = (size_t)kC * BM * 16, h = (size_t)BM * kPs;
    static constexpr size_t floats = 2 * xs + 3 * inbox + 2 * h;
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
template <int BM, Engine E>
__global__ void __launch_bounds__(kThreads, E == Engine::Tf32 ? 2 : 1)
    ksplit_kernel(FusedWeights w, const float* __restrict__ x, float* __restrict__ out, int batch) {
    constexpr int kMt = BM / 16;  // m-tiles
    using L = KSmem<BM>;
    extern __shared__ __align__(16) float smem[];
    float* xbuf = smem;
    float* in1 = smem + 2 * L::xs;
    float* in2 = in1 + L::inbox;
    float* in3 = in2 + L::inbox;
    float* h1s = in3 + L::inbox;
    float* h2s = h1s + L::h;
    __shared__ __align__(8) uint64_t bar[3];  // the three inboxes' arrivals, one phase per tile
    __shared__ float bias[48];                // b1 and b2 of this block's 16 hidden units, b3 (padded to 16)

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int pair = warp;
    const int s = blockIdx.x % kC;  // cluster rank (clusters run along x)
    const int first = blockIdx.x / kC, stride = gridDim.x / kC, tiles = (batch + BM - 1) / BM;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    {  // launched without its cluster (never by this file): fail, do not hang
        unsigned n;
        asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
        if (n != kC) __trap();
    }
#endif
    stamp(0);
    if (tid == 0) {
        for (auto& b : bar) mbar_init(&b, 1);
        mbar_init_fence();
    }
    __syncthreads();
    cluster_arrive_relaxed();  // "this block runs and its inboxes are set up"; waited for before the first push

    // this block's 112 columns of x for the rows of `tile` (rows past the batch read as 0)
    auto load_x = [&](int tile, float* dst) {
        const int row0 = tile * BM, rows = min(BM, batch - row0);
        for (int i = tid; i < BM * (kSliceK / 4); i += kThreads) {
            const int r = i / (kSliceK / 4), q = i % (kSliceK / 4);
            const bool valid = r < rows;
            cp_async16(dst + r * kXs + 4 * q, x + (size_t)(row0 + (valid ? r : 0)) * kIn + s * kSliceK + 4 * q,
                       valid ? 16 : 0);
        }
        cp_async_commit();
    };
    load_x(first, xbuf);
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
        if (tile + stride < tiles) load_x(tile + stride, xbuf + ((it + 1) & 1) * L::xs);

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

using KernelFn = void (*)(FusedWeights, const float*, float*, int);

template <int BM, Engine E>
struct KSplit {
    static constexpr KernelFn kernel = ksplit_kernel<BM, E>;
    static constexpr size_t smem = KSmem<BM>::floats * sizeof(float);

    static void configure() {
        static bool configured = false;  // one host thread drives the GPU (common.cuh)
        if (configured) return;
        require_smem(smem, "cuda.mlp_fused (k-split, " + std::to_string(BM) + "-row tiles)");
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
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
    static int launch(const FusedWeights& w, const float* x, float* out, int batch, cudaStream_t stream, bool query) {
        if (query) return max_clusters();
        const int fit = max_clusters();
        if (fit < 1) throw std::runtime_error("cuda.mlp_fused (k-split): no cluster of 7 blocks fits on this device");
        const int n = std::min((batch + BM - 1) / BM, fit);
        cudaLaunchAttribute attr[1];
        const cudaLaunchConfig_t cfg = make_launch_config(dim3(kC * n), dim3(kThreads), smem, stream, kC, attr);
        CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, w, x, out, batch));
        CUDA_CHECK_LAUNCH(E == Engine::Tf32 ? "cuda.mlp_fused_tf32 (k-split)" : "cuda.mlp_fused (k-split, 3xTF32)");
        return 0;
    }
};

template <Engine E>
int ksplit_engine(const FusedPlan& p, const FusedWeights& w, const float* x, float* out, int batch,
                  cudaStream_t stream, bool query) {
    if (p.bm == 16) return KSplit<16, E>::launch(w, x, out, batch, stream, query);
    if (p.bm == 32) return KSplit<32, E>::launch(w, x, out, batch, stream, query);
    if (p.bm == 64) return KSplit<64, E>::launch(w, x, out, batch, stream, query);
    throw std::invalid_argument("k-split kernel: tiles of 16, 32 or 64 rows");
}

int ksplit_any(const FusedPlan& p, const FusedWeights& w, const float* x, float* out, int batch, cudaStream_t stream,
               bool query) {
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    if (p.engine == Engine::Tf32x3) return ksplit_engine<Engine::Tf32x3>(p, w, x, out, batch, stream, query);
    if (p.engine == Engine::Tf32) return ksplit_engine<Engine::Tf32>(p, w, x, out, batch, stream, query);
    throw std::invalid_argument("the k-split kernel runs on tensor cores only");
}

}  // namespace

void launch_fused_ksplit(const FusedPlan& plan, const FusedWeights& w, const float* x, float* out, int batch,
                         cudaStream_t stream) {
    ksplit_any(plan, w, x, out, batch, stream, false);
}

bool fused_ksplit_available() {
    static const bool ok = cluster_binary(reinterpret_cast<const void*>(KSplit<16, Engine::Tf32>::kernel)) &&
                           KSplit<16, Engine::Tf32>::max_clusters() > 0;
    return ok;
}

#ifdef GEMMPAD_MLP_TRACE
void ksplit_trace_read(unsigned long long* host) { trace_read(host); }
void ksplit_trace_clear() { trace_clear(); }
#endif

int fused_ksplit_max_clusters(const FusedPlan& plan) {
    return ksplit_any(plan, FusedWeights{}, nullptr, nullptr, 1, nullptr, true);
}

}  // namespace gemmpad::cuda
