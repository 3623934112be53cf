// cuda.14_persistent_fp16 / _bf16 / _fp8 / _tf32: 10's, 11's, 18's and 13's kernel on a persistent grid.
// Change from 10/11/18/13: step Persistent (hopper::launch<Op, Persistent>): min(tiles, SMs) blocks walk the tiles;
// stage counters and barrier phases run on, so the producer loads the next tile while this one is stored.
// Limit: consumers still store from registers (8 rows per float2) while the tensor cores idle; 4096^3 is
// 3.9 waves of tiles. Unavailable where the tiles do not outnumber the SMs (that is 10's launch).
// Run: gemmpad bench gemm --kernels cuda.14_persistent_fp16 --sizes 4096x4096x4096
// Profile: ncu -k regex:wgmma_kernel -c 1 gemmpad bench gemm --kernels cuda.14_persistent_fp16 --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 GFLOP/s (% of cuBLAS at each precision): bf16 729,630 (96.8 %), fp16 705,597 (96.0 %), fp8 1,144,409 (85.2 %), tf32 380,658 (98.7 %)
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
using Fp16 = hopper::Rung<hopper::Fp16, hopper::Persistent>;
using Bf16 = hopper::Rung<hopper::Bf16, hopper::Persistent>;
using Fp8 = hopper::Rung<hopper::Fp8, hopper::Persistent>;
using Tf32 = hopper::Rung<hopper::Tf32Swap, hopper::Persistent>;
void launch_fp16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp16, hopper::Persistent>(p, s, "cuda.14_persistent_fp16");
}
void launch_bf16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Bf16, hopper::Persistent>(p, s, "cuda.14_persistent_bf16");
}
void launch_fp8(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp8, hopper::Persistent>(p, s, "cuda.14_persistent_fp8");
}
void launch_tf32(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Tf32Swap, hopper::Persistent>(p, s, "cuda.14_persistent_tf32");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.14_persistent_fp16", "fp16", gemmpad::InType::F16,
                         "10's wgmma kernel on a persistent grid (a block per SM walks the tiles)",
                         gemmpad::cuda::launch_fp16, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Fp16::rejects, gemmpad::cuda::Fp16::anatomy);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.14_persistent_bf16", "bf16", gemmpad::InType::BF16,
                         "11's wgmma kernel on a persistent grid (a block per SM walks the tiles)",
                         gemmpad::cuda::launch_bf16, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Bf16::rejects, gemmpad::cuda::Bf16::anatomy);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.14_persistent_fp8", "fp8", gemmpad::InType::F8E4M3,
                         "18's fp8 wgmma kernel on a persistent grid (a block per SM walks the tiles)",
                         gemmpad::cuda::launch_fp8, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Fp8::rejects, gemmpad::cuda::Fp8::anatomy);
GEMMPAD_REGISTER_CUDA_RUNG("cuda.14_persistent_tf32", "tf32", gemmpad::InType::F32,
                         "13's tf32 kernel (C^T = B^T A^T) on a persistent grid (a block per SM walks the tiles)",
                         gemmpad::cuda::launch_tf32, gemmpad::cuda::hopper::unavailable,
                           gemmpad::cuda::Tf32::rejects, gemmpad::cuda::Tf32::anatomy);
