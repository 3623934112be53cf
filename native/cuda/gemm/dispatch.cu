// The dispatchers cuda.auto_fp32, _tf32, _fp16, _bf16 and _fp8: not rungs, but the shape routing
// that gemm()'s default and the layer-by-layer MLP use. Each rung runs only its own kernel and says
// `unavailable: <why>` where its step does not apply (KernelInfo::rejects); a dispatcher picks, for
// each problem, the first rung of its preference list for that shape that takes it, launches it
// and remembers its name (last_dispatched(), Python: gemmpad.runtime.registry.dispatched()).
//
// The routing, from the committed H200 figures (assets/benchmarks/h200/bench-gemm.json, 2026-11-29)
// and the choice rungs 17 and 19 used to make inside themselves:
// - "small": fewer 128 x 256 (tf32: 256 x 128) tiles than SMs, so the big-tile kernels cannot fill
//   the GPU without splitting K. There 17 (64 x 64 tiles) wins: 4096x100x784 fp16 49.3 TFLOP/s vs
//   10's 34.2, tf32 43.7 vs 13's 36.2; and 19 beats 07 in fp32: 20.0 vs 18.9 (256x100x784: 3.65 vs 3.35).
// - otherwise the big tiles: 16 (728.0 TFLOP/s fp16 at 4096^3; 15 727.7, 14 717.0, 10 705.0), 15, 14
//   and 13 for tf32 (2026-11-30 at 4096^3: 392.7-393.1, 384.8-385.0, 382.3-382.6; 12 336.3), 07 for fp32
//   (46.4; 19's small tiles were never measured there); fp8 20 first (2026-11-30 A/B, TFLOP/s at 4096^3
//   1,290-1,291 against 15's 1,173-1,175, at 8192^3 1,436-1,438 against 1,379-1,380), then 16-bit's
//   order (16 1,144, 15 1,150, 14 1,133, 18 1,094 at 4096^3).
// After those, the rungs before them in the ladder, for the problems the later ones reject (14-16
// need tiles that fill the SMs, aligned rows) and for GPUs without wgmma (09 on Ampere and Ada).
#include <vector>

#include "../support/registry.cuh"

namespace gemmpad::cuda::dispatch {
namespace {

// Whether problem p has fewer tiles of tm x tn than the GPU has SMs.
bool small(const GemmProblem& p, int tm, int tn) {
    return (long long)ceil_div(p.M, tm) * ceil_div(p.N, tn) < device_props().multiProcessorCount;
}

// Runs the first rung of `prefer` that is available here and takes p; Unavailable naming every
// rung's reason when none does.
void run(const char* self, const std::vector<const char*>& prefer, const GemmProblem& p, cudaStream_t stream) {
    std::string reasons;
    for (const char* name : prefer) {
        const auto& rung = CudaRegistry::instance().get(name);
        std::string why = rung.info.unavailable ? rung.info.unavailable() : "";
        if (why.empty() && rung.info.rejects) why = rung.info.rejects(p);
        if (why.empty()) {
            last_dispatched() = name;
            return rung.launch(p, stream);
        }
        reasons += std::string(reasons.empty() ? "" : "; ") + name + ": " + why;
    }
    throw Unavailable(self, "no rung takes this problem (" + reasons + ")");
}

void auto_fp32(const GemmProblem& p, cudaStream_t s) {
    if (small(p, 128, 256)) return run("cuda.auto_fp32", {"cuda.19_simt_ring", "cuda.07_warptile"}, p, s);
    run("cuda.auto_fp32", {"cuda.07_warptile"}, p, s);
}
void auto_tf32(const GemmProblem& p, cudaStream_t s) {
    if (small(p, 256, 128))
        return run("cuda.auto_tf32", {"cuda.17_small_tiles_tf32", "cuda.13_wgmma_tf32_swap", "cuda.09_mma_tf32"}, p, s);
    run("cuda.auto_tf32",
        {"cuda.16_multicast_tf32", "cuda.15_tma_store_tf32", "cuda.14_persistent_tf32", "cuda.13_wgmma_tf32_swap",
         "cuda.09_mma_tf32"},
        p, s);
}
void auto_fp16(const GemmProblem& p, cudaStream_t s) {
    if (small(p, 128, 256))
        return run("cuda.auto_fp16", {"cuda.17_small_tiles_fp16", "cuda.10_wgmma_fp16", "cuda.09_mma_fp16"}, p, s);
    run("cuda.auto_fp16",
        {"cuda.16_multicast_fp16", "cuda.15_tma_store_fp16", "cuda.14_persistent_fp16", "cuda.10_wgmma_fp16",
         "cuda.09_mma_fp16"},
        p, s);
}
void auto_bf16(const GemmProblem& p, cudaStream_t s) {
    if (small(p, 128, 256))
        return run("cuda.auto_bf16", {"cuda.17_small_tiles_bf16", "cuda.11_wgmma_bf16"}, p, s);
    run("cuda.auto_bf16",
        {"cuda.16_multicast_bf16", "cuda.15_tma_store_bf16", "cuda.14_persistent_bf16", "cuda.11_wgmma_bf16"}, p, s);
}
void auto_fp8(const GemmProblem& p, cudaStream_t s) {
    run("cuda.auto_fp8",
        {"cuda.20_fp8_swap", "cuda.16_multicast_fp8", "cuda.15_tma_store_fp8", "cuda.14_persistent_fp8",
         "cuda.18_wgmma_fp8"},
        p, s);
}

}  // namespace
}  // namespace gemmpad::cuda::dispatch

GEMMPAD_REGISTER_CUDA_AUTO("cuda.auto_fp32", "fp32", gemmpad::InType::F32,
                           "the fastest fp32 rung for the shape: 19 where 07's tiles cannot fill the GPU, else 07",
                           gemmpad::cuda::dispatch::auto_fp32, "cuda.19_simt_ring", "cuda.07_warptile");
GEMMPAD_REGISTER_CUDA_AUTO("cuda.auto_tf32", "tf32", gemmpad::InType::F32,
                           "the fastest tf32 rung for the shape: 17 for small problems, else 16 (15, 14, 13, 09)",
                           gemmpad::cuda::dispatch::auto_tf32, "cuda.17_small_tiles_tf32", "cuda.16_multicast_tf32",
                           "cuda.15_tma_store_tf32", "cuda.14_persistent_tf32", "cuda.13_wgmma_tf32_swap",
                           "cuda.09_mma_tf32");
GEMMPAD_REGISTER_CUDA_AUTO("cuda.auto_fp16", "fp16", gemmpad::InType::F16,
                           "the fastest fp16 rung for the shape: 17 for small problems, else 16 (15, 14, 10, 09)",
                           gemmpad::cuda::dispatch::auto_fp16, "cuda.17_small_tiles_fp16", "cuda.16_multicast_fp16",
                           "cuda.15_tma_store_fp16", "cuda.14_persistent_fp16", "cuda.10_wgmma_fp16",
                           "cuda.09_mma_fp16");
GEMMPAD_REGISTER_CUDA_AUTO("cuda.auto_bf16", "bf16", gemmpad::InType::BF16,
                           "the fastest bf16 rung for the shape: 17 for small problems, else 16 (15, 14, 11)",
                           gemmpad::cuda::dispatch::auto_bf16, "cuda.17_small_tiles_bf16", "cuda.16_multicast_bf16",
                           "cuda.15_tma_store_bf16", "cuda.14_persistent_bf16", "cuda.11_wgmma_bf16");
GEMMPAD_REGISTER_CUDA_AUTO("cuda.auto_fp8", "fp8", gemmpad::InType::F8E4M3,
                           "the fastest fp8 rung for the shape: 20 where its tiles outnumber the SMs (16, 15, 14), else 18",
                           gemmpad::cuda::dispatch::auto_fp8, "cuda.20_fp8_swap", "cuda.16_multicast_fp8",
                           "cuda.15_tma_store_fp8", "cuda.14_persistent_fp8", "cuda.18_wgmma_fp8");
