// Mode "floors": the event-timed floor three ways (events as graph nodes around the kernel, what
// Mlp does; events on the stream around a graph of the kernel alone; no graph at all).
#include "probe.cuh"

namespace probe {

int Probe::floors() {
    allow_empty_clusters_of_14();
    std::printf("\n== floors three ways (kernel = events, e2e = host enqueue + sync), median of 2000; rounds of each\n");
    auto row = [](const std::string& what, Timing t) { std::printf("  %-62s kernel %6.2f us  e2e %6.2f us\n", what.c_str(), t.kernel_us, t.e2e_us); };
    const std::vector<std::pair<std::string, std::function<void()>>> ks = {
        {"empty 1x32", [&] { launch_empty(st, 1, 32, 1); }},
        {"empty 14x448 cluster 14", [&] { launch_empty(st, 14, 448, 14); }},
        {"empty 112x224 cluster 7", [&] { launch_empty(st, 112, 224, 7); }},
        {"split bm1 fma c8 +cl xs, batch 1, x mapped", [&] { launch(find("split bm1 fma c8 +cl xs"), x_map, out_map, 1); }},
        {"split bm1 fma c8 +cl, batch 1, x device", [&] { launch(find("split bm1 fma c8 +cl"), x_dev, out_dev, 1); }},
        {"ksplit bm16 w7 tf32, batch 256", [&] { launch(find("ksplit bm16 w7 tf32"), x_dev, out_dev, 256); }},
        {"ksplit bm32 w7 3xtf32, batch 256", [&] { launch(find("ksplit bm32 w7 3xtf32"), x_dev, out_dev, 256); }},
    };
    for (int round = 0; round < 2; ++round)
        for (const auto& [name, k] : ks) {
            row(name + " | graph [ev,k,ev]", time_graph(st, k, 2000));
            row(name + " | ev, graph [k], ev", time_graph_outside(st, k, 2000));
            row(name + " | ev, k, ev (no graph)", time_stream(st, k, 2000));
        }
    return 0;
}

}  // namespace probe
