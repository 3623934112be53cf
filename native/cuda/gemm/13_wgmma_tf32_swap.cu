// cuda.13_wgmma_tf32_swap: 12 without the transpose of B: the block computes a tile of C^T =
// B^T A^T, with B^T taken through registers.
//
// What changed from 12: wgmma multiplies A (64 x k, shared memory or registers) by B (k x n,
// shared memory), and reads tf32 from shared memory only K-major. 12 therefore transposed B
// in global memory each call. Here the roles swap: wgmma's A is B^T, 64 columns of B per
// consumer warpgroup, loaded from the row-major TMA tile into the register fragment (4 x 32-bit
// shared loads per k8 step, unswizzled by hand); wgmma's B is A's tile, which is K-major as it
// lies in memory. The block tile becomes 256 rows of C x 128 columns; the accumulators hold C^T,
// so the epilogue writes each lane's values down columns (32-byte sectors per 8 lanes).
// Why it should be faster: no transpose kernel (a read and write of K x N floats) and no extra
// launch: 1.17x 12 at 4096^3, 1.02x at 8192^3 (same run); 128-column tiles suit the MLP's
// N = 100 better than 256, and TMA reads B in place there (100 floats = 400-byte rows): 1.40x 12
// at 4096x100x784, the best tensor-core rung on the MLP's shapes.
// What holds it back: the register fragments must stay unchanged until their wgmma batch has
// read them, so each warpgroup waits for its batch before loading the next stage's (the other
// warpgroup's batch fills that gap); 2-way bank conflicts on the fragment loads; scalar stores
// down the columns of C; and as 10: Hopper and sm_90a only.
// Measured: 4096^3 369,332 GFLOP/s = 94.4 % of cuBLAS tf32; 8192^3 347,614 GFLOP/s = 93.0 % of
// cuBLAS tf32 (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
void launch(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Tf32Swap>(p, s, "cuda.13_wgmma_tf32_swap");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_IF("cuda.13_wgmma_tf32_swap", "tf32", gemmpad::InType::F32,
                         "Hopper wgmma tf32 on C^T = B^T A^T: B^T from registers, no transpose of B",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable);
