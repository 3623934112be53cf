// cuda.12_wgmma_tf32: 10's kernel on float32 operands read as tf32 (what fp32 users get from cuBLAS).
// Change from 10: the operand type, hopper::launch<Tf32>: m64n256k8, a k-tile of 32 floats = one
// 128-byte row; wgmma reads tf32 only K-major, so B is first transposed into the workspace.
// Limit: that transpose (an extra read and write of K x N floats and a launch per call; 13 avoids it);
// a stage carries half fp16's k, so barrier waits per flop double.
// Run: gemmpad bench gemm --kernels cuda.12_wgmma_tf32 --sizes 4096x4096x4096
// Profile: ncu -k regex:wgmma_kernel -c 1 gemmpad bench gemm --kernels cuda.12_wgmma_tf32 --sizes 4096x4096x4096
// Figure (H200 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 4096^3 334,486 GFLOP/s = 87.8 % of cuBLAS tf32
#include "wgmma.cuh"

namespace gemmpad::cuda {
namespace {
using This = hopper::Rung<hopper::Tf32, hopper::Steps>;
void launch(const GemmProblem& p, cudaStream_t s) { hopper::launch<hopper::Tf32>(p, s, "cuda.12_wgmma_tf32"); }
}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_RUNG("cuda.12_wgmma_tf32", "tf32", gemmpad::InType::F32,
                         "Hopper wgmma 64x256x8 tf32 from shared memory (10's kernel), B transposed first",
                         gemmpad::cuda::launch, gemmpad::cuda::hopper::unavailable, nullptr,
                           gemmpad::cuda::This::anatomy);
