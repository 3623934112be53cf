// Moving a large input to the device (mlp.cuh: Mlp::Staging, Mlp::stage_chunked): streaming
// copies into pinned memory on the StagingPool's threads, each chunk's DMA queued at once.
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "mlp.cuh"
#include "staging.cuh"

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

void Mlp::set_staging(const Staging& staging) {
    if (staging.chunk_bytes == 0 || staging.threads < 1)
        throw std::invalid_argument("staging needs chunk_bytes > 0 and threads >= 1");
    if (staging.mapped_u8_rows < 0 || staging.mapped_out_rows < 0 || staging.spin_us < 0)
        throw std::invalid_argument("staging needs mapped_u8_rows >= 0, mapped_out_rows >= 0 and spin_us >= 0");
    staging_ = staging;  // (graphs keep their own decisions in their keys: no recapture needed here)
}

Mlp::Staging Mlp::default_staging() {
    int hw = (int)std::thread::hardware_concurrency();  // 0 where unknown
#if defined(__linux__)
    cpu_set_t allowed;  // the CPUs this process may run on (taskset, a container's cpuset), not all online ones
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) hw = CPU_COUNT(&allowed);
#endif
    return {0, size_t{64} << 10, std::clamp(hw / 2, 1, 8), kMappedU8Rows, kMappedOutRows, kMappedSplitBytes,
            kOutSplitBytes, kSpinUs};
}

// A large x took two serial passes: the host copy into pinned staging (12.8 MB at batch 4096:
// ~1 ms on one core of the H200's host), then the DMA to the device. Here `threads` threads (this
// one and threads - 1 from the pool) each take the lowest chunk not yet taken and copy it into
// pinned staging with streaming stores (they keep host copy and DMA from fighting over memory: a
// plain copy reads every line first and leaves it dirty in the cache). This thread also queues the
// DMAs, each over the staged prefix of x not yet queued once that is at least half of what is
// queued already: the copy engine starts after the first chunk, and a 3.2 MB input takes ~10
// DMAs, not one per chunk. (One cudaMemcpyAsync per chunk, queued by whichever thread copied it:
// ~2.6 us per call on the H200's host, more from threads contending for the stream, so 64 KiB
// chunks cost more than they overlapped and 512 KiB ones started the copy engine late: NOTES.md.)
// The graph behind the DMAs waits for all. Without `device_dst` only the host copies run (input
// the kernel reads through the mapping, outputs on their way to the caller: copy_out).
void Mlp::stage_chunked(const void* x, size_t bytes, void* host_dst, void* device_dst) {
    const size_t chunk = staging_.chunk_bytes, chunks = (bytes + chunk - 1) / chunk;
    const int n = (int)std::min<size_t>((size_t)staging_.threads, chunks);
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const char* src = static_cast<const char*>(x);
    char* dst = static_cast<char*>(host_dst);
    char* dev = static_cast<char*>(device_dst);
    std::unique_ptr<std::atomic<bool>[]> copied(new std::atomic<bool>[chunks]);
    for (size_t c = 0; c < chunks; ++c) copied[c].store(false, std::memory_order_relaxed);
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    size_t staged = 0, queued = 0;  // (this thread's) chunks known copied in order; bytes whose DMA is queued
    // this thread: queue a DMA over the staged prefix once it is half what is queued (or all of x)
    auto queue_dmas = [&](bool all) -> cudaError_t {
        while (staged < chunks && copied[staged].load(std::memory_order_acquire)) ++staged;
        const size_t ready = std::min(staged * chunk, bytes), last = queued;
        if (ready == queued || (!all && ready < bytes && ready - queued < std::max(chunk, last / 2))) return cudaSuccess;
        queued = ready;
        return cudaMemcpyAsync(dev + last, dst + last, ready - last, cudaMemcpyHostToDevice, stream_);
    };
    std::vector<cudaError_t> errors(n, cudaSuccess);  // per thread: nothing in work() allocates or throws
    std::vector<const char*> calls(n, "");
    const std::function<void(int)> work = [&](int t) noexcept {
        cudaError_t e = cudaSuccess;
        if (t > 0 && (e = cudaSetDevice(device)) != cudaSuccess) calls[t] = "cudaSetDevice (staging thread)";
        for (size_t c; e == cudaSuccess && !failed.load(std::memory_order_relaxed) && (c = next.fetch_add(1)) < chunks;) {
            const size_t off = c * chunk;
            copy_streaming(dst + off, src + off, std::min(chunk, bytes - off));
            copied[c].store(true, std::memory_order_release);
            if (t == 0 && dev && (e = queue_dmas(false)) != cudaSuccess) calls[t] = "cudaMemcpyAsync(x)";
        }
        if (e != cudaSuccess) failed = true;
        errors[t] = e;
    };
    if (n == 1) {
        work(0);
    } else {
        if (!pool_) pool_ = std::make_unique<StagingPool>();
        pool_->run(n - 1, work, staging_.spin_us);  // where threads are short, the ones running share the chunks
    }
    for (int t = 0; t < n; ++t)
        if (errors[t] != cudaSuccess) check(errors[t], calls[t], __FILE__, __LINE__);
    if (dev) CUDA_CHECK(queue_dmas(true));  // the rest (every chunk is copied now)
}

void Mlp::copy_out(void* dst, const void* pinned, size_t bytes) {
    if (bytes >= staging_.out_split_bytes && staging_.threads > 1) stage_chunked(pinned, bytes, dst, nullptr);
    else std::memcpy(dst, pinned, bytes);
}

}  // namespace gemmpad::cuda
