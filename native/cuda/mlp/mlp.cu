// The GPU MLP object (see mlp.cuh): resident weights, growing buffers,
// pinned + mapped staging, event timing, and the layer-by-layer path through
// any GEMM kernel of the registry.
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "mlp.cuh"

namespace gemmpad::cuda {

void copy_streaming(void* dst_, const void* src_, size_t n) {
    char* dst = static_cast<char*>(dst_);
    const char* src = static_cast<const char*>(src_);
    size_t i = 0;
#if defined(__SSE2__)
    for (; i < n && (reinterpret_cast<uintptr_t>(dst + i) & 15); ++i) dst[i] = src[i];
    for (; i + 64 <= n; i += 64) {  // four loads in flight, then four streaming stores
        __m128i v[4];
        for (int j = 0; j < 4; ++j) v[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16 * j));
        for (int j = 0; j < 4; ++j) _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16 * j), v[j]);
    }
    _mm_sfence();  // streaming stores are weakly ordered: make them visible before the DMA is queued
#endif
    std::memcpy(dst + i, src + i, n - i);
}

// stage_chunked's helper threads, started on first use and kept until the Mlp goes: spawned per
// call, each cost ~17 us before it copied anything (probe, staging mode), one after the other.
// Idle helpers sleep on a condition variable.
class StagingPool {
  public:
    StagingPool() = default;
    StagingPool(const StagingPool&) = delete;
    StagingPool& operator=(const StagingPool&) = delete;
    ~StagingPool() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            stop_ = true;
        }
        wake_.notify_all();
        for (auto& t : threads_) t.join();
    }
    // work(1) .. work(helpers) on pool threads (fewer where no more threads can be had) and work(0)
    // on this one; returns when all have returned. work must not throw.
    void run(int helpers, const std::function<void(int)>& work) {
        while ((int)threads_.size() < helpers) {
            try {
                threads_.emplace_back([this, i = (int)threads_.size()] { loop(i); });
            } catch (const std::system_error&) {
                break;
            }
        }
        helpers = std::min(helpers, (int)threads_.size());
        {
            std::lock_guard<std::mutex> lock(mu_);
            job_ = &work;
            active_ = helpers;
            left_.store(helpers, std::memory_order_relaxed);  // before any helper can see the new job
            ++generation_;
        }
        wake_.notify_all();
        work(0);
        while (left_.load(std::memory_order_acquire) > 0) std::this_thread::yield();  // helpers end with this one
    }

  private:
    void loop(int i) {
        uint64_t seen = 0;
        for (;;) {
            const std::function<void(int)>* job;
            {
                std::unique_lock<std::mutex> lock(mu_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
                if (i >= active_) continue;
                job = job_;
            }
            (*job)(i + 1);
            left_.fetch_sub(1, std::memory_order_release);
        }
    }
    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable wake_;
    const std::function<void(int)>* job_ = nullptr;  // the current job (run() waits for it to end)
    int active_ = 0;                                 // helpers 0 .. active_ - 1 take part in it
    uint64_t generation_ = 0;                        // one per job
    bool stop_ = false;
    std::atomic<int> left_{0};                       // helpers still in the job
};

void* DeviceBuffer::reserve(size_t want) {
    if (want > bytes) {
        release();
        CUDA_CHECK(cudaMalloc(&ptr, want));
        bytes = want;
    }
    return ptr;
}

void DeviceBuffer::release() noexcept {
    if (ptr) cudaFree(ptr);  // best effort: may run while the driver shuts down
    ptr = nullptr;
    bytes = 0;
}

void* PinnedBuffer::reserve(size_t want) {
    if (want > bytes) {
        release();
        CUDA_CHECK(cudaHostAlloc(&ptr, want, cudaHostAllocMapped));
        bytes = want;
        CUDA_CHECK(cudaHostGetDevicePointer(&device, ptr, 0));
    }
    return ptr;
}

void PinnedBuffer::release() noexcept {
    if (ptr) cudaFreeHost(ptr);
    ptr = device = nullptr;
    bytes = 0;
}

namespace {

__global__ void softmax_kernel(const float* __restrict__ logits, float* __restrict__ probs, int rows, int n) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;  // whole warps leave together
    const float* z = logits + (size_t)row * n;
    float m = -INFINITY;
    for (int c = lane; c < n; c += 32) m = fmaxf(m, z[c]);
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    float sum = 0.0f;
    for (int c = lane; c < n; c += 32) sum += expf(z[c] - m);
    for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    for (int c = lane; c < n; c += 32) probs[(size_t)row * n + c] = expf(z[c] - m) / sum;
}

// Runs between the input copy and the start event. Without it the start event follows the
// copy engine's last write and the timed span opens with the copy engine handing over to the
// compute queue: an empty kernel timed that way measured 4.2-8.9 us instead of 2.5 (H200,
// native/tools/mlp_probe.cu's "rows" mode). With it, kernel_us holds only the forward.
__global__ void copy_handoff_kernel() {}

// Zero-pads a host [rows, cols] matrix to [prows, pcols].
std::vector<float> padded(const float* src, int rows, int cols, int prows, int pcols) {
    std::vector<float> out((size_t)prows * pcols, 0.0f);
    for (int r = 0; r < rows; ++r) std::memcpy(&out[(size_t)r * pcols], src + (size_t)r * cols, cols * sizeof(float));
    return out;
}

template <class T>
void upload(DeviceBuffer& dst, const std::vector<T>& v) {
    dst.reserve(v.size() * sizeof(T));
    CUDA_CHECK(cudaMemcpy(dst.ptr, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
}

// A padded [K][N] matrix (K a multiple of 8, N of `cols`) in the fused kernels'
// fragment order (fused_common.cuh): [N/cols][K/8][32 lanes][cols/4]. Lane
// (g = lane / 4, t = lane % 4) holds M[8j+t][c] and M[8j+t+4][c] for each
// n-tile of the group, c = cols * p + g (+ 8): 16 columns for the pairs of
// n-tiles most kernels read, 8 for the split kernel's single n-tiles.
std::vector<float> fragment_order(const std::vector<float>& m, int K, int N, int cols) {
    std::vector<float> out((size_t)K * N);
    size_t i = 0;
    for (int p = 0; p < N / cols; ++p)
        for (int j = 0; j < K / 8; ++j)
            for (int lane = 0; lane < 32; ++lane) {
                const int g = lane / 4, t = lane % 4;
                for (int c = cols * p + g; c < cols * (p + 1); c += 8) {
                    out[i++] = m[(size_t)(8 * j + t) * N + c];
                    out[i++] = m[(size_t)(8 * j + t + 4) * N + c];
                }
            }
    return out;
}

// `m` rounded to tf32 (as tf32_round in fused_common.cuh) and stored as fp16 divided by `scale`,
// the power of two that brings the largest finite value into [2^14, 2^15): tf32 and fp16 both
// hold 10 bits of mantissa, so every value is exact down to 2^-29 of the largest (fp16's normal
// range), and below that off by less than 2^-39 of it. NaN and Inf stay NaN and Inf.
std::vector<__half> tf32_as_half(const std::vector<float>& m, float& scale) {
    std::vector<float> r(m.size());
    float top = 0.0f;
    for (size_t i = 0; i < m.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &m[i], 4);
        if (std::isfinite(m[i])) u = (u + 0x1000u) & 0xffffe000u;
        std::memcpy(&r[i], &u, 4);
        if (std::isfinite(r[i])) top = std::max(top, std::fabs(r[i]));
    }
    int exp = 0;
    if (top > 0.0f) {
        std::frexp(top, &exp);  // top = f * 2^exp, 0.5 <= f < 1
        exp -= 15;              // top / 2^exp in [2^14, 2^15)
    }
    scale = std::ldexp(1.0f, exp);
    std::vector<__half> out(m.size());
    for (size_t i = 0; i < m.size(); ++i) out[i] = __float2half_rn(std::ldexp(r[i], -exp));
    return out;
}

}  // namespace

// x: pinned host staging -> device (unless forward() has queued that already: stage_chunked),
// then the hand-off kernel above.
static void copy_in(void* dst, const void* src, size_t bytes, bool staged, cudaStream_t stream) {
    if (!staged) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    copy_handoff_kernel<<<1, 32, 0, stream>>>();
    CUDA_CHECK_LAUNCH("copy hand-off");
}

void launch_softmax(const float* logits, float* probs, int rows, int n, cudaStream_t stream) {
    constexpr int kRowsPerBlock = 8;
    softmax_kernel<<<ceil_div(rows, kRowsPerBlock), kRowsPerBlock * 32, 0, stream>>>(logits, probs, rows, n);
    CUDA_CHECK_LAUNCH("softmax");
}

Mlp::Mlp(const float* W1, const float* b1, const float* W2, const float* b2, const float* W3, const float* b3) {
    try {
        CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        CUDA_CHECK(cudaEventCreate(&start_));
        CUDA_CHECK(cudaEventCreate(&stop_));
        const float* W[3] = {W1, W2, W3};
        const float* b[3] = {b1, b2, b3};
        const int rows[3] = {kIn, kHidden, kHidden}, cols[3] = {kHidden, kHidden, kOut};
        const int prows[3] = {kIn, kHiddenPad, kHiddenPad}, pcols[3] = {kHiddenPad, kHiddenPad, kOutPad};
        for (int l = 0; l < 3; ++l) {
            const size_t n = (size_t)rows[l] * cols[l];
            // The ladder's copies: fp32, and fp16 for the fp16 tensor-core kernels.
            w32_[l].reserve(n * sizeof(float));
            CUDA_CHECK(cudaMemcpy(w32_[l].ptr, W[l], n * sizeof(float), cudaMemcpyHostToDevice));
            w16_[l].reserve(n * sizeof(__half));
            cast_f32_to_f16(static_cast<float*>(w32_[l].ptr), static_cast<__half*>(w16_[l].ptr), n, stream_);
            bias_[l].reserve(cols[l] * sizeof(float));
            CUDA_CHECK(cudaMemcpy(bias_[l].ptr, b[l], cols[l] * sizeof(float), cudaMemcpyHostToDevice));
            // The fused kernels' zero-padded biases.
            upload(fbias_[l], padded(b[l], 1, cols[l], 1, pcols[l]));
        }
        // The fused kernels' weights (FusedWeights says which layout each kernel reads).
        const auto w1p = padded(W1, kIn, kHidden, prows[0], pcols[0]);
        const auto w2p = padded(W2, kHidden, kHidden, prows[1], pcols[1]);
        const auto w3p = padded(W3, kHidden, kOut, prows[2], pcols[2]);
        const auto w1frag = fragment_order(w1p, kIn, kHiddenPad, 16);
        upload(fw1f_, w1frag);
        upload(fw1h_, tf32_as_half(w1frag, w1h_scale_));
        upload(fw1f8_, fragment_order(w1p, kIn, kHiddenPad, 8));
        upload(fw2f_, fragment_order(w2p, kHiddenPad, kHiddenPad, 16));
        upload(fw2_, w2p);
        upload(fw3_, w3p);
        upload(fw3f_, fragment_order(w3p, kHiddenPad, kOutPad, 16));
        CUDA_CHECK(cudaStreamSynchronize(stream_));
    } catch (...) {
        release();  // the destructor does not run for a constructor that throws
        throw;
    }
}

Mlp::~Mlp() { release(); }

void Mlp::release() noexcept {
    if (stream_) cudaStreamSynchronize(stream_);
    for (auto* group : {w32_, w16_, bias_, fbias_})
        for (int l = 0; l < 3; ++l) group[l].release();
    for (auto* b : {&fw1f_, &fw1f8_, &fw1h_, &fw2f_, &fw2_, &fw3_, &fw3f_, &x_, &h1_, &h2_, &logits_, &probs_, &a16_,
                    &scratch_partials_, &scratch_counters_})
        b->release();
    pool_.reset();  // (its helpers are idle: stage_chunked waits for them)
    if (graph_) cudaGraphExecDestroy(graph_);
    graph_ = nullptr;
    in_.release();
    out_.release();
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (stream_) cudaStreamDestroy(stream_);
    start_ = stop_ = nullptr;
    stream_ = nullptr;
}

size_t Mlp::device_bytes() const {
    size_t total = 0;
    for (const auto* group : {w32_, w16_, bias_, fbias_})
        for (int l = 0; l < 3; ++l) total += group[l].bytes;
    for (const auto* b : {&fw1f_, &fw1f8_, &fw1h_, &fw2f_, &fw2_, &fw3_, &fw3f_, &x_, &h1_, &h2_, &logits_, &probs_, &a16_,
                          &scratch_partials_, &scratch_counters_})
        total += b->bytes;
    return total;
}

void Mlp::ensure_capacity(int batch) {
    // The fused kernel's scratch depends on its tile size, which changes with
    // the batch (a smaller batch can need more counters), so check it always.
    const auto [floats, counters] = fused_scratch_size(batch);
    if (floats > scratch_floats_) {
        scratch_partials_.reserve(floats * sizeof(float));
        scratch_floats_ = floats;
    }
    if (counters > scratch_counters_n_) {
        scratch_counters_.reserve(counters * sizeof(unsigned));
        // The fused kernel expects zeros and leaves zeros behind.
        CUDA_CHECK(cudaMemsetAsync(scratch_counters_.ptr, 0, counters * sizeof(unsigned), stream_));
        scratch_counters_n_ = counters;
    }
    if (batch <= capacity_) return;
    CUDA_CHECK(cudaStreamSynchronize(stream_));  // forward() may return before the GPU is done with the old buffers
    const size_t B = batch;
    x_.reserve(B * kIn * sizeof(float));
    h1_.reserve(B * kHidden * sizeof(float));
    h2_.reserve(B * kHidden * sizeof(float));
    logits_.reserve(B * kOut * sizeof(float));
    probs_.reserve(B * kOut * sizeof(float));
    a16_.reserve(B * kIn * sizeof(__half));
    in_.reserve(B * kIn * sizeof(float));
    out_.reserve(B * kOut * sizeof(float));
    capacity_ = batch;
}

void Mlp::forward_layered(const std::string& kernel, int batch) {
    const auto& entry = CudaRegistry::instance().get(kernel);
    const bool f16 = entry.info.in_type == InType::F16;
    const float* acts_in[3] = {static_cast<float*>(x_.ptr), static_cast<float*>(h1_.ptr),
                               static_cast<float*>(h2_.ptr)};
    float* acts_out[3] = {static_cast<float*>(h1_.ptr), static_cast<float*>(h2_.ptr),
                          static_cast<float*>(logits_.ptr)};
    const int K[3] = {kIn, kHidden, kHidden}, N[3] = {kHidden, kHidden, kOut};
    for (int l = 0; l < 3; ++l) {
        GemmProblem p;
        p.M = batch;
        p.N = N[l];
        p.K = K[l];
        p.bias = static_cast<const float*>(bias_[l].ptr);
        p.C = acts_out[l];
        p.act = l < 2 ? Act::Relu : Act::None;
        p.in_type = entry.info.in_type;
        if (f16) {
            __half* a16 = static_cast<__half*>(a16_.ptr);
            cast_f32_to_f16(acts_in[l], a16, (size_t)batch * K[l], stream_);
            p.A = a16;
            p.B = w16_[l].ptr;
        } else {
            p.A = acts_in[l];
            p.B = w32_[l].ptr;
        }
        entry.launch(p, stream_);
    }
    launch_softmax(static_cast<float*>(logits_.ptr), static_cast<float*>(probs_.ptr), batch, kOut, stream_);
}

bool Mlp::GraphKey::operator==(const GraphKey& o) const {
    if (kind != o.kind || batch != o.batch || clusters != o.clusters || mapped_in_max != o.mapped_in_max ||
        mapped_out_max != o.mapped_out_max || staged != o.staged)
        return false;
    for (int i = 0; i < 6; ++i)
        if (buffers[i] != o.buffers[i]) return false;
    return true;
}

Mlp::GraphKey Mlp::fused_key(FusedKind kind, int batch) const {
    GraphKey k;
    k.kind = kind;
    k.batch = batch;
    k.clusters = fused_clusters_enabled();
    k.mapped_in_max = mapped_in_max_;
    k.mapped_out_max = mapped_out_max_;
    k.staged = staged(batch);
    const void* b[6] = {x_.ptr, probs_.ptr, in_.ptr, out_.ptr, scratch_partials_.ptr, scratch_counters_.ptr};
    std::copy(b, b + 6, k.buffers);
    return k;
}

FusedWeights Mlp::fused_weights() const {
    auto f = [](const DeviceBuffer& b) { return static_cast<const float*>(b.ptr); };
    return FusedWeights{f(fw1f_), f(fw1f8_), fw1h_.ptr, w1h_scale_, f(fw2f_), f(fw2_), f(fw3_), f(fw3f_),
                        f(fbias_[0]), f(fbias_[1]), f(fbias_[2])};
}

void Mlp::set_io_policy(int mapped_in_max, int mapped_out_max) {
    mapped_in_max_ = mapped_in_max;
    mapped_out_max_ = mapped_out_max;
}

void Mlp::set_staging(const Staging& staging) {
    if (staging.chunk_bytes == 0 || staging.threads < 1)
        throw std::invalid_argument("staging needs chunk_bytes > 0 and threads >= 1");
    staging_ = staging;
}

Mlp::Staging Mlp::default_staging() {
    int hw = (int)std::thread::hardware_concurrency();  // 0 where unknown
#if defined(__linux__)
    cpu_set_t allowed;  // the CPUs this process may run on (taskset, a container's cpuset), not all online ones
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) hw = CPU_COUNT(&allowed);
#endif
    return {0, size_t{512} << 10, std::clamp(hw / 2, 1, 4)};
}

bool Mlp::mapped_out(int batch) const { return batch <= mapped_out_max_; }

bool Mlp::staged(int batch) const {
    // (never for batches the kernel may read from mapped memory: those are small anyway)
    return batch > mapped_in_max_ && (size_t)batch * kIn * sizeof(float) >= staging_.min_bytes;
}

// A large x took two serial passes: the host copy into pinned staging (12.8 MB at batch 4096:
// 0.9-1.1 ms on one core of the H200's host), then the DMA to the device (0.24 ms). Here it
// goes in chunks: `threads` threads (this one and threads - 1 more) each take the lowest chunk
// not yet taken, copy it into pinned staging with streaming stores and queue its DMA at once,
// so the copy engine starts after the first chunk and the host copy runs on several cores.
// DMAs may be queued out of order; the graph behind them waits for all.
// Measured (H200 host, 16 hardware threads, 2026-11-23; native/tools/mlp_probe.cu "staging" mode).
// A copy of this function with stamps, 4096 rows, us from entry until the DMAs are done: memcpy
// on one thread 1191, on 4 threads (1 MB chunks) 645-671; streaming stores on one thread 954, on
// 4 threads 371-385: the DMA now ends 40-90 us after the last host copy instead of ~260 (a plain
// copy's stores read every line before writing it and leave it dirty in the cache, so host copy
// and DMA fought over memory); on 8 threads 410 (a thread spawn costs ~17 us). Mlp::forward end
// to end (cuda.mlp_fused_tf32, C++ clock), one copy + one DMA -> 512 KB chunks over 4 threads:
// batch 128 60.0 -> 52.1 us, 256 101.2 -> 80.6, 512 181.0 -> 115.3, 1024 349.0 -> 165.9,
// 4096 1302.0 -> 417.2 (1 MB chunks: 415-436 at 4096, 179-188 at 1024).
// Then the helpers kept in a StagingPool instead of spawned per call. A/B in one device call (the
// probe built from the code before and after; default policy, same measure): batch 256 77.0 ->
// 70.7-76.0 us, 512 112.5 -> 92.1-108.6, 1024 164.0 -> 139.2-150.6, 4096 427.0 -> 381.8-404.8.
void Mlp::stage_chunked(const float* x, size_t bytes) {
    const size_t chunk = staging_.chunk_bytes, chunks = (bytes + chunk - 1) / chunk;
    const int n = (int)std::min<size_t>((size_t)staging_.threads, chunks);
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const char* src = reinterpret_cast<const char*>(x);
    char* pinned = static_cast<char*>(in_.ptr);
    char* dev = static_cast<char*>(x_.ptr);
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::vector<cudaError_t> errors(n, cudaSuccess);  // per thread: nothing in work() allocates or throws
    std::vector<const char*> calls(n, "");
    const std::function<void(int)> work = [&](int t) noexcept {
        cudaError_t e = cudaSuccess;
        if (t > 0 && (e = cudaSetDevice(device)) != cudaSuccess) calls[t] = "cudaSetDevice (staging thread)";
        for (size_t c; e == cudaSuccess && !failed.load(std::memory_order_relaxed) && (c = next.fetch_add(1)) < chunks;) {
            const size_t off = c * chunk, len = std::min(chunk, bytes - off);
            copy_streaming(pinned + off, src + off, len);
            e = cudaMemcpyAsync(dev + off, pinned + off, len, cudaMemcpyHostToDevice, stream_);
            if (e != cudaSuccess) calls[t] = "cudaMemcpyAsync(x chunk)";
        }
        if (e != cudaSuccess) failed = true;
        errors[t] = e;
    };
    if (n == 1) {
        work(0);
    } else {
        if (!pool_) pool_ = std::make_unique<StagingPool>();
        pool_->run(n - 1, work);  // where threads are short, the ones running share the chunks
    }
    for (int t = 0; t < n; ++t)
        if (errors[t] != cudaSuccess) check(errors[t], calls[t], __FILE__, __LINE__);
}

void Mlp::enqueue_fused(FusedKind kind, int batch) {
    FusedPlan plan = fused_plan(kind, batch);
    // x from host memory only where the kernel shares it over a cluster (read once, not once per block)
    plan.x_slices = batch <= mapped_in_max_ && plan.design == FusedPlan::Split && plan.engine == Engine::Fma &&
                    fused_split_max_clusters(plan) > 0;
    const bool mapped_in = plan.x_slices, out_mapped = mapped_out(batch);
    const size_t in_bytes = (size_t)batch * kIn * sizeof(float), out_bytes = (size_t)batch * kOut * sizeof(float);
    FusedScratch s{static_cast<float*>(scratch_partials_.ptr), static_cast<unsigned*>(scratch_counters_.ptr)};
    const float* src = mapped_in ? static_cast<const float*>(in_.device) : static_cast<const float*>(x_.ptr);
    float* dst = out_mapped ? static_cast<float*>(out_.device) : static_cast<float*>(probs_.ptr);
    if (!mapped_in) copy_in(x_.ptr, in_.ptr, in_bytes, staged(batch), stream_);
    CUDA_CHECK(cudaEventRecordWithFlags(start_, stream_, cudaEventRecordExternal));
    launch_fused(plan, fused_weights(), src, dst, batch, s, stream_);
    CUDA_CHECK(cudaEventRecordWithFlags(stop_, stream_, cudaEventRecordExternal));
    if (!out_mapped) CUDA_CHECK(cudaMemcpyAsync(out_.ptr, probs_.ptr, out_bytes, cudaMemcpyDeviceToHost, stream_));
}

void Mlp::capture_fused(FusedKind kind, int batch) {
    CUDA_CHECK(cudaStreamSynchronize(stream_));  // the old graph may still be finishing
    if (graph_) {
        CUDA_CHECK(cudaGraphExecDestroy(graph_));
        graph_ = nullptr;
    }
    // Relaxed: the first launch of a kernel configures it (cudaFuncSetAttribute) inside the capture.
    CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
    cudaGraph_t g = nullptr;
    try {
        enqueue_fused(kind, batch);
    } catch (...) {
        cudaStreamEndCapture(stream_, &g);  // leave the stream usable; the original error is the one to report
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
        throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    const cudaError_t err = cudaGraphInstantiate(&graph_, g, 0);
    cudaGraphDestroy(g);
    if (err != cudaSuccess) graph_ = nullptr;
    CUDA_CHECK(err);
    graph_key_ = fused_key(kind, batch);
}

// What the host writes into the mapped output before a launch and spins on: a NaN with
// the sign bit set, which no kernel stores (GPU arithmetic makes NaNs 0x7fffffff, the
// fused kernels store theirs as 0x7fc00000). Every value is written once, as one 32-bit
// store, so once none of them is kPending all of them are final.
constexpr uint32_t kPending = 0xffffffffu;

void Mlp::wait_for_output(const float* out, size_t n) {
    const volatile uint32_t* v = reinterpret_cast<const volatile uint32_t*>(out);
    size_t i = 0;  // v[0, i) are known to be written
    for (unsigned spin = 1;; ++spin) {
        while (i < n && v[i] != kPending) ++i;
        if (i == n) return;
        if (spin % 1024 == 0) {  // rarely (a few us apart): did the kernel fail, or end without writing?
            const cudaError_t e = cudaEventQuery(stop_);
            if (e == cudaErrorNotReady) continue;
            CUDA_CHECK(e);
            for (; i < n; ++i)  // the stop event is complete: everything the kernel stored is visible
                if (v[i] == kPending)
                    throw std::runtime_error("cuda.mlp_fused: the kernel finished without writing probability " +
                                             std::to_string(i));
            return;
        }
    }
}

double Mlp::forward(const float* x, float* out, int batch, const std::string& kernel) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    FusedKind kind{};
    const bool fused = fused_kind(kernel, kind);
    if (!fused) CudaRegistry::instance().get(kernel);  // unknown name -> clear error before any work
    ensure_capacity(batch);
    const size_t in_bytes = (size_t)batch * kIn * sizeof(float), out_bytes = (size_t)batch * kOut * sizeof(float);
    timed_ = false;
    kernel_us_ = -1.0;
    bool spin = false;
    const bool chunked = staged(batch);
    if (chunked) stage_chunked(x, in_bytes);  // queued on the stream ahead of the graph or the layers
    else std::memcpy(in_.ptr, x, in_bytes);   // pinned staging: read by the kernel (mapped) or copied to the device
    if (fused) {
        if (!graph_ || !(fused_key(kind, batch) == graph_key_)) capture_fused(kind, batch);
        spin = mapped_out(batch);  // the graph (its key holds this policy) writes `out` mapped
        if (spin) std::fill_n(static_cast<uint32_t*>(out_.ptr), (size_t)batch * kOut, kPending);
        CUDA_CHECK(cudaGraphLaunch(graph_, stream_));
    } else {
        copy_in(x_.ptr, in_.ptr, in_bytes, chunked, stream_);
        CUDA_CHECK(cudaEventRecord(start_, stream_));
        forward_layered(kernel, batch);
        CUDA_CHECK(cudaEventRecord(stop_, stream_));
        CUDA_CHECK(cudaMemcpyAsync(out_.ptr, probs_.ptr, out_bytes, cudaMemcpyDeviceToHost, stream_));
    }
    timed_ = true;
    if (spin) wait_for_output(static_cast<const float*>(out_.ptr), (size_t)batch * kOut);
    else CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::memcpy(out, out_.ptr, out_bytes);
    return std::chrono::duration<double, std::micro>(clock::now() - t0).count();
}

double Mlp::kernel_us() {
    if (!timed_) throw std::logic_error("no forward pass has been timed yet");
    if (kernel_us_ < 0.0) {
        CUDA_CHECK(cudaEventSynchronize(stop_));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        kernel_us_ = ms * 1000.0;
    }
    return kernel_us_;
}

}  // namespace gemmpad::cuda

namespace gemmpad::cuda {

// The architectures this module was compiled for, as CMake was asked for them
// ("80-real,86-real,89-real,90a-real,90-virtual"; native/CMakeLists.txt), for
// `gemmpad info`. (nvcc's own __CUDA_ARCH_LIST__ says 900 for sm_90 and sm_90a alike.)
std::string build_arch_list() {
#ifdef GEMMPAD_CUDA_ARCHITECTURES
    return GEMMPAD_CUDA_ARCHITECTURES;
#else
    return "";  // built without CMake (native/tools/mlp_probe.cu)
#endif
}

}  // namespace gemmpad::cuda
