// Mode "trace" (a -DGEMMPAD_MLP_TRACE build, mlp_probe.sh STEPS=trace): globaltimer stamps per block
// and phase of the fused kernels, latest block per phase, batch 1 to 512.
#include "probe.cuh"

namespace probe {

#ifdef GEMMPAD_MLP_TRACE
}  // namespace probe
namespace gemmpad::cuda {  // fused_mlp.cu and fused_mlp_ksplit.cu, trace builds
void fused_trace_read(unsigned long long* host);
void fused_trace_clear();
void ksplit_trace_read(unsigned long long* host);
void ksplit_trace_clear();
}  // namespace gemmpad::cuda
namespace probe {
#endif

int Probe::trace() {
#ifdef GEMMPAD_MLP_TRACE
    std::vector<unsigned long long> tr(64 * 8);
    const char* phase[] = {"start", "x in (sync)", "weights in (bulk)", "h1 done", "partial pushed", "tail start", "end"};
    for (const auto& [name, b] : std::vector<std::pair<std::string, int>>{
             {"split bm1 fma c16 +cl", 1}, {"split bm1 fma c8 +cl", 1}, {"split bm1 fma c8 +cl xs", 1}, {"split bm1 fma c16 -cl", 1},
             {"split bm16 3xtf32 c16 -cl", 256}, {"split bm16 3xtf32 c16 +cl", 256}, {"ksplit bm16 w7 tf32", 16},
             {"ksplit bm16 w7 tf32", 64}, {"ksplit bm32 w7 tf32", 256}, {"ksplit bm64 w7 tf32", 512},
             {"ksplit bm64 w7 3xtf32", 512}, {"ksplit bm16 w7 tf32", 256}}) {
        const Config& c = find(name);
        const int blocks = std::min(64, ((b + c.bm - 1) / c.bm) * (c.ksplit ? 7 : 112 / c.cols));
        const char* kphase[] = {"start", "x in", "layer 1 done", "cluster wait", "h1 in", "h2 in", "logits in", "end"};
        std::vector<std::vector<double>> ph(8);  // per phase: block 0 (tail) and latest non-tail block, ns after earliest start
        std::vector<std::vector<double>> other(8);
        for (int rep = 0; rep < 300; ++rep) {
            c.ksplit ? ksplit_trace_clear() : fused_trace_clear();
            launch(c, x_dev, out_dev, b);
            CUDA_CHECK(cudaStreamSynchronize(st));
            c.ksplit ? ksplit_trace_read(tr.data()) : fused_trace_read(tr.data());
            unsigned long long t0 = ~0ull;
            for (int blk = 0; blk < blocks; ++blk) t0 = std::min(t0, tr[blk * 8]);
            for (int i = 0; i < 8; ++i) {
                unsigned long long latest = 0;
                for (int blk = 0; blk < blocks; ++blk)
                    if (tr[blk * 8 + i] >= t0) latest = std::max(latest, tr[blk * 8 + i]);
                if (rep >= 50) other[i].push_back(latest ? double(latest - t0) : -1.0);
            }
        }
        std::printf("  trace %-32s batch %4d (ns after the first block starts; latest block):", name.c_str(), b);
        for (int i = 0; i < (c.ksplit ? 8 : 7); ++i)
            std::printf(" %s %.0f |", c.ksplit ? kphase[i] : phase[i], median(other[i]));
        std::printf("\n");
    }
    return 0;
#else
    std::printf("trace mode needs a -DGEMMPAD_MLP_TRACE build\n");
    return 2;
#endif
}

}  // namespace probe
