// cuda.18_wgmma_fp8: 10's kernel on e4m3 operands: half fp16's bytes, twice its k per wgmma; every shape.
// Change from 10: the operand type, hopper::launch<Fp8>: m64n256k32.f32.e4m3.e4m3, float32 inputs
// rounded once (saturating at 448); 8-bit operands are K-major only, so B is transposed first (16-byte
// pieces, byte permutes).
// Limit: that transpose (10.9 of ~120 us at 4096^3); 3 mantissa bits (a lab for speed, not accuracy);
// cuBLASLt fp8 takes only K, N multiples of 16, so N = 100 has no reference.
// Run: gemmpad bench gemm --kernels cuda.18_wgmma_fp8 --sizes 4096x4096x4096
// Profile: ncu -k regex:wgmma_kernel -c 1 gemmpad bench gemm --kernels cuda.18_wgmma_fp8 --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 1,107,378 GFLOP/s = 82.1 % of cuBLAS fp8 (fast accumulation)
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
using This = hopper::Rung<hopper::Fp8, hopper::Steps>;
void launch(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp8>(p, s, "cuda.18_wgmma_fp8");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.18_wgmma_fp8", "fp8", gemmpad::InType::F8E4M3,
                         "10's wgmma kernel on e4m3 operands (k = 32), B transposed first",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable, nullptr,
                           gemmpad::cuda::This::anatomy);
