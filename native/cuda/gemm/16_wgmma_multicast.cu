// cuda.16_multicast_fp16 / _bf16 / _fp8 / _tf32: 15 with block pairs in a cluster sharing a tile (TMA multicast).
// Change from 15: step Multicast (hopper::launch<Op, Multicast>): blocks 2q, 2q+1 take tiles one above the other
// and each loads half of B's tile into both (fp8: half of B^T's rows); tf32's C^T tiles lie side by side and
// share A's 256-row tile instead; a stage is refilled when both are done with it.
// Limit: within ~1 % of 15 (L2 was not the limit, NOTES.md; tf32 +1.5-2.6 % at 8192^3 in one A/B); the pair runs
// at its slower block's pace; only where TMA reads both operands and the tiles outnumber the SMs.
// Run: gemmpad bench gemm --kernels cuda.16_multicast_fp16 --sizes 4096x4096x4096
// Profile: ncu -k regex:wgmma_kernel -c 1 gemmpad bench gemm --kernels cuda.16_multicast_fp16 --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 GFLOP/s (% of cuBLAS at each precision): bf16 753,305 (100.0 %), fp16 729,011 (99.3 %), fp8 1,190,566 (88.6 %), tf32 397,498 (101.9 %)
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
using Fp16 = hopper::Rung<hopper::Fp16, hopper::Multicast>;
using Bf16 = hopper::Rung<hopper::Bf16, hopper::Multicast>;
using Fp8 = hopper::Rung<hopper::Fp8, hopper::Multicast>;
using Tf32 = hopper::Rung<hopper::Tf32Swap, hopper::Multicast>;
void launch_fp16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp16, hopper::Multicast>(p, s, "cuda.16_multicast_fp16");
}
void launch_bf16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Bf16, hopper::Multicast>(p, s, "cuda.16_multicast_bf16");
}
void launch_fp8(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp8, hopper::Multicast>(p, s, "cuda.16_multicast_fp8");
}
void launch_tf32(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Tf32Swap, hopper::Multicast>(p, s, "cuda.16_multicast_tf32");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.16_multicast_fp16", "fp16", gemmpad::InType::F16,
                         "15 with block pairs in a cluster sharing B tiles by TMA multicast",
                         gemmpad::cuda::launch_fp16, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Fp16::rejects, gemmpad::cuda::Fp16::anatomy);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.16_multicast_bf16", "bf16", gemmpad::InType::BF16,
                         "15 with block pairs in a cluster sharing B tiles by TMA multicast",
                         gemmpad::cuda::launch_bf16, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Bf16::rejects, gemmpad::cuda::Bf16::anatomy);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.16_multicast_fp8", "fp8", gemmpad::InType::F8E4M3,
                         "15 on fp8 with block pairs in a cluster sharing B^T tiles by TMA multicast",
                         gemmpad::cuda::launch_fp8, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Fp8::rejects, gemmpad::cuda::Fp8::anatomy);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.16_multicast_tf32", "tf32", gemmpad::InType::F32,
                         "15's tf32 (C^T = B^T A^T) with block pairs side by side sharing A's tiles by TMA multicast",
                         gemmpad::cuda::launch_tf32, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Tf32::rejects, gemmpad::cuda::Tf32::anatomy);
