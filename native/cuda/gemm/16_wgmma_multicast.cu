// cuda.16_multicast_fp16 / _bf16: 15 with pairs of blocks in a thread-block cluster that load
// each B tile once from L2 and deliver it to both (TMA multicast).
//
// What changed from 15: blocks 2q and 2q + 1 form a cluster and take the two tiles of a pair,
// one above the other (same columns of C, so the same B tiles). Per stage each block asks the
// copy engine for its own A tile and for half of the B tile's four 64-column boxes, multicast
// into both blocks' shared memory at the same offset, signalling both blocks' `full` barriers. A
// stage may be refilled only when both blocks' consumers are done with it, so each consumer
// warp arrives on its own `empty` barrier and on its peer's (mbarrier.arrive on a
// shared::cluster address); both blocks meet at a cluster barrier after setting up their
// barriers and before leaving.
// Why it should be faster: each 128x256 tile reads 16 KB of A and 32 KB of B from L2 per stage;
// sharing B cuts that to 32 KB per block (a third less L2 traffic and TMA work), and the pair's
// B boxes arrive from one L2 read. cuBLAS's own Hopper kernels pair blocks the same way.
// What holds it back: here it buys nothing over 15 (within 1 % at 4096^3 in two runs, -2 to +6 % at
// 8192^3): L2 was not the limit (ncu: 63 % of L2 throughput at 4096^3 in 14). A pair advances at
// the pace of its slower block; only where TMA reads both operands in place and the tiles fill the
// SMs, else it runs as 15; an odd number of tile rows leaves the last pair half idle.
// Measured: 4096^3 724,339 GFLOP/s = 96.7 % of cuBLAS bf16; 4096^3 706,700 GFLOP/s = 97.6 % of
// cuBLAS fp16 (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
void launch_fp16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp16, true, true, true>(p, s, "cuda.16_multicast_fp16");
}
void launch_bf16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Bf16, true, true, true>(p, s, "cuda.16_multicast_bf16");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_IF("cuda.16_multicast_fp16", "fp16", gemmpad::InType::F16,
                         "15 with block pairs in a cluster sharing B tiles by TMA multicast",
                         gemmpad::cuda::launch_fp16, gemmpad::cuda::hopper::unavailable);
GEMMPAD_REGISTER_CUDA_IF("cuda.16_multicast_bf16", "bf16", gemmpad::InType::BF16,
                         "15 with block pairs in a cluster sharing B tiles by TMA multicast",
                         gemmpad::cuda::launch_bf16, gemmpad::cuda::hopper::unavailable);
