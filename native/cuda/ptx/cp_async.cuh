// cp.async (sm_80): global -> shared copies without a register, in commit groups.
#pragma once

#include <cuda_runtime.h>

#include "smem.cuh"

#ifdef __CUDACC__  // device code: .cu files only
namespace gemmpad::cuda {

// ---- cp.async (sm_80): 16 bytes global -> shared without a register; src_bytes = 0
// writes 16 zero bytes instead (an out-of-range chunk). Groups of copies are
// committed, then waited for until at most N groups are still in flight.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes = 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes));
}
// The same for a W-byte chunk (4 or 8: through L1; 16: as cp_async16) at shared address `dst`,
// for operands whose rows are only 4- or 8-byte aligned; the bytes past src_bytes are zeros.
template <int W>
__device__ __forceinline__ void cp_async_zfill(unsigned dst, const void* src, int src_bytes) {
    static_assert(W == 4 || W == 8 || W == 16, "cp.async copies 4, 8 or 16 bytes");
    if constexpr (W == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(W), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace gemmpad::cuda
#endif  // __CUDACC__
