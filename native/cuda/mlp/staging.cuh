// The helper threads that stage a large input for Mlp::forward (staging.cu): host copies
// into pinned memory, chunk by chunk, each chunk's DMA queued as soon as it is staged.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace gemmpad::cuda {

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
    // on this one; returns when all have returned. work must not throw. Afterwards the helpers look
    // for the next job for spin_us before they sleep (waking a sleeping one costs microseconds).
    void run(int helpers, const std::function<void(int)>& work, int spin_us = 0) {
        spin_us_.store(spin_us, std::memory_order_relaxed);
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
            using clock = std::chrono::steady_clock;
            const auto until = clock::now() + std::chrono::microseconds(spin_us_.load(std::memory_order_relaxed));
            while (generation_.load(std::memory_order_acquire) == seen && !stop_.load(std::memory_order_relaxed) &&
                   clock::now() < until)
                std::this_thread::yield();
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
    std::atomic<uint64_t> generation_{0};            // one per job (changed under mu_)
    std::atomic<bool> stop_{false};                  // (changed under mu_)
    std::atomic<int> spin_us_{0};
    std::atomic<int> left_{0};                       // helpers still in the job
};

}  // namespace gemmpad::cuda
