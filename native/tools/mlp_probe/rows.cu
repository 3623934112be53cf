// Mode "rows": the row-block and k-split kernels alone, per batch, with x in L2, copied in just before,
// or copied in with an empty kernel before the start event.
#include "probe.cuh"

namespace probe {

void Probe::rows() {
    const int tb[] = {16, 64, 128, 256, 512, 1024, 2048, 4096};
    // x: 0 in device memory (L2-warm); 1 copied in just before the start event (as Mlp::forward
    // does); 2 copied in, then an empty kernel, then the start event (the copy engine hands over
    // to the compute queue before the timed span opens)
    const char* how[] = {"in device memory (L2-warm)", "copied in from pinned host memory just before (as Mlp::forward does)",
                         "copied in, then an empty kernel, then the start event"};
    for (int fresh = 0; fresh < 3; ++fresh) {
        std::printf("\n== row-block and k-split kernels (us, events around one graph-launched kernel, median of 200), x %s\n",
                    how[fresh]);
        std::printf("  %-32s", "config");
        for (int b : tb) std::printf(" %6d", b);
        std::printf("\n");
        auto row_of = [&](const std::string& name, const std::function<void(int)>& enqueue) {
            std::printf("  %-32s", name.c_str());
            for (int b : tb) {
                const auto copy_in = [&] {
                    CUDA_CHECK(cudaMemcpyAsync(x_dev, x_host, (size_t)b * 784 * 4, cudaMemcpyHostToDevice, st));
                    if (fresh == 2) launch_empty(st, 1, 32, 1);
                };
                const Timing t = fresh ? time_graph(st, [&] { enqueue(b); }, 200, 1, {}, {}, copy_in)
                                       : time_graph(st, [&] { enqueue(b); }, 200);
                std::printf(" %6.2f", t.kernel_us);
                std::fflush(stdout);
            }
            std::printf("\n");
        };
        row_of("empty kernel, 7 blocks x 224", [&](int) { launch_empty(st, 7, 224, 1); });
        for (const auto& c : configs) try {
            if ((!c.rows && !c.ksplit) || !selected(c.name)) continue;
            row_of(c.name, [&](int b) { launch(c, x_dev, out_dev, b); });
        } catch (const std::exception& e) {
            std::printf(" ERROR %s\n", e.what());
        }
    }
}

}  // namespace probe
