// The one thread policy of the CPU kernels: how many OpenMP threads a parallel region gets.
//
// A region gets the fewest of
//   - the cores this process may run on (sched_getaffinity: taskset, a container's cpuset);
//     more threads than cores only wait for each other, and OMP_NUM_THREADS=65536 must not
//     start 65,536 threads (libgomp then crashes, fails to create them or asks for 481 GB),
//   - OMP_NUM_THREADS (omp_get_max_threads), when a user asks for fewer,
//   - the cap set from Python (set_thread_cap: the window leaves cores to its renderer),
//   - the pieces of work the region has (a thread with no slice of C is pure overhead),
// and passes it in the region's num_threads clause, so no environment setting can raise it.
//
// Fork: libgomp's thread pool does not survive fork(): in the child its threads are gone but
// the pool still counts them, and the first parallel region waits for them forever (a
// multiprocessing.Pool worker calling predict() after the parent ran a threaded call hangs).
// A pthread_atfork child handler (installed when the module loads) therefore makes every
// later region of a forked child run on its calling thread without entering OpenMP at all.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif
#include <pthread.h>

#if defined(GEMMPAD_HAVE_OPENMP)
#include <omp.h>
#endif

namespace gemmpad::cpu {

// A cap on the threads the kernels use, 0 for none (set_thread_cap). Global, not OpenMP's
// per-thread nthreads ICV: the caller that sets it is not the thread that runs.
inline std::atomic<int>& thread_cap() {
    static std::atomic<int> cap{0};
    return cap;
}

// True in a process forked after this module was loaded (see the header comment).
inline std::atomic<bool>& forked_child() {
    static std::atomic<bool> forked{false};
    return forked;
}

// Called once when the module loads: from then on a forked child runs single-threaded.
inline void install_fork_handler() {
    static const int installed = pthread_atfork(nullptr, nullptr, [] { forked_child().store(true); });
    (void)installed;
}

// Cores this process may run on, counted once, when first asked (like libgomp's own default,
// read once at load): a sched_getaffinity call costs ~0.7 us, a tenth of a small threaded call.
inline int usable_cores() {
    static const int cores = [] {
#if defined(__linux__)
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
#if defined(GEMMPAD_HAVE_OPENMP)
        return std::max(1, omp_get_num_procs());  // more than CPU_SETSIZE cores, or not Linux
#else
        return std::max(1, (int)std::thread::hardware_concurrency());
#endif
    }();
    return cores;
}

// Threads for a parallel region with `pieces` independent pieces of work (>= 1; see above).
inline int threads_for(int64_t pieces) {
#if defined(GEMMPAD_HAVE_OPENMP)
    if (pieces <= 1 || forked_child().load(std::memory_order_relaxed)) return 1;
    int64_t n = std::min<int64_t>(omp_get_max_threads(), usable_cores());
    const int cap = thread_cap().load(std::memory_order_relaxed);
    if (cap > 0) n = std::min<int64_t>(n, cap);
    return (int)std::max<int64_t>(1, std::min(n, pieces));
#else
    (void)pieces;
    return 1;
#endif
}

// Threads the kernels use for a problem with plenty of work.
inline int max_threads() { return threads_for(INT64_MAX); }

// Chunk of `len` items that `threads` threads take each, a multiple of `step`; thread t gets
// [t * chunk, min(len, (t + 1) * chunk)). 64-bit: len may be close to 2^31 (one row per item
// of a (2^31 - 1) x 1 matrix), where int arithmetic wraps and every thread gets nothing.
inline int64_t chunk_for(int64_t len, int threads, int64_t step) {
    const int64_t per = (len + threads - 1) / threads;
    return (per + step - 1) / step * step;
}

// Thread t's range [lo, hi) of `len` items in chunks of `chunk`; empty (lo >= hi) past the end.
struct Range {
    int64_t lo, hi;
};
inline Range thread_range(int t, int64_t len, int64_t chunk) {
    const int64_t lo = t * chunk;
    return {lo, std::min(len, lo + chunk)};
}

// f(lo, hi) for each thread's range of [0, len) (chunks a multiple of `step`) on `threads` OpenMP
// threads (threads_for's count); on one thread, or in a build without OpenMP, f(0, len) here.
template <class F>
void for_each_range(int64_t len, int threads, int64_t step, F&& f) {
#if defined(GEMMPAD_HAVE_OPENMP)
    if (threads > 1) {
        const int64_t chunk = chunk_for(len, threads, step);
#pragma omp parallel for num_threads(threads) schedule(static, 1)
        for (int t = 0; t < threads; ++t)
            if (const Range r = thread_range(t, len, chunk); r.lo < r.hi) f(r.lo, r.hi);
        return;
    }
#endif
    (void)threads, (void)step;
    f(0, len);
}

// Every thread's nonempty range, in order (the Python binding exposes them for tests).
inline std::vector<Range> thread_ranges(int64_t len, int threads, int64_t step) {
    std::vector<Range> out;
    const int64_t chunk = chunk_for(len, threads, step);
    for (int t = 0; t < threads; ++t)
        if (const Range r = thread_range(t, len, chunk); r.lo < r.hi) out.push_back(r);
    return out;
}

}  // namespace gemmpad::cpu
