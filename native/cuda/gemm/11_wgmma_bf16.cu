// cuda.11_wgmma_bf16: 10's kernel on bfloat16 operands (fp32's range at 16-bit cost).
// Change from 10: the operand type only, hopper::launch<Bf16>: m64n256k16.f32.bf16.bf16, TMA type
// BFLOAT16; tiles, swizzle, descriptors and pipeline unchanged (both types are 2 bytes).
// Limit: not faster than 10 (same tensor rate); 8 significand bits, error ~8x fp16's (tests allow 1e-2).
// Run: gemmpad bench gemm --kernels cuda.11_wgmma_bf16 --sizes 4096x4096x4096
// Profile: ncu -k regex:wgmma_kernel -c 1 gemmpad bench gemm --kernels cuda.11_wgmma_bf16 --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 722,207 GFLOP/s = 95.5 % of cuBLAS bf16
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
using This = hopper::Rung<hopper::Bf16, hopper::Steps>;
void launch(const GemmProblem& p, cudaStream_t s) { hopper::launch<hopper::Bf16>(p, s, "cuda.11_wgmma_bf16"); }
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.11_wgmma_bf16", "bf16", gemmpad::InType::BF16,
                         "Hopper wgmma 64x256x16 on bfloat16 operands (10's kernel), fp32 accumulate",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable, nullptr,
                           gemmpad::cuda::This::anatomy);
