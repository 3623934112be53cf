// cpu.01_naive: the textbook triple loop, one output element at a time; the baseline.
// Change: none, this is where the ladder starts (i-j-k order, so the inner loop walks B down a column).
// Limit: one multiply-add per two loads, and every step of k touches a new cache line of B once N is large.
// Run: gemmpad bench gemm --kernels cpu.01_naive --sizes 256x100x784
// Profile: perf record -g gemmpad bench gemm --kernels cpu.01_naive --sizes 256x100x784
// Figure (H200 host 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 256x100x784 2.6 GFLOP/s = 0.7 % of NumPy
#include "../cpu.h"

namespace gemmpad::cpu {
namespace {

void naive(const GemmProblem& p) {
    const float* A = static_cast<const float*>(p.A);
    const float* B = static_cast<const float*>(p.B);
    for (int i = 0; i < p.M && !stopped(p.presses); ++i) {  // Ctrl-C: between rows (cpu.h)
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
