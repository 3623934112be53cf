// cpu.01_naive: the textbook triple loop, the baseline the rest of the ladder is measured from.
//
// What changed: nothing; this is the baseline. One output element at a time,
// i-j-k order, so the inner loop walks B down a column (stride N floats):
// every step touches a new cache line once N is large.
// Why it is here: it is the CPU figure GPU kernels are usually compared with,
// and the reference the optimised CPU kernel must beat.
// What holds it back: one multiply-add per two loads, B read down its columns (02 fixes both).
// Measured: 256x100x784 2.7 GFLOP/s = 0.7 % of NumPy
// (the H200's host; assets/benchmarks/h200/bench-gemm.json, `gemmpad bench report`).
#include "../cpu.h"

namespace gemmpad::cpu {
namespace {

void naive(const GemmProblem& p) {
    const float* A = static_cast<const float*>(p.A);
    const float* B = static_cast<const float*>(p.B);
    for (int i = 0; i < p.M; ++i) {
        for (int j = 0; j < p.N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < p.K; ++k) acc += A[(size_t)i * p.K + k] * B[(size_t)k * p.N + j];
            if (p.bias) acc += p.bias[j];
            if (p.act == Act::Relu && acc < 0.0f) acc = 0.0f;
            p.C[(size_t)i * p.N + j] = acc;
        }
    }
}

}  // namespace
}  // namespace gemmpad::cpu

GEMMPAD_REGISTER_CPU("cpu.01_naive", "fp32", "triple loop, one output at a time (the baseline the other CPU rungs are measured against)",
                     gemmpad::cpu::naive);
