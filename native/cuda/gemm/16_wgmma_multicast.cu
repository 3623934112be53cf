// cuda.16_multicast_fp16 / _bf16 / _fp8: 15 with block pairs in a cluster sharing each B tile (TMA multicast).
// Change from 15: step Multicast (hopper::launch<Op, Multicast>): blocks 2q, 2q+1 take tiles one
// above the other; each loads half of B's tile into both (fp8: half of B^T's rows); a stage is refilled
// when both are done with it.
// Limit: buys nothing over 15 here: L2 was not the limit (NOTES.md); the pair runs at its slower block's
// pace; only where TMA reads both operands (not cp.async) and the tiles outnumber the SMs, else unavailable.
// Run: gemmpad bench gemm --kernels cuda.16_multicast_fp16 --sizes 4096x4096x4096
// Profile: ncu -k regex:wgmma_kernel -c 1 gemmpad bench gemm --kernels cuda.16_multicast_fp16 --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 GFLOP/s (% of cuBLAS at each precision): bf16 742,239 (99.3 %), fp16 718,582 (98.5 %), fp8 1,172,847 (87.9 %)
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
using Fp16 = hopper::Rung<hopper::Fp16, hopper::Multicast>;
using Bf16 = hopper::Rung<hopper::Bf16, hopper::Multicast>;
using Fp8 = hopper::Rung<hopper::Fp8, hopper::Multicast>;
void launch_fp16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp16, hopper::Multicast>(p, s, "cuda.16_multicast_fp16");
}
void launch_bf16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Bf16, hopper::Multicast>(p, s, "cuda.16_multicast_bf16");
}
void launch_fp8(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp8, hopper::Multicast>(p, s, "cuda.16_multicast_fp8");
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
