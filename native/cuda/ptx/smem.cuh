// Shared memory as PTX addresses it, the proxy fence between its writers and the async copy
// engine, and named barriers.
#pragma once

#include <cuda_runtime.h>

#ifdef __CUDACC__  // device code: .cu files only
namespace gemmpad::cuda {

// A shared-memory address as the 32-bit offset PTX's shared-state-space operands take.
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Orders this thread's completed shared-memory writes (cp.async, st.shared: the generic
// proxy) before later reads by the async proxy (wgmma's operands, TMA stores) of any thread
// that synchronises with it afterwards.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Named barrier `id` (1..15; 0 is __syncthreads) for `count` threads (whole warps).
__device__ __forceinline__ void named_barrier_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

}  // namespace gemmpad::cuda
#endif  // __CUDACC__
