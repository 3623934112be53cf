// The probe's trace build (native/tools/mlp_probe.sh, STEPS=trace; -DGEMMPAD_MLP_TRACE):
// globaltimer stamps per block and phase, for the probe's "trace" mode. Included by
// native/cuda/mlp/fused_common.cuh only in that build; the production build never compiles it.
#pragma once

#include "../cuda/common.cuh"

namespace gemmpad::cuda {

// globaltimer stamps per block and phase (probe builds only, the probe's
// "trace" mode); each .cu file that includes this has its own table.
static __device__ unsigned long long g_trace[64][8];
__device__ __forceinline__ void stamp(int i) {
    if (threadIdx.x == 0 && blockIdx.x < 64) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        g_trace[blockIdx.x][i] = t;
    }
}
static inline void trace_read(unsigned long long* host) {  // [64][8]
    CUDA_CHECK(cudaMemcpyFromSymbol(host, g_trace, sizeof(g_trace)));
}
static inline void trace_clear() {
    static const unsigned long long zero[64][8] = {};
    CUDA_CHECK(cudaMemcpyToSymbol(g_trace, zero, sizeof(zero)));
}

}  // namespace gemmpad::cuda
