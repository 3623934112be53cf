// The probe's trace build force-includes this into fused_mlp.cu and fused_mlp_ksplit.cu
// (nvcc -include native/tools/mlp_trace.cuh -DGEMMPAD_TRACE_TU=fused|ksplit; mlp_probe.sh
// STEPS=trace). It defines stamp(i), the globaltimer stamp per block and phase those kernels
// call (a no-op in every other build: fused_common.cuh), and <tu>_trace_read / <tu>_trace_clear
// for the probe's "trace" mode. The production build never compiles it.
#pragma once
#define GEMMPAD_MLP_TRACE 1

#include <cuda_runtime.h>

#include "../cuda/support/check.cuh"

#define GEMMPAD_TRACE_CAT2(a, b) a##b
#define GEMMPAD_TRACE_CAT(a, b) GEMMPAD_TRACE_CAT2(a, b)

namespace gemmpad::cuda {

static __device__ unsigned long long g_trace[64][8];  // [block][phase], this file's kernels only
__device__ __forceinline__ void stamp(int i) {
    if (threadIdx.x == 0 && blockIdx.x < 64) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        g_trace[blockIdx.x][i] = t;
    }
}
void GEMMPAD_TRACE_CAT(GEMMPAD_TRACE_TU, _trace_read)(unsigned long long* host) {  // [64][8]
    CUDA_CHECK(cudaMemcpyFromSymbol(host, g_trace, sizeof(g_trace)));
}
void GEMMPAD_TRACE_CAT(GEMMPAD_TRACE_TU, _trace_clear)() {
    static const unsigned long long zero[64][8] = {};
    CUDA_CHECK(cudaMemcpyToSymbol(g_trace, zero, sizeof(zero)));
}

}  // namespace gemmpad::cuda
