// The CUDA kernel registry: the launch functions the rungs and dispatchers register, the
// anatomy hooks the lab view reads, and the registration macros.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <string>

#include "gemmpad/kernel.h"
#include "device.cuh"

namespace gemmpad::cuda {

using Launch = std::function<void(const GemmProblem&, cudaStream_t)>;
using CudaRegistry = Registry<Launch>;

// What a rung launches for one problem, as its anatomy hook says (the lab view's "why is this
// rung fast"): the exact __global__ instance and its launch shape. kernel_anatomy() reads the
// rest (registers, static shared memory, occupancy) from the compiled kernel.
struct Anatomy {
    const void* kernel = nullptr;     // the template instance the launch would use at this shape
    int bm = 0, bn = 0, bk = 0;       // block tile: rows and columns of C, k per step (0: no k tiles)
    int wm = 0, wn = 0;               // a warp's (warpgroup's, for wgmma) tile of C; 0: none
    int tm = 0, tn = 0;               // outputs a thread accumulates; 0: not meaningful (tensor cores)
    dim3 block, grid, cluster{1, 1, 1};
    size_t dynamic_smem = 0;          // bytes per block
    std::string note;                 // a word on the launch ("split-K 4 ways", "persistent")
};
using AnatomyFn = Anatomy (*)(const GemmProblem&);
// The anatomy hooks by kernel name (GEMMPAD_REGISTER_CUDA_RUNG fills it).
std::map<std::string, AnatomyFn>& anatomy_hooks();
// A rung's anatomy at problem p as a flat string/number map: the hook's fields plus the compiled
// kernel's registers per thread, static shared memory, its demangled name, blocks resident per
// SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor) and occupancy (resident warps / the SM's
// maximum). Throws Unavailable where the kernel has no hook or cannot run.
std::map<std::string, std::string> kernel_anatomy(const std::string& name, const GemmProblem& p);

// KernelInfo::unavailable of dispatcher `name`: "" where one of its routes can run here, else
// why none can (the first route's reason).
std::string dispatcher_unavailable(const char* name);

// The rung the last dispatcher launch ran (cuda.auto_*), "" before any. One host thread drives
// the GPU in gemmpad (as workspace()).
std::string& last_dispatched();

// Adds `fn` to anatomy_hooks() under `name` (nothing for nullptr); true, for the registration macro.
inline bool register_anatomy(const char* name, AnatomyFn fn) {
    if (fn) anatomy_hooks()[name] = fn;
    return true;
}

}  // namespace gemmpad::cuda

// GEMMPAD_REGISTER_CUDA_RUNG("cuda.01_naive", "fp32", gemmpad::InType::F32, "one line", launch, unavailable,
// rejects, anatomy): a rung. UNAVAILABLE() says why this device cannot run it at all ("" where it
// can; KernelInfo::unavailable), REJECTS(p) why it does not take problem p (KernelInfo::rejects),
// ANATOMY(p) what it launches for p (Anatomy); each may be nullptr: runs everywhere, takes every
// problem, has no anatomy (kernel_anatomy() says so).
#define GEMMPAD_REGISTER_CUDA_RUNG(NAME, PRECISION, IN_TYPE, SUMMARY, FN, UNAVAILABLE, REJECTS, ANATOMY)        \
    static const bool GEMMPAD_CONCAT(gemmpad_registered_, __LINE__) =                                         \
        ::gemmpad::cuda::CudaRegistry::instance().add(                                                        \
            ::gemmpad::KernelInfo{NAME, PRECISION, IN_TYPE, SUMMARY, ::gemmpad::repo_path(__FILE__), UNAVAILABLE, \
                                  REJECTS, {}},                                                               \
            FN) &&                                                                                            \
        ::gemmpad::cuda::register_anatomy(NAME, ANATOMY)
// A dispatcher (gemm/dispatch.cu): FN routes each problem to one of the rungs named after it
// (KernelInfo::routes, every rung it may run).
#define GEMMPAD_REGISTER_CUDA_AUTO(NAME, PRECISION, IN_TYPE, SUMMARY, FN, ...)                                \
    static const bool GEMMPAD_CONCAT(gemmpad_registered_, __LINE__) =                                        \
        ::gemmpad::cuda::CudaRegistry::instance().add(                                                       \
            ::gemmpad::KernelInfo{NAME, PRECISION, IN_TYPE, SUMMARY, ::gemmpad::repo_path(__FILE__),             \
                                  []() -> std::string { return ::gemmpad::cuda::dispatcher_unavailable(NAME); },   \
                                  nullptr, {__VA_ARGS__}},                                                   \
            FN)
