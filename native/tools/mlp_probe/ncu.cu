// Mode "ncu": a few launches of the fused kernels for Nsight Compute to profile (x in device memory).
#include "probe.cuh"

namespace probe {

int Probe::ncu() {
    const std::vector<std::pair<std::string, int>> runs = {
        {"split bm1 fma c8 +cl", 1}, {"split bm16 3xtf32 c16 -cl", 256},
        {"rows bm32 w7 rot 3xtf32", 4096}, {"rows bm32 w7 rot tf32", 4096}};
    for (int rep = 0; rep < 2; ++rep)
        for (const auto& [name, b] : runs) launch(find(name), x_dev, out_dev, b);
    CUDA_CHECK(cudaStreamSynchronize(st));
    std::printf("ncu mode done\n");
    return 0;
}

}  // namespace probe
