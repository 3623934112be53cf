// cuda.mlp_resident: the forward pass without a launch. One block stays resident on one SM and
// polls a word in mapped pinned host memory; the host writes x and bumps it, the block computes
// the whole network and writes the probabilities back into the same mapped memory.
// Change from cuda.mlp_fused's graph replay (a launch + sync floor of ~5.8 us on the H200): no
// launch, no event, no copy engine; one PCIe read of x and posted writes of the answer. W2, W3 and
// the biases live in shared memory for the kernel's lifetime; W1 rows are read only for nonzero
// pixels (a drawn digit is ~80 % zeros), through the read-only cache, which keeps the hot ones.
// Limit: the PCIe round trip (a poll sees the request ~0.5-1 us after the host writes it) and
// the dependent steps of three layers in one block.
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

#include "fused_common.cuh"
#include "resident.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int kThreads = 512, kWarps = kThreads / 32;
constexpr int kR = kResidentRows;
constexpr int kChunks = (kIn + 31) / 32;  // 25 chunks of 32 pixels for layer 1's zero skipping
constexpr int kGroups = 4;                 // k-groups of layers 2 and 3 (25 k each)
constexpr int kGroupK = kHidden / kGroups;
static_assert(kGroups * kGroupK == kHidden && kGroups * kHiddenPad <= kThreads && kGroups * kR * kOutPad == kThreads,
              "layer 2: a thread per (group, column); layer 3: a thread per (group, row, output)");

// Shared memory (floats): W2 [100][112] | W3 [100][16] | b1 [112] b2 [112] b3 [16] | x [R][784] |
// layer-1 partials [16 warps][R][100] (later layer-2 partials [4][R][112], layer-3 [4][R][16]) |
// h1 [R][100] | h2 [R][100].
constexpr size_t kW2 = (size_t)kHidden * kHiddenPad, kW3 = (size_t)kHidden * kOutPad, kB = 2 * kHiddenPad + kOutPad;
constexpr size_t kXs = (size_t)kR * kIn, kPart = (size_t)kWarps * kR * kHidden, kH = (size_t)kR * kHidden;
static_assert(kPart >= (size_t)kGroups * kR * (kHiddenPad + kOutPad), "layers 2-3 reuse layer 1's partials");
constexpr size_t kSmemFloats = kW2 + kW3 + kB + kXs + kPart + 2 * kH;

__device__ __forceinline__ uint64_t load_acquire_sys(const uint64_t* p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void store_release_sys(uint32_t* p, uint32_t v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint64_t globaltimer() {
    uint64_t t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}

// W1 [784][100] row-major; w2 [112][112], w3 [112][16] padded (rows past 100 are not read);
// biases padded. skip_zeros: every W1 row is finite, so a zero pixel may be skipped (0 * Inf is NaN).
__global__ void __launch_bounds__(kThreads, 1)
    resident_kernel(ResidentMailbox* box, const float* __restrict__ w1, const float* __restrict__ w2,
                    const float* __restrict__ w3, const float* __restrict__ b1, const float* __restrict__ b2,
                    const float* __restrict__ b3, bool skip_zeros) {
    extern __shared__ __align__(16) float smem[];
    float* w2s = smem;
    float* w3s = w2s + kW2;
    float* bs = w3s + kW3;  // b1 [112] | b2 [112] | b3 [16]
    float* xs = bs + kB;
    float* part = xs + kXs;
    float* h1s = part + kPart;
    float* h2s = h1s + kH;
    __shared__ uint32_t cmd[3];  // request (0: stop), rows, hidden
    __shared__ unsigned nz_mask[kChunks];  // layer 1: which pixels of each 32-pixel chunk are visited
    __shared__ int nz_off[kChunks], nz_total, nz_idx[kIn];
    __shared__ uint64_t t_start;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

    // ---- once: W2, W3 and the biases into shared memory
    for (int i = tid; i < (int)kW2; i += kThreads) w2s[i] = w2[i];
    for (int i = tid; i < (int)kW3; i += kThreads) w3s[i] = w3[i];
    for (int i = tid; i < (int)kB; i += kThreads)
        bs[i] = i < kHiddenPad ? b1[i] : i < 2 * kHiddenPad ? b2[i - kHiddenPad] : b3[i - 2 * kHiddenPad];
    uint32_t seen = 0;  // requests are numbered from 1 (Resident::forward)

    for (;;) {
        // ---- wait: thread 0 polls the request word (PCIe reads pace it; nanosleep backs off while idle)
        if (tid == 0) {
            unsigned sleep_ns = 0;
            for (;;) {
                const uint64_t v = load_acquire_sys(&box->control);  // one PCIe read per look
                if (v & kResidentStop) {
                    cmd[0] = 0;
                    break;
                }
                if ((uint32_t)v != seen) {
                    t_start = globaltimer();
                    cmd[0] = (uint32_t)v;
                    cmd[1] = min(max((int)((v >> 32) & 0xff), 1), kR);
                    cmd[2] = (v & kResidentHidden) != 0;
                    break;
                }
                if (sleep_ns) __nanosleep(sleep_ns);
                sleep_ns = min(max(2 * sleep_ns, 32u), 256u);  // at most ~0.25 us added to an answer
            }
        }
        __syncthreads();  // also: the previous request's reads of cmd are done (see the end of the loop)
        const uint32_t req = cmd[0];
        if (req == 0) return;
        const int rows = (int)cmd[1];
        const bool want_hidden = cmd[2] != 0;

        // ---- x: every row of the request in flight at once (uncached: the host rewrote it); idle rows zero
        {
            constexpr int kQuads = kIn / 4;
            const float4* src = reinterpret_cast<const float4*>(box->x);
            for (int i = tid; i < kR * kQuads; i += kThreads) {
                const float4 v = i / kQuads < rows ? __ldcv(src + i) : make_float4(0.f, 0.f, 0.f, 0.f);
                reinterpret_cast<float4*>(xs)[i] = v;
            }
        }
        __syncthreads();

        // ---- layer 1, step 1: the pixels nonzero in some row (NaN counts as nonzero; all of them when
        // zeros may not be skipped), compacted into nz_idx in order, so that every warp gets an equal
        // share of W1 rows to read (a digit's ink sits in the middle chunks)
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

        // ---- layer 1, step 2: warp w takes entries w, w + 16, ... of nz_idx, 8 rows of W1 in flight
        // per step (read-only path: the hot rows stay in L1); lane l < 25 owns hidden units 4l..4l+3
        float4 acc[kR];
#pragma unroll
        for (int r = 0; r < kR; ++r) acc[r] = make_float4(0.f, 0.f, 0.f, 0.f);
        const bool col_lane = lane < kHidden / 4;
        const int n_nz = nz_total;
        for (int base = warp; base < n_nz; base += 8 * kWarps) {
            constexpr int kInFlight = 8;
            int k[kInFlight];
            float4 wv[kInFlight];
#pragma unroll
            for (int j = 0; j < kInFlight; ++j) {
                const int e = base + j * kWarps;
                k[j] = e < n_nz ? nz_idx[e] : -1;
                wv[j] = k[j] >= 0 && col_lane ? __ldg(reinterpret_cast<const float4*>(w1 + (size_t)k[j] * kHidden) + lane)
                                              : make_float4(0.f, 0.f, 0.f, 0.f);
            }
#pragma unroll
            for (int j = 0; j < kInFlight; ++j) {
                if (k[j] < 0) break;  // warp-uniform
#pragma unroll
                for (int r = 0; r < kR; ++r) {
                    if (r >= rows) break;  // uniform
                    const float xv = xs[r * kIn + k[j]];
                    acc[r].x = fmaf(xv, wv[j].x, acc[r].x);
                    acc[r].y = fmaf(xv, wv[j].y, acc[r].y);
                    acc[r].z = fmaf(xv, wv[j].z, acc[r].z);
                    acc[r].w = fmaf(xv, wv[j].w, acc[r].w);
                }
            }
        }
        if (col_lane) {
#pragma unroll
            for (int r = 0; r < kR; ++r) reinterpret_cast<float4*>(part + (warp * kR + r) * kHidden)[lane] = acc[r];
        }
        __syncthreads();
        for (int t = tid; t < rows * kHidden; t += kThreads) {  // h1 = relu(b1 + the warps' partials)
            const int r = t / kHidden, c = t % kHidden;
            float v = bs[c];
#pragma unroll
            for (int w = 0; w < kWarps; ++w) v += part[(w * kR + r) * kHidden + c];
            h1s[t] = relu(v);
        }
        __syncthreads();

        // ---- layer 2: thread (g, c) sums k in group g for column c of every row; then h2 = relu(b2 + sum)
        float* p2 = part;  // [4][R][112]
        if (tid < kGroups * kHiddenPad) {
            const int g = tid / kHiddenPad, c = tid % kHiddenPad;
            for (int r = 0; r < rows; ++r) {
                float a0 = 0.0f, a1 = 0.0f;
#pragma unroll 5
                for (int k = g * kGroupK; k < (g + 1) * kGroupK - 1; k += 2) {
                    a0 = fmaf(h1s[r * kHidden + k], w2s[k * kHiddenPad + c], a0);
                    a1 = fmaf(h1s[r * kHidden + k + 1], w2s[(k + 1) * kHiddenPad + c], a1);
                }
                const int k = (g + 1) * kGroupK - 1;  // 25 k per group: the odd one
                a0 = fmaf(h1s[r * kHidden + k], w2s[k * kHiddenPad + c], a0);
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
            if (lane < kOut) box->probs[r * kOut + lane] = e / sum;
        }
        if (want_hidden) {
            for (int t = tid; t < rows * kHidden; t += kThreads) {
                box->h1[t] = h1s[t];
                box->h2[t] = h2s[t];
            }
        }
        // ---- answer: every store above, then `done`. The system-scope fence is cumulative (PTX memory
        // model): the block's stores ordered before it by the barrier reach the host before `done` does.
        __syncthreads();
        if (tid == 0) {
            box->gpu_ns = globaltimer() - t_start;
            __threadfence_system();
            store_release_sys(&box->done, req);
        }
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
                       "a persistent one-block kernel polling mapped host memory: no launch per call; zero pixels "
                       "skipped, fp32 FMAs, 8 rows per request");

Resident::Resident(const float* w1, const float* w2, const float* w3, const float* b1, const float* b2,
                   const float* b3, bool skip_zeros) {
    const size_t smem = kSmemFloats * sizeof(float);
    try {
        require_smem(smem, "cuda.mlp_resident");
        static bool configured = false;  // one host thread drives the GPU (common.cuh)
        if (!configured) {
            CUDA_CHECK(cudaFuncSetAttribute(resident_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            configured = true;
        }
        mailbox_.reserve(sizeof(ResidentMailbox));  // stops every resident kernel first (the free guard)
        box_ = static_cast<ResidentMailbox*>(mailbox_.ptr);
        dbox_ = static_cast<ResidentMailbox*>(mailbox_.device);
        std::memset(box_, 0, sizeof(ResidentMailbox));
        CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));  // never waits on other work
        resident_kernel<<<1, kThreads, smem, stream_>>>(dbox_, w1, w2, w3, b1, b2, b3, skip_zeros);
        CUDA_CHECK_LAUNCH("cuda.mlp_resident");
        running_ = true;
        std::lock_guard<std::mutex> lock(g_mu);
        g_running.push_back(this);
    } catch (...) {
        if (stream_) cudaStreamDestroy(stream_);
        mailbox_.release();
        throw;
    }
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

double Resident::forward(const float* x, float* out, int batch, float* h1, float* h2, double timeout_s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_)  // stopped by stop_all_residents (another object freed memory): Mlp starts a new one
        throw ResidentStopped("cuda.mlp_resident: the resident kernel is not running");
    double gpu_us = 0.0;
    for (int row0 = 0; row0 < batch; row0 += kR) {
        const int rows = std::min(kR, batch - row0);
        std::memcpy(box_->x, x + (size_t)row0 * kIn, (size_t)rows * kIn * sizeof(float));
        const uint32_t seq = ++seq_ == 0 ? ++seq_ : seq_;  // 0 never names a request
        control_ = resident_control(seq, rows, h1 || h2);
        __atomic_store_n(&box_->control, control_, __ATOMIC_RELEASE);  // after x (x86: stores in order)
        // spin ~20 us (an answer takes a few), then yield the core between looks
        const auto t0 = std::chrono::steady_clock::now();
        const auto spin_end = t0 + std::chrono::microseconds(20);
        const auto t_end = t0 + std::chrono::duration<double>(timeout_s);
        for (unsigned n = 1; __atomic_load_n(&box_->done, __ATOMIC_ACQUIRE) != seq; ++n) {
            if (n % 256 == 0) {
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
        std::memcpy(out + (size_t)row0 * kOut, box_->probs, (size_t)rows * kOut * sizeof(float));
        if (h1) std::memcpy(h1 + (size_t)row0 * kHidden, box_->h1, (size_t)rows * kHidden * sizeof(float));
        if (h2) std::memcpy(h2 + (size_t)row0 * kHidden, box_->h2, (size_t)rows * kHidden * sizeof(float));
        gpu_us += box_->gpu_ns * 1e-3;
    }
    return gpu_us;
}

}  // namespace gemmpad::cuda
