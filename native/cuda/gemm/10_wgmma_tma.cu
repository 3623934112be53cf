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
// Why it should be faster: Hopper's tensor cores reach their full rate only through wgmma
// (09's mma.sync tops out at 37-45 % of cuBLAS here); the SM's issue slots no longer move operands.
// Small problems: rows TMA cannot read in place (16-bit N = 100: 200-byte rows) are read by the
// producer warpgroup with 8- or 4-byte cp.async; split-K below one wave of tiles, a tile's slices
// one cluster adding up through distributed shared memory: one launch (wgmma.cuh, NOTES.md).
// What holds it back: Hopper and sm_90a only; the 128x256 tile and its 197 KB of shared memory
// cost ~8 us even for one tile, so the MLP's shapes stay near 50-80 % of cuBLAS.
// The kernel is shared with 11-16 (wgmma.cuh), which change the operand type or one step.
// Measured: 4096^3 677,760 GFLOP/s = 93.4 % of cuBLAS fp16; 4096x100x784 30,136 GFLOP/s = 69.7 % of
// cuBLAS fp16 (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
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
