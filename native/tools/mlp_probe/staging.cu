// Mode "staging": how a large x reaches the device (host copies, DMAs, a stamped replica of the
// first Mlp::stage_chunked, a DMA per chunk by the thread that copied it, per thread count, chunk
// size and store kind; NOTES.md 2026-11-29 says why it changed) and Mlp::forward per staging policy.
#include "probe.cuh"

namespace probe {

int Probe::staging() {
    const size_t mb = size_t{1} << 20, bytes = x_all.size() * sizeof(float);
    auto host_us = [](const std::function<void()>& f, int reps) { return host_median_us(f, reps, 3); };
    std::printf("\n== x staging, %d rows (%.1f MB), host clock us, median of 30; %u hardware threads\n", kMax,
                bytes / 1e6, std::thread::hardware_concurrency());
    std::printf("  host copy into pinned memory, one thread: %8.1f\n",
                host_us([&] { std::memcpy(x_host, x_all.data(), bytes); }, 30));
    std::printf("  DMA from pinned memory (cudaMemcpy):      %8.1f\n",
                host_us([&] { CUDA_CHECK(cudaMemcpy(x_dev, x_host, bytes, cudaMemcpyHostToDevice)); }, 30));
    std::printf("  DMA from pageable memory (cudaMemcpy):    %8.1f\n",
                host_us([&] { CUDA_CHECK(cudaMemcpy(x_dev, x_all.data(), bytes, cudaMemcpyHostToDevice)); }, 30));
    // Where the time goes: a copy of the first stage_chunked with stamps, 4096 rows, us after entry; its
    // helper threads are spawned per call, as before stage_chunked kept them in a StagingPool.
    {
        float* dev_x = x_dev;
        const char* src = reinterpret_cast<const char*>(x_all.data());
        char* pinned = reinterpret_cast<char*>(x_host);
        for (bool nt : {false, true})
        for (int threads : {1, 2, 4, 8})
            for (size_t chunk : {mb, 2 * mb}) {
                if (threads == 1 && chunk > mb) continue;
                const size_t chunks = (bytes + chunk - 1) / chunk;
                std::vector<double> spawn_v, copy_v, join_v, sync_v, busy_v;
                for (int rep = 0; rep < 23; ++rep) {
                    std::atomic<size_t> next{0};
                    std::vector<double> busy(threads, 0.0);
                    const auto t0 = clk::now();
                    auto us = [&](clk::time_point t) { return std::chrono::duration<double, std::micro>(t - t0).count(); };
                    auto work = [&](int t) {
                        if (t > 0) cudaSetDevice(0);
                        for (size_t c; (c = next.fetch_add(1)) < chunks;) {
                            const auto a = clk::now();
                            const size_t off = c * chunk, len = std::min(chunk, bytes - off);
                            if (nt) copy_streaming(pinned + off, src + off, len);
                            else std::memcpy(pinned + off, src + off, len);
                            busy[t] += std::chrono::duration<double, std::micro>(clk::now() - a).count();
                            cudaMemcpyAsync(reinterpret_cast<char*>(dev_x) + off, pinned + off, len, cudaMemcpyHostToDevice, st);
                        }
                    };
                    std::vector<std::thread> pool;
                    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
                    const double t_spawn = us(clk::now());
                    work(0);
                    const double t_copy = us(clk::now());
                    for (auto& h : pool) h.join();
                    const double t_join = us(clk::now());
                    CUDA_CHECK(cudaStreamSynchronize(st));
                    const double t_sync = us(clk::now());
                    if (rep < 3) continue;
                    spawn_v.push_back(t_spawn), copy_v.push_back(t_copy), join_v.push_back(t_join), sync_v.push_back(t_sync);
                    busy_v.push_back(*std::max_element(busy.begin(), busy.end()));
                }
                std::printf("  replica %s %d threads, %4zu KB chunks: spawned %6.1f, own chunks done %6.1f, joined %6.1f, "
                            "DMA done %6.1f; busiest thread copying %6.1f\n",
                            nt ? "stream" : "memcpy", threads, chunk >> 10, median(spawn_v), median(copy_v), median(join_v), median(sync_v),
                            median(busy_v));
            }
        // host copy alone, over n threads (each a contiguous 1/n)
        for (bool nt : {false, true})
        for (int threads : {1, 2, 4, 8}) {
            std::printf("  host copy alone (%s), %d threads: %6.1f\n", nt ? "stream" : "memcpy", threads, host_us([&] {
                std::vector<std::thread> pool;
                auto part = [&](int t) {
                    const size_t a = bytes * t / threads, b = bytes * (t + 1) / threads;
                    if (nt) copy_streaming(pinned + a, src + a, b - a);
                    else std::memcpy(pinned + a, src + a, b - a);
                };
                for (int t = 1; t < threads; ++t) pool.emplace_back(part, t);
                part(0);
                for (auto& h : pool) h.join();
            }, 20));
        }
        std::printf("  DMA alone, 1 MB pieces queued then synced: %6.1f\n", host_us([&] {
            for (size_t off = 0; off < bytes; off += mb)
                CUDA_CHECK(cudaMemcpyAsync(reinterpret_cast<char*>(dev_x) + off, pinned + off, std::min(mb, bytes - off),
                                           cudaMemcpyHostToDevice, st));
            CUDA_CHECK(cudaStreamSynchronize(st));
        }, 20));
    }
    std::printf("\n== Mlp::forward end to end per staging policy (cuda.mlp_fused_tf32, C++ clock, us, median of 200)\n");
    const std::vector<int> sb = {128, 256, 384, 512, 1024, 2048, 4096};
    std::printf("  %-26s", "policy");
    for (int b : sb) std::printf(" %8d", b);
    std::printf("\n");
    std::vector<float> out((size_t)kMax * 10);
    const std::vector<std::pair<std::string, Mlp::Staging>> policies = {
        {"one copy + one DMA", {SIZE_MAX, mb, 1}},  {"1 MB chunks, 1 thread", {0, mb, 1}},
        {"1 MB chunks, 2 threads", {0, mb, 2}},      {"1 MB chunks, 4 threads", {0, mb, 4}},
        {"1 MB chunks, 8 threads", {0, mb, 8}},      {"512 KB chunks, 4 threads", {0, mb / 2, 4}},
        {"2 MB chunks, 4 threads", {0, 2 * mb, 4}},  {"default", Mlp::default_staging()}};
    for (const auto& [name, policy] : policies) {
        mlp->set_staging(policy);
        std::printf("  %-26s", name.c_str());
        for (int b : sb) {
            const ForwardTimes t =
                time_forward(*mlp, "cuda.mlp_fused_tf32", x_all.data(), out.data(), ref_all.data(), b, 200, 20);
            std::printf(" %8.1f%s", t.e2e_us, t.error <= 5e-3 ? "" : " WRONG");
            std::fflush(stdout);
        }
        std::printf("\n");
    }
    std::printf("\nprobe done\n");
    return 0;
}

}  // namespace probe
