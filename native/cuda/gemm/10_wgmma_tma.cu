// cuda.10_wgmma_fp16: Hopper's tensor-core path: wgmma fed by TMA through an mbarrier pipeline.
// Change from 09: one warpgroup issues a 64x256x16 product reading both operands from shared memory;
// one thread asks the copy engine for a whole swizzled tile; a producer warpgroup loads, two consumers
// multiply, meeting at full/empty mbarriers, 4 stages of 48 KB. Options: hopper::launch<Fp16> (README.md).
// Limit: sm_90a only; the 128x256 tile and 197 KB of shared memory cost ~8 us even for one tile, so the
// MLP's shapes stay far from cuBLAS (17 takes those).
// Run: gemmpad bench gemm --kernels cuda.10_wgmma_fp16 --sizes 4096x4096x4096
// Profile: ncu -k regex:wgmma_kernel -c 1 gemmpad bench gemm --kernels cuda.10_wgmma_fp16 --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 697,688 GFLOP/s = 95.0 % of cuBLAS fp16
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
using This = hopper::Rung<hopper::Fp16, hopper::Steps>;
void launch(const GemmProblem& p, cudaStream_t s) { hopper::launch<hopper::Fp16>(p, s, "cuda.10_wgmma_fp16"); }
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.10_wgmma_fp16", "fp16", gemmpad::InType::F16,
                         "Hopper wgmma 64x256x16 from shared memory, TMA loads, 4-stage mbarrier pipeline, "
                         "producer/consumer warpgroups",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable, nullptr,
                           gemmpad::cuda::This::anatomy);
