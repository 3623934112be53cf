// cuda.12_wgmma_tf32: 10's Hopper kernel on float32 operands read as tf32, the tensor-core path
// fp32 users get (cuBLAS's tf32 mode; torch's allow_tf32).
//
// What changed from 10: wgmma.mma_async.m64n256k8.f32.tf32.tf32, k = 8 per instruction on fp32
// bit patterns (the tensor cores ignore the low 13 significand bits). A k-tile is 32 floats =
// one 128-byte swizzled row, so stages, boxes and descriptors keep 10's byte sizes; four k8
// products per stage instead of four k16. wgmma reads tf32 only K-major (no transpose bit as
// for 16-bit types), so B is first transposed into the workspace ([N, K], 32x32 tiles through
// shared memory) and described like A.
// Why it should be faster: 09_mma_tf32 issues mma.sync from registers loaded by ldmatrix and
// 32-bit shared loads, the Ampere path, which reaches ~40 % of cuBLAS tf32 on Hopper; wgmma
// from shared memory with TMA and warp specialisation is the path cuBLAS takes.
// What holds it back: the transpose of B, an extra read and write of K x N floats and a launch
// each call (13, which avoids it, is 17 % faster at 4096^3); a stage carries half fp16's k, so
// the pipeline waits on barriers twice as often per flop; and as 10: Hopper and sm_90a only,
// the 128x256 tile at small N.
// Measured: 4096^3 317,957 GFLOP/s = 81.4 % of cuBLAS tf32; 8192^3 334,773 GFLOP/s = 89.4 % of
// cuBLAS tf32 (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
void launch(const GemmProblem& p, cudaStream_t s) { hopper::launch<hopper::Tf32>(p, s, "cuda.12_wgmma_tf32"); }
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_IF("cuda.12_wgmma_tf32", "tf32", gemmpad::InType::F32,
                         "Hopper wgmma 64x256x8 tf32 from shared memory (10's kernel), B transposed first",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable);
