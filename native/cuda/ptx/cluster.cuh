// Thread-block clusters (sm_90): the cluster barrier, ranks, and reads of another block's
// shared memory (distributed shared memory).
#pragma once

#include <cuda_runtime.h>

#include "smem.cuh"

#ifdef __CUDACC__  // device code: .cu files only
namespace gemmpad::cuda {

// Thread-block cluster barrier (sm_90), split into arrive and wait so that a
// block can signal and go on (or exit) without waiting. Every thread of the
// cluster arrives once per phase; .aligned: whole warps execute it together. The relaxed
// arrival publishes nothing, and so does not wait (as the release one does, MEMBAR.GPU in SASS)
// for the thread's global stores: enough where a block only waits for the others to be done
// reading its shared memory before it exits.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_arrive_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait_acquire() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

// The shared::cluster address (32-bit) of `p` (this block's shared memory) in block `rank`.
__device__ __forceinline__ unsigned cluster_map_u32(const void* p, unsigned rank) {
    unsigned out = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(smem_u32(p)), "r"(rank));
#endif
    return out;
}

// This block's rank in its cluster, and the cluster's size in blocks.
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
    return r;
}
__device__ __forceinline__ unsigned cluster_size() {
    unsigned n = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
#endif
    return n;
}

// Four floats (16-byte aligned) from a block's shared memory, at a cluster_map_u32 address. No
// memory clobber: a thread issues several before it needs the first (the cluster barrier before
// them orders them after the writes they read).
__device__ __forceinline__ float4 ld_cluster_v4(unsigned addr) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr));
#endif
    return v;
}

}  // namespace gemmpad::cuda
#endif  // __CUDACC__
