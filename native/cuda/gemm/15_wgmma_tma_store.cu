// cuda.15_tma_store_fp16 / _bf16 / _fp8 / _tf32: 14 with C stored through shared memory by the copy engine.
// Change from 14: step TmaStore (hopper::launch<Op, TmaStore>): each warp writes its 16 rows 32 columns at a
// time (tf32's C^T: a warp pair, 32 x 32) into one of its two swizzled slots; its lane 0 hands each to TMA.
// Limit: the tensor cores wait while the boxes are filled (~7 % of 4096^3, NOTES.md); odd-g lanes write
// chunk q ^ 2 so a half-warp meets every bank once; unavailable unless C has 16-byte rows and 14 runs.
// Run: gemmpad bench gemm --kernels cuda.15_tma_store_fp16 --sizes 4096x4096x4096
// Profile: ncu -k regex:wgmma_kernel -c 1 gemmpad bench gemm --kernels cuda.15_tma_store_fp16 --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 GFLOP/s (% of cuBLAS at each precision): bf16 748,513 (98.7 %), fp16 725,685 (99.0 %), fp8 1,191,392 (89.0 %), tf32 394,903 (101.2 %)
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
using Fp16 = hopper::Rung<hopper::Fp16, hopper::TmaStore>;
using Bf16 = hopper::Rung<hopper::Bf16, hopper::TmaStore>;
using Fp8 = hopper::Rung<hopper::Fp8, hopper::TmaStore>;
using Tf32 = hopper::Rung<hopper::Tf32Swap, hopper::TmaStore>;
void launch_fp16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp16, hopper::TmaStore>(p, s, "cuda.15_tma_store_fp16");
}
void launch_bf16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Bf16, hopper::TmaStore>(p, s, "cuda.15_tma_store_bf16");
}
void launch_fp8(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp8, hopper::TmaStore>(p, s, "cuda.15_tma_store_fp8");
}
void launch_tf32(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Tf32Swap, hopper::TmaStore>(p, s, "cuda.15_tma_store_tf32");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.15_tma_store_fp16", "fp16", gemmpad::InType::F16,
                         "14's persistent wgmma kernel storing C through shared memory with TMA",
                         gemmpad::cuda::launch_fp16, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Fp16::rejects, gemmpad::cuda::Fp16::anatomy);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.15_tma_store_bf16", "bf16", gemmpad::InType::BF16,
                         "14's persistent wgmma kernel storing C through shared memory with TMA",
                         gemmpad::cuda::launch_bf16, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Bf16::rejects, gemmpad::cuda::Bf16::anatomy);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.15_tma_store_fp8", "fp8", gemmpad::InType::F8E4M3,
                         "14's persistent wgmma kernel on fp8 storing C through shared memory with TMA",
                         gemmpad::cuda::launch_fp8, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Fp8::rejects, gemmpad::cuda::Fp8::anatomy);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.15_tma_store_tf32", "tf32", gemmpad::InType::F32,
                         "14's persistent tf32 kernel (C^T = B^T A^T) storing C through shared memory with TMA",
                         gemmpad::cuda::launch_tf32, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Tf32::rejects, gemmpad::cuda::Tf32::anatomy);
