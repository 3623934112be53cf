// cuda.10_wgmma_fp16: Hopper's own tensor-core path. wgmma (warpgroup MMA)
// fed by the TMA copy engine through an mbarrier pipeline, with one warpgroup
// that only loads and two that only multiply.
//
// What changed from 09 (mma.sync + ldmatrix + cp.async):
//  * wgmma.mma_async: a warpgroup (4 warps) issues one 64x256x16 product that
//    reads BOTH operands straight from shared memory through 64-bit matrix
//    descriptors; 09 first copied every fragment into registers with ldmatrix
//    and issued 32 small m16n8k16 products per warp and k step.
//  * TMA (cp.async.bulk.tensor): ONE thread asks the copy engine for a whole
//    tile (A: 128x64 halves, B: 64x256 in four 64x64 boxes), described by a
//    CUtensorMap made on the host. The engine zero-fills what lies outside the
//    matrix and writes the 128-byte swizzle that wgmma reads without bank
//    conflicts; 09 spent 256 threads x 6 cp.async per stage on that.
//  * Warp specialisation: warpgroup 0 produces (one thread issues the copies),
//    warpgroups 1 and 2 consume, each owning 64 rows of the 128x256 block tile.
//    They meet at two mbarriers per stage, `full` (the bytes have landed) and
//    `empty` (each consumer warp is done reading); 4 stages of 48 KB in flight.
//  * One wgmma batch stays in flight: a consumer issues stage k's products, then
//    waits only for stage k-1's and releases that stage.
// Why it should be faster: Hopper's tensor cores reach their full rate only
// through wgmma (09's mma.sync tops out at ~45 % of cuBLAS here), and the
// SM's issue slots no longer go to operand movement.
// What holds it back: compute capability 9.0 and an sm_90a build only (elsewhere the registry
// lists it as unavailable); TMA reads 16-byte-aligned rows, so an operand with K or N not a
// multiple of 8 (the MLP's N = 100) is first copied with padded rows; the 128x256 tile wastes
// most of the tensor cores' work at N = 100 (split-K, as in 09, fills the SMs).
// The kernel is shared with 11 and 12 (wgmma.cuh), which change only the operand type.
// Measured: 4096^3 694,866 GFLOP/s = 88.4 % of cuBLAS fp16; 8192^3 668,796 GFLOP/s = 84.5 % of cuBLAS fp16
// (H200; assets/benchmarks/h200/bench-gemm.json, `gemmpad bench report`).
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
void launch(const GemmProblem& p, cudaStream_t s) { hopper::launch<hopper::Fp16>(p, s, "cuda.10_wgmma_fp16"); }
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_IF("cuda.10_wgmma_fp16", "fp16", gemmpad::InType::F16,
                         "Hopper wgmma 64x256x16 from shared memory, TMA loads, 4-stage mbarrier pipeline, "
                         "producer/consumer warpgroups",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable);
