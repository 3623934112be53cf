// Mode "all", kernel timing: every configuration per batch (events around one graph-launched kernel),
// x and out in device or mapped memory, and 20 launches back to back.
#include "probe.cuh"

namespace probe {

void Probe::kernels() {
    const int tb[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
    std::printf("\n== kernel time (us, events around one graph-launched kernel, x + out in device memory, median of 300)\n");
    std::printf("  %-32s", "config");
    for (int b : tb) std::printf(" %6d", b);
    std::printf("\n");
    for (const auto& c : configs) try {
        if (!c.rows && !c.cluster && c.cols == 8) continue;
        std::printf("  %-32s", c.name.c_str());
        for (int b : tb) {
            const bool skip = (!c.rows && c.engine == Engine::Fma && b > 512) || (!c.rows && b > 1024) || (c.rows && b < 128);
            if (skip) {
                std::printf(" %6s", "-");
                continue;
            }
            const Timing t = time_graph(st, [&] { launch(c, x_dev, out_dev, b); }, b >= 1024 ? 100 : 300);
            std::printf(" %6.2f", t.kernel_us);
            std::fflush(stdout);
        }
        std::printf("\n");
    } catch (const std::exception& e) {
        std::printf(" ERROR %s\n", e.what());
    }
    std::printf("\n== the same, x read from / probabilities written to mapped host memory (batches 1, 2, 4, 16)\n");
    for (const auto& c : configs) try {
        if (c.rows || !c.cluster || c.bm > 2) continue;
        std::printf("  %-32s", c.name.c_str());
        for (int b : {1, 2, 4, 16}) std::printf(" %6.2f", time_graph(st, [&] { launch(c, x_map, out_map, b); }, 300).kernel_us);
        std::printf("\n");
    } catch (const std::exception& e) {
        std::printf(" ERROR %s\n", e.what());
    }
    std::printf("\n== back to back: 20 launches between two events (per launch), x + out in device memory\n");
    for (const auto& nb : std::vector<std::pair<std::string, int>>{
             {"split bm1 fma c16 +cl", 1}, {"split bm1 fma c8 +cl", 1}, {"split bm16 3xtf32 c16 -cl", 256},
             {"rows bm32 w7 rot 3xtf32", 4096}, {"rows bm32 w7 rot tf32", 4096}}) {
        const Config& c = find(nb.first);
        const int b = nb.second;
        std::printf("  %-32s batch %4d: %.2f us\n", c.name.c_str(), b,
                    time_graph(st, [&] { launch(c, x_dev, out_dev, b); }, 100, 20).kernel_us);
    }
    std::fflush(stdout);
}

}  // namespace probe
