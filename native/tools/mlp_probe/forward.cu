// The last part of every mode but "floors", "ncu", "trace", "check", "loads" and "staging":
// Mlp::forward end to end from C++ per kernel and batch (its own plans and I/O; other plans'
// kernel times: the modes that launch configurations directly).
#include "probe.cuh"

namespace probe {

int Probe::forward() {
    std::printf("\n== Mlp::forward (C++ host clock, no Python), kernel / e2e us, median of 2000 (300 at >= 256)\n");
    std::vector<float> out((size_t)kMax * 10);
    auto e2e = [&](const char* k, int b, int reps) {
        const ForwardTimes t = time_forward(*mlp, k, x_all.data(), out.data(), ref_all.data(), b, reps, 100);
        std::printf("  %5d: %6.2f / %7.2f%s", b, t.kernel_us, t.e2e_us,
                    t.error <= (std::string(k) == "cuda.mlp_fused_tf32" ? 5e-3 : 1e-5) ? "" : " WRONG");
        std::fflush(stdout);
    };
    for (const char* k : {"cuda.mlp_fused", "cuda.mlp_fused_tf32", "cuda.mlp_fused_3xtf32"}) {
        std::printf("  %-22s default plans and I/O:\n   ", k);
        int n = 0;
        const std::vector<int> fb = mode == "rows" ? std::vector<int>{512, 1024, 2048, 4096}
                                                   : std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096};
        for (int b : fb) {
            try {
                e2e(k, b, b >= 256 ? 300 : 2000);
            } catch (const std::exception& ex) {
                std::printf("  %5d: ERROR %s", b, ex.what());
            }
            if (++n % 5 == 0) std::printf("\n   ");
        }
        std::printf("\n");
    }
    std::printf("\nprobe done\n");
    return 0;
}

}  // namespace probe
