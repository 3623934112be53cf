// Warpgroup MMA (wgmma, sm_90a): shared-memory matrix descriptors and the fence / commit / wait
// that order a warpgroup's asynchronous products. The products themselves are in gemm/wgmma.cuh,
// one per operand type.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#ifdef __CUDACC__  // device code: .cu files only
namespace gemmpad::cuda {

// ---- wgmma (sm_90a). The device code exists only in the sm_90a pass of the compiler;
// other passes compile empty kernels that the host never launches (gemm/wgmma.cuh: unavailable()).
// Shared-memory matrix descriptor: start address, leading and stride byte offsets (in
// 16-byte units), 128-byte swizzle (layout type 1, bits 62-63).
__device__ __forceinline__ uint64_t smem_desc(unsigned addr, unsigned lbo_bytes, unsigned sbo_bytes) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo_bytes >> 4) << 16) |
           ((uint64_t)(sbo_bytes >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

}  // namespace gemmpad::cuda
#endif  // __CUDACC__
