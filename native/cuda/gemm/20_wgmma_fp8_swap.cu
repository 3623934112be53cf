// cuda.20_fp8_swap: fp8 with no transpose of B, as 13 does for tf32: C^T = B^T A^T, B^T from registers.
// Change from 15 (fp8): hopper::launch<Fp8Swap, TmaStore>: B's row-major tile, its k rows in ldmatrix's order
// (a 5-D tensor map), read by ldmatrix .trans and byte permutes into wgmma's A fragments; A's tile is wgmma's B.
// Limit: fragments in two register sets taken in turn (13's); the tensor cores wait while C's boxes are
// filled (~12 us a call at 4096^3, NOTES). Like 15 elsewhere.
// Run: gemmpad bench gemm --kernels cuda.20_fp8_swap --sizes 4096x4096x4096
// Profile: ncu -k regex:wgmma_kernel -c 1 gemmpad bench gemm --kernels cuda.20_fp8_swap --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 1,339,665 GFLOP/s = 99.7 % of cuBLAS fp8 (fast accumulation)
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
using This = hopper::Rung<hopper::Fp8Swap, hopper::TmaStore>;
void launch(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp8Swap, hopper::TmaStore>(p, s, "cuda.20_fp8_swap");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.20_fp8_swap", "fp8", gemmpad::InType::F8E4M3,
                         "15's fp8 kernel on C^T = B^T A^T: B^T from registers by ldmatrix, no transpose of B",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable, gemmpad::cuda::This::rejects,
                           gemmpad::cuda::This::anatomy);
