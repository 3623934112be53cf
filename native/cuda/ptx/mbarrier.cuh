// mbarriers (sm_90): shared-memory barriers that also count the bytes the copy engine delivers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cluster.cuh"
#include "smem.cuh"

#ifdef __CUDACC__  // device code: .cu files only
namespace gemmpad::cuda {

// ---- sm_90 mbarriers: shared-memory barriers that also count the bytes the
// SM's copy engine delivers (cp.async.bulk, TMA). On older architectures these
// compile to nothing; callers check the device before taking such a path.
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
#endif
}
// After a block's mbar_init()s, before any copy may signal them.
__device__ __forceinline__ void mbar_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// One arrival that also announces `bytes` still to come from copies.
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
#endif
}
// Returns once the phase with this parity has completed. kCluster: acquire at cluster
// scope, for data other blocks of the cluster wrote into this block (st.async).
template <bool kCluster = false>
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (kCluster) {
        asm volatile(
            "{\n"
            ".reg .pred done;\n"
            "WAIT_%=:\n"
            "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
            "@!done bra WAIT_%=;\n"
            "}\n" ::"r"(smem_u32(bar)),
            "r"(parity)
            : "memory");
    } else {
        asm volatile(
            "{\n"
            ".reg .pred done;\n"
            "WAIT_%=:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
            "@!done bra WAIT_%=;\n"
            "}\n" ::"r"(smem_u32(bar)),
            "r"(parity)
            : "memory");
    }
#endif
}

// One arrival on the mbarrier at `bar`'s offset in block `rank` of the cluster. Release at CTA
// scope, as CUTLASS's cluster barriers arrive: at cluster scope it becomes a memory barrier that
// waits for all of the thread's outstanding accesses (cuda.16 ran at 59 % of its speed so).
__device__ __forceinline__ void mbar_arrive_remote(uint64_t* bar, unsigned rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_map_u32(bar, rank)) : "memory");
#endif
}

}  // namespace gemmpad::cuda
#endif  // __CUDACC__
