// cuda.13_wgmma_tf32_swap: 12 without the transpose of B: the block computes C^T = B^T A^T.
// Change from 12: hopper::launch<Tf32Swap>: wgmma's A operand is B^T loaded from the row-major TMA tile
// (its rows reordered so each load meets no bank conflict) into registers, its B operand is A's K-major
// tile; block tile 256 x 128; the epilogue writes columns.
// Limit: register fragments must live until their wgmma batch read them: two sets, taken in turn, so a
// warpgroup loads stage k's while stage k-1's batch runs (one wait<0> a stage before); scalar stores down C's columns.
// Run: gemmpad bench gemm --kernels cuda.13_wgmma_tf32_swap --sizes 4096x4096x4096
// Profile: ncu -k regex:wgmma_kernel -c 1 gemmpad bench gemm --kernels cuda.13_wgmma_tf32_swap --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 380,760 GFLOP/s = 102.1 % of cuBLAS tf32
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
using This = hopper::Rung<hopper::Tf32Swap, hopper::Steps>;
void launch(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Tf32Swap>(p, s, "cuda.13_wgmma_tf32_swap");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.13_wgmma_tf32_swap", "tf32", gemmpad::InType::F32,
                         "Hopper wgmma tf32 on C^T = B^T A^T: B^T from registers, no transpose of B",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable, nullptr,
                           gemmpad::cuda::This::anatomy);
