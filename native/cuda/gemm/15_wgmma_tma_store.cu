// cuda.15_tma_store_fp16 / _bf16: 14's persistent kernel with C stored through shared memory
// by the copy engine (TMA store) instead of from registers.
//
// What changed from 14: at the end of a tile each consumer warpgroup writes its 64 x 256 fp32
// results (bias and ReLU applied) 32 columns at a time into one of two 8 KB boxes in shared
// memory, swizzled as the tensor map of C expects, and one thread hands each box to the copy
// engine (cp.async.bulk.tensor ... .global.shared::cta), which writes it while the warpgroup fills
// the other box and then goes on to the next tile's wgmma. A box is refilled once the copy engine
// has read it (cp.async.bulk.wait_group.read), the only wait the stores cost.
// Why it should be faster: in 10-14 every lane stores float2s to 8 rows at once, and a tile's
// 128 KB of fp32 results leave the SM at the pace of those scattered stores while the tensor
// cores idle; the copy engine writes whole 128-byte rows, and the warpgroups wait for it only
// when a box comes round again.
// What holds it back: 4-5 % over 10/11 at 4096^3 in three H100 runs (8192^3: -3 to +8 %): both
// consumer warpgroups still fill the boxes themselves at the end of a tile while the producer,
// its ring full, waits: ~6 % of 4096^3's time (NOTES.md; a ping-pong schedule, one warpgroup
// storing while the other multiplies, would hide it), and each float2 written into a box takes 4
// shared-store wavefronts where 2 would do (a half-warp's 4 rows meet 4 of the 8 swizzled 16-byte
// chunks of a row; ncu, 2026-11-27); C needs 16-byte rows (N a multiple of 4)
// and a 16-byte aligned base, else the stores are 14's; the boxes take 32 KB, leaving 1 KB of
// the 227 KB; small problems store as 10-14 do.
// Measured: 4096^3 725,746 GFLOP/s = 97.2 % of cuBLAS bf16; 4096^3 707,631 GFLOP/s = 97.6 % of
// cuBLAS fp16 (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
void launch_fp16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp16, true, true>(p, s, "cuda.15_tma_store_fp16");
}
void launch_bf16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Bf16, true, true>(p, s, "cuda.15_tma_store_bf16");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_IF("cuda.15_tma_store_fp16", "fp16", gemmpad::InType::F16,
                         "14's persistent wgmma kernel storing C through shared memory with TMA",
                         gemmpad::cuda::launch_fp16, gemmpad::cuda::hopper::unavailable);
GEMMPAD_REGISTER_CUDA_IF("cuda.15_tma_store_bf16", "bf16", gemmpad::InType::BF16,
                         "14's persistent wgmma kernel storing C through shared memory with TMA",
                         gemmpad::cuda::launch_bf16, gemmpad::cuda::hopper::unavailable);
