// cuda.14_persistent_fp16 / _bf16: 10's and 11's kernel on a persistent grid: one block per SM
// that walks the tiles, so the copy engine loads the next tile while the current one is stored.
//
// What changed from 10/11: the grid has min(tiles, SMs) blocks instead of one per tile; block
// x takes tiles x, x + SMs, ... in the same grouped raster, and the stage counters and mbarrier
// phases run on across its tiles. At the end of a tile the consumer warpgroups release their
// last stage, so the producer (already STAGES stages ahead) streams the next tile's A and B
// while the consumers write this tile's 128x256 fp32 results from registers.
// Why it should be faster: with a block per tile, an SM idles at every tile boundary: the
// block stores its results and exits, the next one starts, initialises its barriers and waits a
// memory latency for its first stage before the tensor cores run again. Kept resident, a block
// hides both behind the pipeline, which matters more with an fp32 C: 128 KB per tile, twice a
// 16-bit C's bytes.
// What holds it back: 1-2 % over 10/11 at 4096^3 in two H100 runs (8192^3: -12 to +5 %, the spread
// between runs): the consumers still store from registers, 8 rows per float2 instruction, while the
// tensor cores idle (15 stages the stores); 4096^3 is 3.9 waves of tiles, so the last is not full.
// Small problems (fewer tiles than SMs) run exactly as 10 and 11 (split-K over a cluster).
// Measured: 4096^3 705,771 GFLOP/s = 94.5 % of cuBLAS bf16; 4096^3 687,855 GFLOP/s = 95.0 % of
// cuBLAS fp16 (H100, 2026-11-27; assets/benchmarks/h100/bench-gemm.json, `gemmpad bench report`).
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
void launch_fp16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Fp16, true>(p, s, "cuda.14_persistent_fp16");
}
void launch_bf16(const GemmProblem& p, cudaStream_t s) {
    hopper::launch<hopper::Bf16, true>(p, s, "cuda.14_persistent_bf16");
}
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_IF("cuda.14_persistent_fp16", "fp16", gemmpad::InType::F16,
                         "10's wgmma kernel on a persistent grid (a block per SM walks the tiles)",
                         gemmpad::cuda::launch_fp16, gemmpad::cuda::hopper::unavailable);
GEMMPAD_REGISTER_CUDA_IF("cuda.14_persistent_bf16", "bf16", gemmpad::InType::BF16,
                         "11's wgmma kernel on a persistent grid (a block per SM walks the tiles)",
                         gemmpad::cuda::launch_bf16, gemmpad::cuda::hopper::unavailable);
