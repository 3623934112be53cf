// cuda.18_wgmma_fp8: 15's persistent kernel (TMA loads and stores) on 8-bit floats, e4m3 in and
// fp32 accumulate: half fp16's bytes per operand and twice its k per instruction.
//
// What changed from 15: operands are e4m3 (4 exponent bits, 3 mantissa bits, finite up to 448;
// the caller's float32 values are rounded once and saturate past it, as cuBLAS's fp8 GEMM takes
// them with unit scales), and each wgmma is m64n256k32.f32.e4m3.e4m3. A k-tile is 128 of them =
// one 128-byte swizzled row, so stages, boxes and descriptors keep 10-15's byte sizes with four
// k32 products per stage. wgmma reads 8-bit operands only K-major (as tf32), so B is first
// transposed into the workspace ([N, K]) and described like A (12's path); no multicast (16
// shares row-major B boxes).
// Why it should be faster: per stage the tensor cores do twice fp16's work on the same bytes, and
// Hopper's fp8 rate is twice its fp16 rate, so the loads per flop halve.
// What holds it back: the transpose of B (an extra read and write of K x N bytes and a launch per
// call); 15's 128x256 tiles, which the MLP's shapes cannot fill; 3 mantissa bits (relative error
// ~2^-4 per operand: a lab for speed, not for the MLP's accuracy); rows of A must be 16-byte
// multiples for TMA (K % 16), 4-byte for cp.async, else A is copied too; Hopper and sm_90a only.
// cuBLAS's fp8 GEMM takes only K and N that are multiples of 16, so N = 100 has no reference.
// Measured: 8192^3 1,137,966 GFLOP/s = 84.6 % of cuBLAS fp8
// (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
void launch(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp8, true, true>(p, s, "cuda.18_wgmma_fp8");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_IF("cuda.18_wgmma_fp8", "fp8", gemmpad::InType::F8E4M3,
                         "15's persistent wgmma kernel on e4m3 operands (k = 32), B transposed first",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable);
