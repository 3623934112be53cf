// Mode "check" (also the first part of "all", "final" and "rows"): every configuration against the
// float64 reference, output poisoned with NaN, x in device memory and, up to 64 rows, mapped; run
// under compute-sanitizer by mlp_probe.sh. Returns the number of failures.
#include "probe.cuh"

namespace probe {

int Probe::check() {
    std::vector<int> batches = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
                                300, 511, 512, 513, 1000, 1023, 1024, 1025, 2047, 4096};
    if (mode == "check") batches = {1, 2, 3, 17, 33, 257, 1025};  // under compute-sanitizer
    if (mode == "rows") batches = {16, 17, 33, 128, 1000, 1025, 2047, 4096};
    std::vector<float> out((size_t)kMax * 10);
    int failures = 0;
    for (const auto& c : configs)
        if (!c.rows && c.cluster) try {
                std::printf("  max active clusters %-32s %d\n", c.name.c_str(),
                            c.ksplit ? fused_ksplit_max_clusters(plan_of(c)) : fused_split_max_clusters(plan_of(c)));
            } catch (const std::exception& e) {
                std::printf("  max active clusters %-32s ERROR %s\n", c.name.c_str(), e.what());
            }
    std::printf("\n== correctness (rel. error vs float64; NaN-poisoned output; x in device memory and, up to 64, mapped)\n");
    for (const auto& c : configs) try {
        if (!selected(c.name)) continue;
        double worst = 0;
        int worst_b = 0;
        for (int b : batches) {
            if (b > c.max_batch || b < c.min_batch) continue;
            for (int mapped = 0; mapped < (b <= 64 ? 2 : 1); ++mapped) {
                float* o = mapped ? out_map : out_dev;
                if (mapped) std::fill(out_host, out_host + (size_t)b * 10, NAN);
                else CUDA_CHECK(cudaMemsetAsync(out_dev, 0xff, (size_t)b * 40, st));  // NaN
                launch(c, mapped ? x_map : x_dev, o, b);
                CUDA_CHECK(cudaStreamSynchronize(st));
                if (mapped) std::memcpy(out.data(), out_host, (size_t)b * 40);
                else CUDA_CHECK(cudaMemcpyAsync(out.data(), out_dev, (size_t)b * 40, cudaMemcpyDeviceToHost, st));
                CUDA_CHECK(cudaStreamSynchronize(st));
                const double e = rel_error(out.data(), ref_all.data(), b);
                if (!(e <= c.tol)) {
                    ++failures;
                    std::printf("  FAIL %s batch %d%s: rel error %.3g\n", c.name.c_str(), b, mapped ? " mapped" : "", e);
                }
                if (!(e <= worst)) worst = e, worst_b = b;
            }
        }
        std::printf("  %-32s worst rel error %.3g (batch %d)%s\n", c.name.c_str(), worst, worst_b,
                    worst <= c.tol ? "" : "  <-- FAIL");
    } catch (const std::exception& e) {
        ++failures;
        std::printf("  %-32s ERROR %s\n", c.name.c_str(), e.what());
    }
    // interleaved cluster / no-cluster runs: the counters must be back at zero each time
    for (int round = 0; round < 3; ++round)
        for (int ci = 0; ci < (int)configs.size(); ci += 5) {
            if (!selected(configs[ci].name)) continue;
            const int b = 33 + round * 100;
            CUDA_CHECK(cudaMemsetAsync(out_dev, 0xff, (size_t)b * 40, st));
            launch(configs[ci], x_dev, out_dev, b);
            CUDA_CHECK(cudaMemcpyAsync(out.data(), out_dev, (size_t)b * 40, cudaMemcpyDeviceToHost, st));
            CUDA_CHECK(cudaStreamSynchronize(st));
            const double e = rel_error(out.data(), ref_all.data(), b);
            if (!(e <= configs[ci].tol)) ++failures, std::printf("  FAIL interleaved %s batch %d: %.3g\n", configs[ci].name.c_str(), b, e);
        }
    std::printf("correctness: %d failures\n", failures);
    std::fflush(stdout);
    return failures;
}

}  // namespace probe
