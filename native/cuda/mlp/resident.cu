// cuda.mlp_resident: the forward pass without a launch. A persistent kernel polls mapped pinned
// host memory; the host writes x stamped with a sequence number, the kernel computes the network
// and writes the probabilities back, stamped alike (NCCL's low-latency slots: no fence, no flag).
// Change from cuda.mlp_fused's graph replay (a launch + sync floor of ~5.8 us on the H200): no
// launch, no event, no copy engine. The control word and row 0 come in one PCIe round trip. On
// sm_90 a cluster of four blocks holds W1 in shared memory, a quarter each; the leader pushes each
// its quarter of x and collects their layer 1 by st.async on mbarriers. Elsewhere one block reads
// W1's rows for nonzero pixels through L2.
// Limit: two PCIe crossings (the request seen, the answer seen) and three layers' barriers.
// Run: gemmpad bench mlp --kernels cuda.mlp_resident --batches 1
// Profile: not under ncu (it never returns); the kernel's own globaltimer span is kernel_us.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "../ptx/cluster.cuh"
#include "../ptx/mbarrier.cuh"
#include "../support/device.cuh"
#include "fused_common.cuh"
#include "resident.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int kThreads = 512, kWarps = kThreads / 32;
constexpr int kR = kResidentRows;
constexpr int kBlocks = 4;                 // the cluster design: W1's rows dealt in four quarters
constexpr int kQuarter = kIn / kBlocks;    // 196 pixels a block
constexpr int kPolled = kIn / 2;           // threads reading row 0 in the poll, two slots each
constexpr int kChunks = (kIn + 31) / 32;   // one-block design: 25 chunks of 32 pixels for zero skipping
constexpr int kGroups = 4;                 // k-groups of layers 2 and 3 (25 k each)
constexpr int kGroupK = kHidden / kGroups;
constexpr uint64_t kHotNs = 20'000'000;    // after a request, poll x with the control word for 20 ms
static_assert(kBlocks * kQuarter == kIn && kQuarter % 4 == 0 && kPolled <= kThreads, "x splits into quarters");
static_assert(kGroups * kGroupK == kHidden && kGroups * kHiddenPad <= kThreads && kGroups * kR * kOutPad == kThreads,
              "layer 2: a thread per (group, column); layer 3: a thread per (group, row, output)");

// Shared memory (floats): W2 [100][100] | W3 [100][16] | b1 [112] b2 [112] b3 [16] | x [R][784] |
// layer-1 partials [16 warps][R][100] (later layer-2 partials [4][R][112], layer-3 [4][R][16]) |
// the block's layer 1 [R][100] | h1 [R][100] | h2 [R][100] | (cluster design) W1's quarter [196][100] |
// (cluster design, the leader's) the other blocks' layer 1 [3][R][100].
constexpr size_t kW2 = (size_t)kHidden * kHidden, kW3 = (size_t)kHidden * kOutPad, kB = 2 * kHiddenPad + kOutPad;
constexpr size_t kXs = (size_t)kR * kIn, kPart = (size_t)kWarps * kR * kHidden, kH = (size_t)kR * kHidden;
constexpr size_t kW1q = (size_t)kQuarter * kHidden;
static_assert(kPart >= (size_t)kGroups * kR * (kHiddenPad + kOutPad), "layers 2-3 reuse layer 1's partials");
constexpr size_t smem_floats(bool cluster) {
    return kW2 + kW3 + kB + kXs + kPart + 3 * kH + (cluster ? kW1q + (kBlocks - 1) * kH : 0);
}

__device__ __forceinline__ uint64_t ld_volatile_u64(const uint64_t* p) {
    uint64_t v;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void ld_volatile_v2_u64(const uint64_t* p, uint64_t& a, uint64_t& b) {
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}
__device__ __forceinline__ void st_volatile_u64(uint64_t* p, uint64_t v) {
    asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t globaltimer() {
    uint64_t t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
// A control word's rows (resident_control, resident.cuh), clamped to 1..kR.
__device__ __forceinline__ int rows_of(uint64_t control) { return min(max((int)((control >> 32) & 0xff), 1), kR); }
__device__ __forceinline__ uint32_t stamp_of(uint64_t slot) { return (uint32_t)(slot >> 32); }
__device__ __forceinline__ float value_of(uint64_t slot) { return __uint_as_float((uint32_t)slot); }
__device__ __forceinline__ uint64_t slot_of(float v, uint32_t seq) {
    return (uint64_t)seq << 32 | __float_as_uint(v);
}

// The poll's state, in the leader block's shared memory; thread 0 decides, the barriers publish.
struct PollState {
    uint64_t control;    // the control word as last read
    uint64_t hot_until;  // globaltimer: until then x is read with every look at the control word
    uint64_t t_start;    // when the request was taken (the answer's span starts here; at first, the start)
    bool idle_exit;      // no request for idle_exit_ns: return (the host starts the kernel again)
};

// Rows 1..rows-1 of request `seq` into xs (row 0 is there): reads until every slot carries seq.
// false when the host moved on meanwhile (a newer request or stop: the caller polls again).
__device__ bool read_more_rows(const ResidentMailbox* box, uint32_t seq, int rows, float* xs, PollState& st) {
    const int tid = threadIdx.x;
    for (;;) {
        if (tid == 0) st.control = ld_volatile_u64(&box->control);
        bool ok = true;
        for (int i = tid; i < (rows - 1) * kPolled; i += kThreads) {
            uint64_t a, b;
            ld_volatile_v2_u64(&box->x[1][2 * i], a, b);
            ok = ok && stamp_of(a) == seq && stamp_of(b) == seq;
            xs[kIn + 2 * i] = value_of(a);
            xs[kIn + 2 * i + 1] = value_of(b);
        }
        __syncthreads();
        const bool moved = (st.control & kResidentStop) != 0 || (uint32_t)st.control != seq;
        ok = __syncthreads_and(ok);  // also: every thread has read st.control before it is written again
        if (moved) return false;
        if (ok) return true;
    }
}

// Leader block: waits for the next request (or stop) and returns its control word, the request's
// rows in xs. Hot (within kHotNs of the last request): every look reads the control word and row 0
// together, one round trip; the request is taken once row 0's slots all carry the control word's
// sequence number. Cold: thread 0 alone reads the 8-byte control word, with nanosleep between looks,
// so that an idle kernel moves a few bytes a microsecond over PCIe, not kilobytes; after
// idle_exit_ns (0: never) without a request it marks `exited` and returns kResidentStop.
__device__ uint64_t wait_for_request(ResidentMailbox* box, uint32_t seen, float* xs, PollState& st,
                                     uint64_t idle_exit_ns) {
    const int tid = threadIdx.x;
    for (;;) {
        uint64_t a = 0, b = 0;
        if (tid < kPolled) ld_volatile_v2_u64(&box->x[0][2 * tid], a, b);
        if (tid == 0) st.control = ld_volatile_u64(&box->control);
        __syncthreads();
        const uint64_t c = st.control;
        const uint32_t seq = (uint32_t)c;
        const bool stop = (c & kResidentStop) != 0, fresh = seq != seen;
        const bool mine = tid >= kPolled || (stamp_of(a) == seq && stamp_of(b) == seq);
        const bool take = __syncthreads_and(stop || (fresh && mine));
        if (take && stop) return c;
        if (take) {
            if (tid < kPolled) {
                xs[2 * tid] = value_of(a);
                xs[2 * tid + 1] = value_of(b);
            }
            const int rows = rows_of(c);
            if (rows > 1 && !read_more_rows(box, seq, rows, xs, st)) continue;
            if (tid == 0) {
                st.t_start = globaltimer();
                st.hot_until = st.t_start + kHotNs;
            }
            __syncthreads();
            return c;
        }
        if (fresh) continue;  // the request's slots are still on their way: look again at once
        // idle: past the hot window, thread 0 watches the control word alone until something changes
        if (tid == 0 && globaltimer() > st.hot_until) {
            unsigned sleep_ns = 32;
            for (uint64_t w = c; (uint32_t)w == seen && !(w & kResidentStop); w = ld_volatile_u64(&box->control)) {
                if (idle_exit_ns && globaltimer() - st.t_start > idle_exit_ns) {
                    st_volatile_u64(&box->exited, uint64_t{1} << 32 | seen);
                    st.idle_exit = true;
                    break;
                }
                __nanosleep(sleep_ns);
                sleep_ns = min(2 * sleep_ns, 1024u);
            }
            st.hot_until = globaltimer() + kHotNs;  // then one more round trip reads x with it
        }
        __syncthreads();
        if (st.idle_exit) return kResidentStop;
    }
}

// Layer 1 of the block's pixels, one float4 of hidden units per lane (lanes 0-24), summed over the
// block's warps into `l1` [rows][100] (no bias). Cluster design: W1's quarter in shared memory, every
// pixel, warp w taking pixels w, w + 16, ... (a zero test per pixel cost more than it saved: NOTES).
// One-block design: the nonzero pixels (NaN counts; all of them unless skip_zeros: 0 * Inf is NaN)
// compacted so that every warp reads an equal share of W1's rows through L2, eight in flight.
template <bool kCluster>
__device__ void layer1(const float* xs, const float* w1, const float* w1q, float* part, float* l1, int rows,
                       int base, bool skip_zeros) {
    __shared__ unsigned nz_mask[kChunks];
    __shared__ int nz_off[kChunks], nz_total, nz_idx[kCluster ? 1 : kIn];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const bool col_lane = lane < kHidden / 4;
    float4 acc[kR];
#pragma unroll
    for (int r = 0; r < kR; ++r) acc[r] = make_float4(0.f, 0.f, 0.f, 0.f);
    auto fma_row = [&](int k, float4 wv) {
#pragma unroll
        for (int r = 0; r < kR; ++r) {
            if (r >= rows) break;  // uniform
            const float xv = xs[r * kIn + k];
            acc[r].x = fmaf(xv, wv.x, acc[r].x);
            acc[r].y = fmaf(xv, wv.y, acc[r].y);
            acc[r].z = fmaf(xv, wv.z, acc[r].z);
            acc[r].w = fmaf(xv, wv.w, acc[r].w);
        }
    };
    if constexpr (kCluster) {
        constexpr int kSteps = (kQuarter + kWarps - 1) / kWarps;  // 13 pixels a warp
#pragma unroll
        for (int t = 0; t < kSteps; ++t) {
            const int j = warp + kWarps * t;
            if (j < kQuarter && col_lane) fma_row(base + j, reinterpret_cast<const float4*>(w1q + j * kHidden)[lane]);
        }
    } else {
        // the pixels nonzero in some row, compacted into nz_idx in order (a digit's ink sits in the middle chunks)
        for (int c = warp; c < kChunks; c += kWarps) {
            const int i = 32 * c + lane;
            bool nz = !skip_zeros && i < kIn;
            for (int r = 0; r < rows; ++r) nz = nz || (i < kIn && xs[r * kIn + i] != 0.0f);
            const unsigned mask = __ballot_sync(0xffffffffu, nz);
            if (lane == 0) nz_mask[c] = mask;
        }
        __syncthreads();
        if (warp == 0) {  // exclusive prefix sum of the chunks' counts
            const int n = lane < kChunks ? __popc(nz_mask[lane]) : 0;
            int incl = n;
#pragma unroll
            for (int off = 1; off < 32; off *= 2) {
                const int v = __shfl_up_sync(0xffffffffu, incl, off);
                if (lane >= off) incl += v;
            }
            if (lane < kChunks) nz_off[lane] = incl - n;
            if (lane == 31) nz_total = incl;
        }
        __syncthreads();
        for (int c = warp; c < kChunks; c += kWarps) {
            const unsigned mask = nz_mask[c];
            if (mask >> lane & 1u) nz_idx[nz_off[c] + __popc(mask & ((1u << lane) - 1u))] = 32 * c + lane;
        }
        __syncthreads();
        // warp w takes entries w, w + 16, ... of nz_idx, 8 rows of W1 in flight (read-only path)
        const int n_nz = nz_total;
        for (int b0 = warp; b0 < n_nz; b0 += 8 * kWarps) {
            constexpr int kInFlight = 8;
            int k[kInFlight];
            float4 wv[kInFlight];
#pragma unroll
            for (int j = 0; j < kInFlight; ++j) {
                const int e = b0 + j * kWarps;
                k[j] = e < n_nz ? nz_idx[e] : -1;
                wv[j] = k[j] >= 0 && col_lane ? __ldg(reinterpret_cast<const float4*>(w1 + (size_t)k[j] * kHidden) + lane)
                                              : make_float4(0.f, 0.f, 0.f, 0.f);
            }
#pragma unroll
            for (int j = 0; j < kInFlight; ++j) {
                if (k[j] < 0) break;  // warp-uniform
                fma_row(k[j], wv[j]);
            }
        }
    }
    if (col_lane) {
#pragma unroll
        for (int r = 0; r < kR; ++r)
            if (r < rows) reinterpret_cast<float4*>(part + (warp * kR + r) * kHidden)[lane] = acc[r];
    }
    __syncthreads();
    for (int t = tid; t < rows * kHidden; t += kThreads) {
        const int r = t / kHidden, c = t % kHidden;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) v += part[(w * kR + r) * kHidden + c];
        l1[t] = v;
    }
}

// W1 [784][100] row-major; w2 [112][112], w3 [112][16] padded (rows past 100 are not read);
// biases padded. kCluster: launched as one cluster of kBlocks blocks; block 0 (the leader) polls,
// every block computes layer 1 of its quarter, the leader gathers the four and runs layers 2-3.
// seen: the last request already answered (the kernel takes the next one); idle_exit_ns: see
// wait_for_request.
template <bool kCluster>
__global__ void __launch_bounds__(kThreads, 1)
    resident_kernel(ResidentMailbox* box, const float* __restrict__ w1, const float* __restrict__ w2,
                    const float* __restrict__ w3, const float* __restrict__ b1, const float* __restrict__ b2,
                    const float* __restrict__ b3, bool skip_zeros, uint32_t seen, uint64_t idle_exit_ns) {
    extern __shared__ __align__(16) float smem[];
    float* w2s = smem;
    float* w3s = w2s + kW2;
    float* bs = w3s + kW3;  // b1 [112] | b2 [112] | b3 [16]
    float* xs = bs + kB;
    float* part = xs + kXs;
    float* l1 = part + kPart;
    float* h1s = l1 + kH;
    float* h2s = h1s + kH;
    float* w1q = h2s + kH;      // cluster design only
    float* inbox = w1q + kW1q;  // cluster design, the leader's: blocks 1-3's layer 1
    __shared__ PollState st;
    __shared__ __align__(16) uint32_t cmd[4];  // the request's control word: low half, high half
    // cluster design: the leader's B counts the others' layer 1 (st.async bytes); the others' C and X
    // count the control word and their quarter of x, pushed by the leader
    __shared__ __align__(8) uint64_t bar_b, bar_c, bar_x;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const unsigned rank = kCluster ? cluster_rank() : 0;
    const bool leader = rank == 0;
    const int base = kCluster ? kQuarter * (int)rank : 0;  // this block's first pixel
    constexpr int kQuads = kQuarter / 4;                   // float4s of x in a quarter row

    // ---- once: W2, W3, the biases (and the cluster design's W1 quarter) into shared memory
    for (int i = tid; i < (int)kW2; i += kThreads) w2s[i] = w2[i / kHidden * kHiddenPad + i % kHidden];
    for (int i = tid; i < (int)kW3; i += kThreads) w3s[i] = w3[i];
    for (int i = tid; i < (int)kB; i += kThreads)
        bs[i] = i < kHiddenPad ? b1[i] : i < 2 * kHiddenPad ? b2[i - kHiddenPad] : b3[i - 2 * kHiddenPad];
    if constexpr (kCluster)
        for (int i = tid; i < (int)kW1q; i += kThreads) w1q[i] = w1[(size_t)base * kHidden + i];
    if (tid == 0) {
        st.t_start = globaltimer();
        st.hot_until = st.t_start + kHotNs;
        st.idle_exit = false;
        if constexpr (kCluster) {
            mbar_init(&bar_b, 1);
            mbar_init(&bar_c, 1);
            mbar_init(&bar_x, 1);
            mbar_init_fence();
            if (!leader) mbar_expect_tx(&bar_c, sizeof cmd);  // the first request's control word
        }
    }
    __syncthreads();
    if constexpr (kCluster) {  // every block runs, its barriers set, before any writes into another
        cluster_arrive_release();
        cluster_wait_acquire();
    }
    unsigned phase = 0;  // cluster design: parity of the barriers' current phase (one per request)

    for (;;) {
        // ---- the request: the leader polls, then pushes the control word and each quarter of x to
        // the block that owns it (st.async, counted on that block's mbarriers); the others wait
        if (leader) {
            const uint64_t c = wait_for_request(box, seen, xs, st, idle_exit_ns);
            if (tid == 0) {
                cmd[0] = (uint32_t)c;
                cmd[1] = (uint32_t)(c >> 32);
            }
            if constexpr (kCluster) {
                const int n = (c & kResidentStop) ? 0 : rows_of(c) * kQuads;
                if (tid == 0 && n) mbar_expect_tx(&bar_b, (kBlocks - 1) * (n / kQuads) * kHidden * sizeof(float));
                for (int i = tid; i < (kBlocks - 1) * n; i += kThreads) {
                    const unsigned b = 1 + i / n;
                    const int off = (i % n / kQuads) * kIn + kQuarter * b + 4 * (i % kQuads);
                    st_async_v4_f32(cluster_map_u32(xs + off, b), reinterpret_cast<const float4*>(xs)[off / 4],
                                    cluster_map_u32(&bar_x, b));
                }
                if (tid > 0 && tid < kBlocks) {
                    const float4 v = make_float4(__uint_as_float((uint32_t)c), __uint_as_float((uint32_t)(c >> 32)),
                                                 0.0f, 0.0f);
                    st_async_v4_f32(cluster_map_u32(cmd, tid), v, cluster_map_u32(&bar_c, tid));
                }
            }
        } else if constexpr (kCluster) {
            if (warp == 0) mbar_wait<true>(&bar_c, phase);
        }
        __syncthreads();  // the control word is in cmd
        stamp(0);  // (phase marks: fused_common.cuh)
        const uint64_t control = (uint64_t)cmd[1] << 32 | cmd[0];
        if (control & kResidentStop) {
            if constexpr (kCluster) {  // no block leaves while another may still write into it
                cluster_arrive_relaxed();
                cluster_wait_acquire();
            }
            return;
        }
        const uint32_t req = (uint32_t)control;
        const int rows = rows_of(control);
        const bool want_hidden = (control & kResidentHidden) != 0;

        // ---- layer 1 of this block's pixels; the others wait for their quarter of x first
        if constexpr (kCluster) {
            if (!leader) {
                if (tid == 0) {
                    mbar_expect_tx(&bar_x, rows * kQuads * sizeof(float4));
                    mbar_expect_tx(&bar_c, sizeof cmd);  // the next request's control word (a new phase)
                }
                if (warp == 0) mbar_wait<true>(&bar_x, phase);
                __syncthreads();
            }
        }
        stamp(1);
        layer1<kCluster>(xs, w1, w1q, part, l1, rows, base, skip_zeros);
        __syncthreads();
        stamp(2);
        if constexpr (kCluster) {
            if (!leader) {  // layer 1 into the leader's inbox; done until the next request
                float* slot = inbox + (rank - 1) * kH;
                for (int t = tid; t < rows * kHidden / 4; t += kThreads)
                    st_async_v4_f32(cluster_map_u32(slot + 4 * t, 0), reinterpret_cast<const float4*>(l1)[t],
                                    cluster_map_u32(&bar_b, 0));
                phase ^= 1;
                seen = req;
                continue;
            }
            if (warp == 0) mbar_wait<true>(&bar_b, phase);  // the others' layer 1 has arrived
            phase ^= 1;
            __syncthreads();
        }
        stamp(3);
        // h1 = relu(b1 + the blocks' layer 1)
        for (int t = tid; t < rows * kHidden / 4; t += kThreads) {
            const int c = 4 * (t % (kHidden / 4));
            float4 v = reinterpret_cast<const float4*>(l1)[t];
            if constexpr (kCluster) {
#pragma unroll
                for (int b = 0; b < kBlocks - 1; ++b) {
                    const float4 o = reinterpret_cast<const float4*>(inbox + b * kH)[t];
                    v.x += o.x;
                    v.y += o.y;
                    v.z += o.z;
                    v.w += o.w;
                }
            }
            v = make_float4(relu(bs[c] + v.x), relu(bs[c + 1] + v.y), relu(bs[c + 2] + v.z), relu(bs[c + 3] + v.w));
            reinterpret_cast<float4*>(h1s)[t] = v;
        }
        __syncthreads();
        stamp(4);

        // ---- layer 2: thread (g, c) sums k in group g for column c of every row; then h2 = relu(b2 + sum)
        float* p2 = part;  // [4][R][112], columns past 100 unused
        if (tid < kGroups * kHiddenPad && tid % kHiddenPad < kHidden) {
            const int g = tid / kHiddenPad, c = tid % kHiddenPad;
            for (int r = 0; r < rows; ++r) {
                float a0 = 0.0f, a1 = 0.0f;
#pragma unroll 5
                for (int k = g * kGroupK; k < (g + 1) * kGroupK - 1; k += 2) {
                    a0 = fmaf(h1s[r * kHidden + k], w2s[k * kHidden + c], a0);
                    a1 = fmaf(h1s[r * kHidden + k + 1], w2s[(k + 1) * kHidden + c], a1);
                }
                const int k = (g + 1) * kGroupK - 1;  // 25 k per group: the odd one
                a0 = fmaf(h1s[r * kHidden + k], w2s[k * kHidden + c], a0);
                p2[(g * kR + r) * kHiddenPad + c] = a0 + a1;
            }
        }
        __syncthreads();
        for (int t = tid; t < rows * kHidden; t += kThreads) {
            const int r = t / kHidden, c = t % kHidden;
            float v = bs[kHiddenPad + c];
#pragma unroll
            for (int g = 0; g < kGroups; ++g) v += p2[(g * kR + r) * kHiddenPad + c];
            h2s[t] = relu(v);
        }
        __syncthreads();

        stamp(5);
        // ---- layer 3: thread (g, r, o); then softmax, warp r for row r (both half-warps hold it)
        float* p3 = part + kGroups * kR * kHiddenPad;  // [4][R][16], apart from p2 (no barrier between)
        {
            const int g = tid / (kR * kOutPad), r = (tid / kOutPad) % kR, o = tid % kOutPad;
            if (r < rows) {
                float a = 0.0f;
                for (int k = g * kGroupK; k < (g + 1) * kGroupK; ++k) a = fmaf(h2s[r * kHidden + k], w3s[k * kOutPad + o], a);
                p3[(g * kR + r) * kOutPad + o] = a;
            }
        }
        __syncthreads();
        if (warp < rows) {
            const int r = warp, o = lane % kOutPad;
            const bool live = o < kOut;
            float v = bs[2 * kHiddenPad + o];
#pragma unroll
            for (int g = 0; g < kGroups; ++g) v += p3[(g * kR + r) * kOutPad + o];
            v = live ? v : -INFINITY;
            const float m = float_unorder(__reduce_max_sync(0xffffffffu, float_order(v)));  // NaN wins, as NumPy
            const float e = live ? expf(v - m) : 0.0f;
            float sum = e;
#pragma unroll
            for (int off = 8; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
            if (lane < kOut) st_volatile_u64(&box->probs[r][lane], slot_of(e / sum, req));
        }
        if (want_hidden) {
            for (int t = tid; t < rows * kHidden; t += kThreads) {
                st_volatile_u64(&box->h1[0][0] + t, slot_of(h1s[t], req));
                st_volatile_u64(&box->h2[0][0] + t, slot_of(h2s[t], req));
            }
        }
        stamp(6);
        // ---- the span, stamped like the rest (the host waits for every slot it reads, in any order)
        if (tid == 0) st_volatile_u64(&box->span, (uint64_t)req << 32 | (uint32_t)(globaltimer() - st.t_start));
        seen = req;
    }
}

// Every Resident whose kernel runs, process-wide (stop_all_residents). Lock order: g_mu, then a
// Resident's own mutex; forward() takes only its own.
std::mutex g_mu;
std::vector<Resident*> g_running;

void unregister(Resident* r) {
    g_running.erase(std::remove(g_running.begin(), g_running.end(), r), g_running.end());
}

}  // namespace

void stop_all_residents() noexcept {
    std::lock_guard<std::mutex> lock(g_mu);
    for (Resident* r : g_running) {
        try {
            r->halt(2.0);
        } catch (...) {  // timed out: it is abandoned; what the caller frees next may then wait
        }
    }
    g_running.clear();
}

// Every buffer's free and pinned allocation, in the whole module, stops resident kernels first.
const FreeGuard g_previous_free_guard = set_free_guard(stop_all_residents);

// Listed after the fused kernels (source order); Mlp::forward routes the name here before any plan.
GEMMPAD_REGISTER_FUSED("cuda.mlp_resident", "fp32", FusedKind::Resident,
                       "a persistent kernel polling mapped host memory, no launch per call (sm_90: a cluster of "
                       "four blocks holding W1; else one block); fp32 FMAs, 8 rows per request. It returns after "
                       "1 s without a request: while it runs, OpenGL on the same GPU loses a timeslice every frame");

Resident::Resident(const float* w1, const float* w2, const float* w3, const float* b1, const float* b2,
                   const float* b3, bool skip_zeros, bool clusters, double idle_exit_s)
    : idle_exit_s_(idle_exit_s), w1_(w1), w2_(w2), w3_(w3), b1_(b1), b2_(b2), b3_(b3), skip_zeros_(skip_zeros) {
    const size_t cluster_smem = smem_floats(true) * sizeof(float), block_smem = smem_floats(false) * sizeof(float);
    try {
        if (!(idle_exit_s >= 0.0 && idle_exit_s < 1e6)) throw std::invalid_argument("idle_exit_s must be in [0, 1e6)");
        static bool configured = false;  // one host thread drives the GPU (common.cuh)
        if (!configured) {
            if (cluster_smem <= max_smem_per_block_optin())
                CUDA_CHECK(cudaFuncSetAttribute(resident_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                (int)cluster_smem));
            if (block_smem <= max_smem_per_block_optin())
                CUDA_CHECK(cudaFuncSetAttribute(resident_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                (int)block_smem));
            configured = true;
        }
        const void* cluster_kernel = reinterpret_cast<const void*>(resident_kernel<true>);
        blocks_ = clusters && cluster_binary(cluster_kernel) && cluster_smem <= max_smem_per_block_optin() &&
                          resident_clusters(cluster_kernel, kThreads, cluster_smem, kBlocks) > 0
                      ? kBlocks
                      : 1;
        smem_ = blocks_ > 1 ? cluster_smem : block_smem;
        require_smem(smem_, "cuda.mlp_resident");
        mailbox_.reserve(sizeof(ResidentMailbox));  // stops every resident kernel first (the free guard)
        box_ = static_cast<ResidentMailbox*>(mailbox_.ptr);
        dbox_ = static_cast<ResidentMailbox*>(mailbox_.device);
        std::memset(box_, 0, sizeof(ResidentMailbox));
        CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));  // never waits on other work
        launch(0);  // requests are numbered from 1 (forward)
        running_ = true;
        std::lock_guard<std::mutex> lock(g_mu);
        g_running.push_back(this);
    } catch (...) {
        if (stream_) cudaStreamDestroy(stream_);
        mailbox_.release();
        throw;
    }
}

void Resident::launch(uint32_t seen) {
    const uint64_t idle_ns = (uint64_t)(idle_exit_s_ * 1e9);
    if (blocks_ > 1) {
        cudaLaunchAttribute attr[1];
        const cudaLaunchConfig_t cfg = make_launch_config(dim3(kBlocks), dim3(kThreads), smem_, stream_, dim3(kBlocks), attr);
        CUDA_CHECK(cudaLaunchKernelEx(&cfg, resident_kernel<true>, dbox_, w1_, w2_, w3_, b1_, b2_, b3_, skip_zeros_, seen,
                                      idle_ns));
    } else {
        resident_kernel<false><<<1, kThreads, smem_, stream_>>>(dbox_, w1_, w2_, w3_, b1_, b2_, b3_, skip_zeros_, seen,
                                                                idle_ns);
    }
    CUDA_CHECK_LAUNCH("cuda.mlp_resident");
}

void Resident::restart_if_idle() {
    const uint64_t exited = __atomic_load_n(&box_->exited, __ATOMIC_ACQUIRE);
    if (!exited) return;
    CUDA_CHECK(cudaStreamSynchronize(stream_));  // it has returned, or is about to
    __atomic_store_n(&box_->exited, 0, __ATOMIC_RELAXED);
    launch((uint32_t)exited);  // after the last request it answered: a pending one is taken again
}

Resident::~Resident() {
    try {
        stop();
    } catch (...) {  // reported by stop() to whoever called it; a destructor must not throw
    }
    if (!abandoned_) {
        if (stream_) cudaStreamDestroy(stream_);
        mailbox_.release();  // stops every other resident kernel first: the free may wait for them
    }
}

void Resident::check_alive(const char* waiting_for) {
    const cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaErrorNotReady) return;  // still running, as it should
    if (e == cudaSuccess && idle()) {    // it idled out as the request came: start it again, it takes the request
        restart_if_idle();
        return;
    }
    running_ = false;
    CUDA_CHECK(e);  // the kernel failed: CUDA's error
    throw CudaError(cudaErrorLaunchFailure,
                    std::string("cuda.mlp_resident: the resident kernel ended while ") + waiting_for);
}

void Resident::stop(double timeout_s) {
    std::lock_guard<std::mutex> lock(g_mu);
    unregister(this);
    halt(timeout_s);
}

void Resident::halt(double timeout_s) {
    std::lock_guard<std::mutex> lock(mu_);  // after a forward() in flight on another thread
    if (!running_) return;
    control_ |= kResidentStop;
    __atomic_store_n(&box_->control, control_, __ATOMIC_RELEASE);
    const auto t_end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
        const cudaError_t e = cudaStreamQuery(stream_);
        if (e != cudaErrorNotReady) {
            running_ = false;
            CUDA_CHECK(e);
            return;
        }
        if (std::chrono::steady_clock::now() > t_end) {
            running_ = false;
            abandoned_ = true;  // the kernel may still read the mailbox: never free it
            throw CudaError(cudaErrorTimeout, "cuda.mlp_resident: the resident kernel did not stop within " +
                                                  std::to_string(timeout_s) + " s (is the GPU hung?)");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

namespace {

// Row `src` [784] into the mailbox's slots, each stamped with `seq` (16-byte stores where x86 has them).
void write_slots(ResidentSlot* dst, const float* src, uint32_t seq) {
#if defined(__x86_64__)
    const __m128i stamp = _mm_set1_epi32((int)seq);
    for (int i = 0; i < kIn; i += 4) {
        const __m128i v = _mm_castps_si128(_mm_loadu_ps(src + i));
        _mm_store_si128(reinterpret_cast<__m128i*>(dst + i), _mm_unpacklo_epi32(v, stamp));
        _mm_store_si128(reinterpret_cast<__m128i*>(dst + i + 2), _mm_unpackhi_epi32(v, stamp));
    }
#else
    for (int i = 0; i < kIn; ++i) __atomic_store_n(dst + i, resident_slot(src[i], seq), __ATOMIC_RELAXED);
#endif
}

// Whether slots [0, n) all carry `seq`; if so their values go to `out` (when not null).
bool read_slots(const ResidentSlot* src, int n, uint32_t seq, float* out) {
    for (int i = 0; i < n; ++i)
        if ((uint32_t)(__atomic_load_n(src + i, __ATOMIC_RELAXED) >> 32) != seq) return false;
    if (out)
        for (int i = 0; i < n; ++i) {
            const uint32_t bits = (uint32_t)__atomic_load_n(src + i, __ATOMIC_RELAXED);
            std::memcpy(out + i, &bits, sizeof bits);
        }
    return true;
}

}  // namespace

double Resident::forward(const float* x, float* out, int batch, float* h1, float* h2, double timeout_s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_)  // stopped by stop_all_residents (another object freed memory): Mlp starts a new one
        throw ResidentStopped("cuda.mlp_resident: the resident kernel is not running");
    const bool hidden = h1 || h2;
    double gpu_us = 0.0;
    for (int row0 = 0; row0 < batch; row0 += kR) {
        const int rows = std::min(kR, batch - row0);
        restart_if_idle();  // it returned after idling: start it again (a launch, the weights' load)
        const uint32_t seq = ++seq_ == 0 ? ++seq_ : seq_;  // 0 never names a request
        for (int r = 0; r < rows; ++r) write_slots(box_->x[r], x + (size_t)(row0 + r) * kIn, seq);
        control_ = resident_control(seq, rows, hidden);
        __atomic_store_n(&box_->control, control_, __ATOMIC_RELEASE);  // after x (x86: stores in order)
        // spin ~20 us (an answer takes a few), then yield the core between looks
        const auto t0 = std::chrono::steady_clock::now();
        const auto spin_end = t0 + std::chrono::microseconds(20);
        const auto t_end = t0 + std::chrono::duration<double>(timeout_s);
        auto answered = [&] {
            return read_slots(&box_->span, 1, seq, nullptr) && read_slots(box_->probs[0], rows * kOut, seq, nullptr) &&
                   (!hidden || (read_slots(box_->h1[0], rows * kHidden, seq, nullptr) &&
                                read_slots(box_->h2[0], rows * kHidden, seq, nullptr)));
        };
        for (unsigned n = 1; !answered(); ++n) {
            if (n % 64 == 0) {
                const auto now = std::chrono::steady_clock::now();
                if (now > spin_end) {
                    check_alive("a request was pending");
                    if (now > t_end)
                        throw CudaError(cudaErrorTimeout, "cuda.mlp_resident: no answer within " +
                                                              std::to_string(timeout_s) + " s (is the GPU hung?)");
                    std::this_thread::yield();
                }
            }
#if defined(__x86_64__) || defined(__i386__)
            _mm_pause();
#endif
        }
        // every slot read carries seq: the kernel writes a request's slots once
        read_slots(box_->probs[0], rows * kOut, seq, out + (size_t)row0 * kOut);
        if (h1) read_slots(box_->h1[0], rows * kHidden, seq, h1 + (size_t)row0 * kHidden);
        if (h2) read_slots(box_->h2[0], rows * kHidden, seq, h2 + (size_t)row0 * kHidden);
        gpu_us += (uint32_t)__atomic_load_n(&box_->span, __ATOMIC_RELAXED) * 1e-3;
    }
    return gpu_us;
}

}  // namespace gemmpad::cuda
