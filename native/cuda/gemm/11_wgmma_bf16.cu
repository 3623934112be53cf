// cuda.11_wgmma_bf16: 10's Hopper kernel on bfloat16 operands, the type modern training runs in.
//
// What changed from 10: the operands are bf16 (8 exponent bits like fp32, 8 significand bits
// against fp16's 11), read by wgmma.mma_async.m64n256k16.f32.bf16.bf16 with fp32 accumulators;
// TMA moves them as CU_TENSOR_MAP_DATA_TYPE_BFLOAT16. The tiles, the 128-byte swizzle, the
// descriptors and the pipeline are 10's unchanged (wgmma.cuh): both types are 2 bytes, and
// wgmma reads a row-major B (transposed, "N-major") for either.
// Why it should be faster: it is not, than 10 — the tensor cores run bf16 at fp16's rate. It
// is the rung for what bf16 buys: fp32's range (no overflow past 65,504, no loss of small
// gradients) at 16-bit cost, where fp16 needs loss scaling. The reference is cuBLAS bf16.
// What holds it back: as 10 (Hopper and sm_90a only; the 128x256 tile's fixed cost on small
// problems); precision: 3 significant decimal digits
// per operand, so its error against float64 is ~8x fp16's (tests allow 1e-2, see
// tests/test_gemm.py).
// Measured: 4096^3 691,065 GFLOP/s = 92.9 % of cuBLAS bf16; 8192^3 714,340 GFLOP/s = 99.0 % of
// cuBLAS bf16 (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
void launch(const GemmProblem& p, cudaStream_t s) { hopper::launch<hopper::Bf16>(p, s, "cuda.11_wgmma_bf16"); }
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_IF("cuda.11_wgmma_bf16", "bf16", gemmpad::InType::BF16,
                         "Hopper wgmma 64x256x16 on bfloat16 operands (10's kernel), fp32 accumulate",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable);
